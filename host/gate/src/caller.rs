//! Who calls, and what their profile gives them. An authenticated HTTP caller is a [`Caller`]
//! (from a verified token's claims); `[[callers]]` profiles, matched in order by claims, say which
//! tools the caller sees and may call, with a mode and rules that join the host's (deny still wins;
//! a mode can only tighten) and limits that can only lower. With profiles configured, a caller none
//! matches gets nothing. Pure: matching and compiling, no tokens, no I/O.

use std::fmt;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::gate::{CallerRules, PermissionConfig, RuleError};

/// An authenticated caller: what the verified token says about them. The token itself is kept
/// only as an opaque [`Secret`](crate::network::Secret) to exchange for a destination's token: it
/// is never serialized, printed or compared (two tokens of one identity are the same caller).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Caller {
    /// The token's issuer (`iss`), or `toolhost` for the static bearer token.
    pub issuer: String,
    /// The subject (`sub`).
    pub subject: String,
    /// The OAuth client (`client_id`, else `azp`), when the token names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Granted scopes (`scope`, space-separated, or `scp`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Groups (`groups`), when the issuer puts them in tokens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The bearer token the caller presented, for token exchange only.
    #[serde(skip)]
    pub token: Option<crate::network::Secret>,
}

impl PartialEq for Caller {
    fn eq(&self, other: &Self) -> bool {
        self.issuer == other.issuer
            && self.subject == other.subject
            && self.client_id == other.client_id
            && self.scopes == other.scopes
            && self.groups == other.groups
    }
}

impl Eq for Caller {}

impl Caller {
    /// The caller of the static bearer token (`server.token-env`).
    pub fn static_token() -> Self {
        Self {
            issuer: "toolhost".to_owned(),
            subject: "static-token".to_owned(),
            ..Self::default()
        }
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sub={:?} iss={:?}", self.subject, self.issuer)?;
        if let Some(c) = &self.client_id {
            write!(f, " client_id={c:?}")?;
        }
        if !self.scopes.is_empty() {
            write!(f, " scopes={:?}", self.scopes.join(" "))?;
        }
        Ok(())
    }
}

/// `match = { ... }` of a `[[callers]]` entry: every claim given must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Match {
    /// The subject, exactly.
    pub sub: Option<String>,
    /// The issuer, exactly.
    pub iss: Option<String>,
    /// The client id, exactly.
    pub client_id: Option<String>,
    /// A scope the token must carry.
    pub scope: Option<String>,
    /// A group the caller must be in.
    pub group: Option<String>,
}

impl Match {
    fn matches(&self, c: &Caller) -> bool {
        self.sub.as_ref().is_none_or(|s| *s == c.subject)
            && self.iss.as_ref().is_none_or(|s| *s == c.issuer)
            && self
                .client_id
                .as_ref()
                .is_none_or(|s| c.client_id.as_ref() == Some(s))
            && self.scope.as_ref().is_none_or(|s| c.scopes.contains(s))
            && self.group.as_ref().is_none_or(|s| c.groups.contains(s))
    }
}

/// One `[[callers]]` entry as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawProfile {
    /// A name for messages and the audit log; default `callers[N]`.
    pub name: Option<String>,
    /// Which callers it is for. Required: an entry for everyone must say `match = {}`.
    #[serde(rename = "match")]
    pub matcher: Match,
    /// Tool names (globs) the caller sees and may call; all when absent.
    pub tools: Option<Vec<String>>,
    /// A mode, which can only tighten the plugin's.
    pub mode: Option<crate::gate::Mode>,
    /// Rules for calls that run without asking (still subject to the host's deny and ask rules).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules for calls that need approval.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Rules for calls that never run.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Per-call limits, lowering the plugin's (never raising them).
    pub timeout_ms: Option<u64>,
    /// Fuel per call, at most.
    pub fuel: Option<u64>,
    /// Guest memory per call, in MiB, at most.
    pub memory_mb: Option<u64>,
    /// `"operator"`: the caller may use the console (answer approvals, cancel calls, read the
    /// whole audit log). Absent: an ordinary caller, who sees nothing of it.
    pub role: Option<Role>,
    /// The caller's fair share: calls per window, calls at once, fuel per window, all tools together.
    pub quota: Option<crate::quota::RawQuota>,
    /// The profile's own credentials, by name, for plugin secrets that say `from-caller = "NAME"`.
    #[serde(default)]
    pub secrets: std::collections::BTreeMap<String, RawProfileSecret>,
}

/// `secrets.NAME = { from-env = "..." }` (or `from-file`) of a `[[callers]]` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawProfileSecret {
    /// Read the value from this variable of the daemon's environment.
    pub from_env: Option<String>,
    /// Read the value from this file (relative to the config file), one trailing newline removed.
    pub from_file: Option<std::path::PathBuf>,
}

/// What a profile's caller may do beyond calling tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Runs the daemon: the console and its API.
    Operator,
}

/// A profile, compiled.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Its name.
    pub name: String,
    matcher: Match,
    tools: Option<GlobSet>,
    /// Its mode and rules.
    pub rules: CallerRules,
    /// Its cap on a call's wall-clock time, in ms.
    pub timeout_ms: Option<u64>,
    /// Its cap on a call's fuel.
    pub fuel: Option<u64>,
    /// Its cap on a call's guest memory, in MiB.
    pub memory_mb: Option<u64>,
    /// Its role, if any.
    pub role: Option<Role>,
    /// Its callers' share, each caller its own.
    pub quota: Option<crate::quota::Quota>,
    /// Its own credentials by name (read by the config, which does the I/O), never printed.
    pub secrets: std::collections::BTreeMap<String, crate::network::Secret>,
}

impl Profile {
    /// How far this profile lets one call go.
    pub fn caps(&self) -> crate::grants::Caps {
        crate::grants::Caps {
            timeout: self.timeout_ms.map(std::time::Duration::from_millis),
            fuel: self.fuel,
            memory_bytes: self.memory_mb.map(|mb| (mb as usize) << 20),
        }
    }

    /// Whether the caller may see and call `tool`.
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|g| g.is_match(tool))
    }
}

/// Why a profile was refused at config load.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// A tool pattern is not a glob.
    #[error("tools[{index}] {pattern:?}: {message}")]
    Tools {
        /// Its index.
        index: usize,
        /// The pattern.
        pattern: String,
        /// The glob parser's message.
        message: String,
    },
    /// A rule does not parse.
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// A limit is zero.
    #[error("`{0}` must be greater than 0")]
    Zero(&'static str),
    /// The quota is wrong.
    #[error("quota.{0}: {1}")]
    Quota(&'static str, String),
}

/// Every profile, in the order written: the first that matches a caller applies.
#[derive(Debug, Clone, Default)]
pub struct Profiles {
    list: Vec<Profile>,
}

/// Why a caller gets nothing: the one sentence the HTTP door (403) and the pipeline (a recorded
/// `denied`) both give, since both ask [`Profiles::access`].
pub const NO_PROFILE: &str = "no [[callers]] profile matches this caller; ask the operator for one";

/// What a caller gets.
#[derive(Debug, Clone, Copy)]
pub enum Access<'a> {
    /// No profiles are configured: the host's policy, unchanged.
    Unprofiled,
    /// This profile.
    Profile(&'a Profile),
    /// Profiles are configured and none matches: nothing.
    Denied,
}

impl Profiles {
    /// Compile the entries; `key` names them in errors (`callers[0]`).
    pub fn new(raw: &[RawProfile]) -> Result<Self, (usize, ProfileError)> {
        let list = raw
            .iter()
            .enumerate()
            .map(|(i, p)| compile(i, p).map_err(|e| (i, e)))
            .collect::<Result<_, _>>()?;
        Ok(Self { list })
    }

    /// Give the profile at `index` its credentials (the config reads them).
    pub fn set_secrets(
        &mut self,
        index: usize,
        secrets: std::collections::BTreeMap<String, crate::network::Secret>,
    ) {
        if let Some(p) = self.list.get_mut(index) {
            p.secrets = secrets;
        }
    }

    /// Whether any profile is configured.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Whether `caller` is an operator: with no profiles configured every authenticated caller is
    /// (HTTP is theirs alone); otherwise only one whose profile says `role = "operator"`.
    pub fn is_operator(&self, caller: &Caller) -> bool {
        match self.access(caller) {
            Access::Unprofiled => true,
            Access::Profile(p) => p.role == Some(Role::Operator),
            Access::Denied => false,
        }
    }

    /// What `caller` gets.
    pub fn access(&self, caller: &Caller) -> Access<'_> {
        if self.list.is_empty() {
            return Access::Unprofiled;
        }
        self.list
            .iter()
            .find(|p| p.matcher.matches(caller))
            .map_or(Access::Denied, Access::Profile)
    }
}

fn compile(index: usize, p: &RawProfile) -> Result<Profile, ProfileError> {
    let tools = match &p.tools {
        None => None,
        Some(patterns) => {
            let mut set = GlobSetBuilder::new();
            for (i, pattern) in patterns.iter().enumerate() {
                let glob = Glob::new(pattern).map_err(|e| ProfileError::Tools {
                    index: i,
                    pattern: pattern.clone(),
                    message: e.kind().to_string(),
                })?;
                set.add(glob);
            }
            Some(set.build().map_err(|e| ProfileError::Tools {
                index: 0,
                pattern: String::new(),
                message: e.to_string(),
            })?)
        }
    };
    if p.timeout_ms == Some(0) {
        return Err(ProfileError::Zero("timeout-ms"));
    }
    if p.fuel == Some(0) {
        return Err(ProfileError::Zero("fuel"));
    }
    if p.memory_mb == Some(0) {
        return Err(ProfileError::Zero("memory-mb"));
    }
    Ok(Profile {
        name: p
            .name
            .clone()
            .unwrap_or_else(|| format!("callers[{index}]")),
        matcher: p.matcher.clone(),
        tools,
        rules: CallerRules::new(&PermissionConfig {
            mode: p.mode,
            allow: p.allow.clone(),
            ask: p.ask.clone(),
            deny: p.deny.clone(),
        })?,
        role: p.role,
        quota: p
            .quota
            .as_ref()
            .map(crate::quota::Quota::new)
            .transpose()
            .map_err(|(field, why)| ProfileError::Quota(field, why))?,
        timeout_ms: p.timeout_ms,
        fuel: p.fuel,
        memory_mb: p.memory_mb.map(|mb| mb.min(4096)),
        secrets: std::collections::BTreeMap::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profiles(text: &str) -> Profiles {
        #[derive(Deserialize)]
        struct File {
            callers: Vec<RawProfile>,
        }
        let file: File = toml::from_str(text).unwrap();
        Profiles::new(&file.callers).unwrap()
    }

    fn caller(sub: &str, scopes: &[&str]) -> Caller {
        Caller {
            issuer: "https://idp".into(),
            subject: sub.into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            ..Caller::default()
        }
    }

    #[test]
    fn the_first_matching_profile_applies_and_no_match_gets_nothing() {
        let p = profiles(
            r#"
            [[callers]]
            name = "ci"
            match = { scope = "tools.all", sub = "ci-bot" }
            [[callers]]
            name = "readers"
            match = { scope = "tools.read" }
            tools = ["read_*", "grep"]
            mode = "plan"
            timeout-ms = 500
            memory-mb = 8
            deny = ["read_file(./secret/**)"]
            "#,
        );
        let Access::Profile(ci) = p.access(&caller("ci-bot", &["tools.all", "tools.read"])) else {
            panic!("ci-bot has a profile");
        };
        assert_eq!(ci.name, "ci");
        assert!(ci.allows_tool("write_file"));
        let Access::Profile(r) = p.access(&caller("alice", &["tools.read"])) else {
            panic!("alice reads");
        };
        assert!(
            r.allows_tool("read_file") && r.allows_tool("grep") && !r.allows_tool("write_file")
        );
        assert!(r.rules.has_path_rules());
        // Limits only go down.
        let limits = crate::grants::Limits::default().capped(r.caps());
        assert_eq!(limits.timeout, std::time::Duration::from_millis(500));
        assert_eq!(limits.memory_bytes, 8 << 20);
        assert_eq!(limits.fuel, crate::grants::Limits::default().fuel);
        let small = crate::grants::Limits {
            memory_bytes: 1 << 20,
            ..crate::grants::Limits::default()
        };
        assert_eq!(small.capped(r.caps()).memory_bytes, 1 << 20);
        // ci-bot without the scope is not the CI profile, and reads nothing either.
        assert!(matches!(p.access(&caller("ci-bot", &[])), Access::Denied));
        assert!(matches!(
            Profiles::default().access(&caller("x", &[])),
            Access::Unprofiled
        ));
    }

    #[test]
    fn bad_profiles_are_refused() {
        #[derive(Deserialize)]
        struct File {
            callers: Vec<RawProfile>,
        }
        for (text, needle) in [
            ("[[callers]]\nmatch = {}\ntools = [\"[\"]\n", "tools[0]"),
            ("[[callers]]\nmatch = {}\ndeny = [\"(\"]\n", "("),
            ("[[callers]]\nmatch = {}\nfuel = 0\n", "fuel"),
        ] {
            let file: File = toml::from_str(text).unwrap();
            let (i, e) = Profiles::new(&file.callers).unwrap_err();
            assert_eq!(i, 0);
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
        let e = toml::from_str::<File>("[[callers]]\nmatch = { subject = \"x\" }\n")
            .err()
            .unwrap();
        assert!(e.to_string().contains("unknown field"), "{e}");
        assert!(toml::from_str::<File>("[[callers]]\ntools = []\n").is_err());
    }
}
