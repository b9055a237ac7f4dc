//! The permission gate: modes and allow/ask/deny rules, combined from the global and the plugin
//! policy, decide whether a validated call runs, needs approval, or is refused.
//! Pure: it decides, it never asks anyone and never records anything.
//!
//! A call is decided by the first step that applies:
//!
//! 1. a `deny` rule (global or plugin) matches: **deny**;
//! 2. the mode is `plan` and the tool is not read-only: **deny** (no rule lifts plan mode);
//! 3. an `ask` rule matches: **ask**;
//! 4. an `allow` rule matches: **allow**;
//! 5. the mode decides: `bypass` allows; `accept-edits` allows read-only tools and tools that are
//!    neither destructive nor open-world, and asks for the rest; `default` and `plan` allow
//!    read-only tools and ask for the rest.
//!
//! A tool is *read-only* when its hints say `read_only` and not `destructive` (a contradiction is
//! resolved towards caution). How rules match is documented in [`Rule`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::guard::{Denial, PathGuard};
use super::mounts::Mounts;
use super::rule::{self, Reach, Rule, RuleError, RuleKind, Scope, Subject};
use crate::tool::ToolSpec;

/// The `[permissions]` of toolhost.toml, globally or for one plugin, as written.
///
/// Unknown keys are rejected, so a misspelt `alow` cannot silently drop a rule; embed it as its
/// own table, not with `#[serde(flatten)]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct PermissionConfig {
    /// The mode; a plugin's mode overrides the global one. Unset everywhere means `default`.
    pub mode: Option<Mode>,
    /// Rules for calls that run without asking.
    pub allow: Vec<String>,
    /// Rules for calls that need approval, even when an allow rule matches.
    pub ask: Vec<String>,
    /// Rules for calls that never run, whatever else matches.
    pub deny: Vec<String>,
}

/// How calls that no rule decides are treated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Only read-only tools run; allow rules do not lift this.
    Plan,
    /// Read-only tools run; others need approval.
    #[default]
    Default,
    /// Tools that only edit granted files run too; destructive and open-world tools need approval.
    AcceptEdits,
    /// Everything not denied or asked by a rule runs.
    Bypass,
}

impl Mode {
    /// Every mode, in order of increasing trust.
    pub const ALL: [Mode; 4] = [Mode::Plan, Mode::Default, Mode::AcceptEdits, Mode::Bypass];

    /// The name used in toolhost.toml and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Default => "default",
            Self::AcceptEdits => "accept-edits",
            Self::Bypass => "bypass",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not one of [`Mode::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode {0:?}; expected one of: plan, default, accept-edits, bypass")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, UnknownMode> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownMode(s.to_owned()))
    }
}

/// The rule that decided a call, for messages and the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatchedRule {
    /// The list it is in.
    pub kind: RuleKind,
    /// The policy it came from.
    pub scope: Scope,
    /// The rule as written.
    pub rule: String,
}

impl fmt::Display for MatchedRule {
    /// `deny: write_file(./secrets/**)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.rule)
    }
}

/// What the gate says about one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "kebab-case")]
pub enum Decision {
    /// Run it.
    Allow {
        /// Why, for the audit log.
        reason: String,
        /// The allow rule that matched, if one did.
        rule: Option<MatchedRule>,
    },
    /// Run it only if an approver agrees; with no approver, refuse it
    /// (see [`Decision::unapproved_message`]).
    Ask {
        /// The tool's name.
        tool: String,
        /// Why approval is needed.
        reason: String,
        /// The narrowest allow rule that would let this exact call run without asking, e.g.
        /// `write_file(./notes/todo.md)`; useless when `rule` is an ask rule (ask beats allow).
        suggestion: String,
        /// The ask rule that matched, if one did.
        rule: Option<MatchedRule>,
    },
    /// Refuse it.
    Deny {
        /// Why, for the model and the audit log.
        reason: String,
        /// The deny rule that matched, if one did.
        rule: Option<MatchedRule>,
    },
}

impl Decision {
    /// Why the gate decided so.
    pub fn reason(&self) -> &str {
        match self {
            Self::Allow { reason, .. } | Self::Ask { reason, .. } | Self::Deny { reason, .. } => {
                reason
            }
        }
    }

    /// The rule that decided, when a rule did rather than the mode.
    pub fn rule(&self) -> Option<&MatchedRule> {
        match self {
            Self::Allow { rule, .. } | Self::Ask { rule, .. } | Self::Deny { rule, .. } => {
                rule.as_ref()
            }
        }
    }

    /// For [`Decision::Ask`]: the refusal to give when no approver is available, saying how to
    /// allow the call in the policy. `None` for the other decisions.
    pub fn unapproved_message(&self) -> Option<String> {
        let Self::Ask {
            tool,
            reason,
            suggestion,
            rule,
        } = self
        else {
            return None;
        };
        Some(match rule {
            Some(rule) => format!(
                "`{tool}` needs approval ({reason}) and no approver is available; \
                 remove `{}` from `ask` in the {} policy to run it without asking",
                rule.rule, rule.scope
            ),
            None => format!(
                "`{tool}` needs approval ({reason}) and no approver is available; \
                 add `allow = [{}]` to the policy to allow it",
                toml_string(suggestion)
            ),
        })
    }
}

/// `s` as a TOML basic string; JSON's escapes are a subset of TOML's.
fn toml_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// The compiled policy for one plugin's tools: global and plugin rules, the effective mode, and
/// the plugin's directories, through which path subjects are resolved before they are judged.
#[derive(Debug, Clone)]
pub struct Permissions {
    mode: Mode,
    rules: Vec<ScopedRule>,
    mounts: Mounts,
    excludes: Vec<Denial>,
}

/// A rule that matched, and whether it has a pattern (so that an unjudged subject made it match).
struct Found {
    matched: MatchedRule,
    patterned: bool,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.matched.fmt(f)
    }
}

impl std::ops::Deref for Found {
    type Target = MatchedRule;
    fn deref(&self) -> &MatchedRule {
        &self.matched
    }
}

#[derive(Debug, Clone)]
struct ScopedRule {
    kind: RuleKind,
    scope: Scope,
    rule: Rule,
}

impl Default for Permissions {
    /// Mode `default`, no rules.
    fn default() -> Self {
        Self {
            mode: Mode::Default,
            rules: Vec::new(),
            mounts: Mounts::default(),
            excludes: Vec::new(),
        }
    }
}

impl Permissions {
    /// Compile the global policy and, when the plugin has one, the plugin's policy.
    /// The plugin's mode overrides the global mode; rules from both apply.
    pub fn new(
        global: &PermissionConfig,
        plugin: Option<&PermissionConfig>,
    ) -> Result<Self, RuleError> {
        let mode = plugin
            .and_then(|p| p.mode)
            .or(global.mode)
            .unwrap_or_default();
        let mut rules = Vec::new();
        let scoped = [(Scope::Global, Some(global)), (Scope::Plugin, plugin)];
        for (scope, config) in scoped {
            let Some(config) = config else { continue };
            let lists = [
                (RuleKind::Deny, &config.deny),
                (RuleKind::Ask, &config.ask),
                (RuleKind::Allow, &config.allow),
            ];
            for (kind, texts) in lists {
                for text in texts {
                    let rule = text.parse::<Rule>().map_err(|e| RuleError {
                        list: Some(kind),
                        scope: Some(scope),
                        ..e
                    })?;
                    rules.push(ScopedRule { kind, scope, rule });
                }
            }
        }
        Ok(Self {
            mode,
            rules,
            mounts: Mounts::default(),
            excludes: Vec::new(),
        })
    }

    /// The same policy for a plugin with these directories (and `exclude` entries in them): path
    /// subjects are judged where they really lead, and [`Self::path_guard`] covers them.
    pub fn with_files(self, mounts: Mounts, excludes: Vec<Denial>) -> Self {
        Self {
            mounts,
            excludes,
            ..self
        }
    }

    /// What the sandbox's filesystem must refuse during a call of `tool`: the excluded paths and
    /// every deny rule with a path pattern that names the tool.
    pub fn path_guard(&self, tool: &str) -> PathGuard {
        let mut denials = self.excludes.clone();
        for r in &self.rules {
            if r.kind == RuleKind::Deny
                && r.rule.matches_tool(tool)
                && let Some(glob) = r.rule.guest_glob()
            {
                denials.push(Denial::rule(glob.clone(), r.rule.as_str()));
            }
        }
        PathGuard::new(self.mounts.clone(), denials)
    }

    /// The same policy under another mode (e.g. from a command-line flag).
    pub fn with_mode(self, mode: Mode) -> Self {
        Self { mode, ..self }
    }

    /// The effective mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Decide a call of `tool` with the (validated) `input`; see the module docs for the steps.
    pub fn decide(&self, tool: &ToolSpec, input: &Value) -> Decision {
        let name = tool.name.as_str();
        let subject =
            Subject::of(input, tool.permission_subject.as_deref()).with_mounts(Some(&self.mounts));
        let read_only = tool.hints.read_only && !tool.hints.destructive;

        if let Some(refusal) = self.unplaceable(name, &subject) {
            return refusal;
        }
        // A rule that matched because the subject could not be judged says so.
        let unjudged = match subject.texts() {
            Err(why) => format!(" ({why}, so the rule applies)"),
            Ok(_) => String::new(),
        };
        if let Some(rule) = self.first_match(RuleKind::Deny, name, &subject) {
            let unjudged = if rule.patterned {
                unjudged.as_str()
            } else {
                ""
            };
            return Decision::Deny {
                reason: format!(
                    "denied by rule `{rule}` in the {} policy{unjudged}",
                    rule.scope
                ),
                rule: Some(rule.matched),
            };
        }
        if self.mode == Mode::Plan && !read_only {
            return Decision::Deny {
                reason: format!("plan mode allows read-only tools only; `{name}` is not read-only"),
                rule: None,
            };
        }
        let ask = |reason: String, rule: Option<MatchedRule>| Decision::Ask {
            tool: name.to_owned(),
            reason,
            suggestion: rule::suggest(name, &subject),
            rule,
        };
        if let Some(rule) = self.first_match(RuleKind::Ask, name, &subject) {
            let unjudged = if rule.patterned {
                unjudged.as_str()
            } else {
                ""
            };
            let reason = format!("rule `{rule}` in the {} policy{unjudged}", rule.scope);
            return ask(reason, Some(rule.matched));
        }
        if let Some(rule) = self.first_match(RuleKind::Allow, name, &subject) {
            return Decision::Allow {
                reason: format!("allowed by rule `{rule}` in the {} policy", rule.scope),
                rule: Some(rule.matched),
            };
        }
        let allow = |reason: String| Decision::Allow { reason, rule: None };
        match self.mode {
            Mode::Bypass => allow("bypass mode allows every call no rule denies".to_owned()),
            _ if read_only => allow(format!("`{name}` is read-only")),
            Mode::AcceptEdits if tool.hints.destructive => ask(
                "accept-edits mode asks before destructive tools".to_owned(),
                None,
            ),
            Mode::AcceptEdits if tool.hints.open_world => ask(
                "accept-edits mode asks before open-world tools".to_owned(),
                None,
            ),
            Mode::AcceptEdits => allow("accept-edits mode allows edits".to_owned()),
            Mode::Default | Mode::Plan => ask(
                format!("`{name}` is not read-only and the mode is `{}`", self.mode),
                None,
            ),
        }
    }

    /// A refusal when a path rule names the tool and the subject leads nowhere the plugin's
    /// directories reach (out through `..` or a link, into no grant): such a path cannot be
    /// judged, and the guest could not open it anyway.
    fn unplaceable(&self, tool: &str, subject: &Subject<'_>) -> Option<Decision> {
        let Ok(texts) = subject.texts() else {
            return None;
        };
        if self.mounts.is_empty()
            || !self
                .rules
                .iter()
                .any(|r| r.rule.is_path_rule() && r.rule.matches_tool(tool))
        {
            return None;
        }
        texts.iter().find_map(|t| match t.resolved() {
            Some(Err(why)) => Some(Decision::Deny {
                reason: format!(
                    "the path `{}` cannot be checked against the path rules: {why}",
                    t.raw()
                ),
                rule: None,
            }),
            _ => None,
        })
    }

    fn first_match(&self, kind: RuleKind, tool: &str, subject: &Subject<'_>) -> Option<Found> {
        let reach = match kind {
            RuleKind::Allow => Reach::Narrow,
            RuleKind::Ask | RuleKind::Deny => Reach::Wide,
        };
        self.rules
            .iter()
            .find(|r| r.kind == kind && r.rule.matches(tool, subject, reach))
            .map(|r| Found {
                patterned: r.rule.has_pattern(),
                matched: MatchedRule {
                    kind,
                    scope: r.scope,
                    rule: r.rule.as_str().to_owned(),
                },
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Hints;
    use serde_json::json;

    fn tool(name: &str, hints: Hints) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            title: None,
            description: String::new(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            hints,
            permission_subject: Some("/path".to_owned()),
        }
    }

    fn read_only() -> ToolSpec {
        let hints = Hints {
            read_only: true,
            ..Hints::default()
        };
        tool("read_file", hints)
    }

    fn plain_write() -> ToolSpec {
        tool("write_file", Hints::default())
    }

    fn destructive() -> ToolSpec {
        let hints = Hints {
            destructive: true,
            ..Hints::default()
        };
        tool("delete_file", hints)
    }

    fn open_world() -> ToolSpec {
        let hints = Hints {
            open_world: true,
            ..Hints::default()
        };
        tool("post_url", hints)
    }

    fn config(mode: Option<Mode>, allow: &[&str], ask: &[&str], deny: &[&str]) -> PermissionConfig {
        let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        PermissionConfig {
            mode,
            allow: own(allow),
            ask: own(ask),
            deny: own(deny),
        }
    }

    fn with_mode(mode: Mode) -> Permissions {
        Permissions::new(&config(Some(mode), &[], &[], &[]), None).unwrap()
    }

    fn input(path: &str) -> Value {
        json!({ "path": path })
    }

    /// "allow", "ask" or "deny".
    fn verdict(p: &Permissions, t: &ToolSpec, path: &str) -> &'static str {
        match p.decide(t, &input(path)) {
            Decision::Allow { .. } => "allow",
            Decision::Ask { .. } => "ask",
            Decision::Deny { .. } => "deny",
        }
    }

    #[test]
    fn each_mode_treats_each_kind_of_tool_as_documented() {
        let expected = [
            (Mode::Plan, ["allow", "deny", "deny", "deny"]),
            (Mode::Default, ["allow", "ask", "ask", "ask"]),
            (Mode::AcceptEdits, ["allow", "allow", "ask", "ask"]),
            (Mode::Bypass, ["allow", "allow", "allow", "allow"]),
        ];
        let tools = [read_only(), plain_write(), destructive(), open_world()];
        for (mode, verdicts) in expected {
            let p = with_mode(mode);
            for (t, want) in tools.iter().zip(verdicts) {
                assert_eq!(verdict(&p, t, "a.txt"), want, "{mode} / {}", t.name);
            }
        }
    }

    #[test]
    fn default_mode_applies_without_any_config() {
        let p = Permissions::new(&PermissionConfig::default(), None).unwrap();
        assert_eq!(p.mode(), Mode::Default);
        assert_eq!(verdict(&p, &plain_write(), "a.txt"), "ask");
        assert_eq!(verdict(&Permissions::default(), &read_only(), "a"), "allow");
    }

    #[test]
    fn read_only_and_destructive_together_count_as_not_read_only() {
        let hints = Hints {
            read_only: true,
            destructive: true,
            ..Hints::default()
        };
        let t = tool("odd", hints);
        assert_eq!(verdict(&with_mode(Mode::Plan), &t, "a"), "deny");
        assert_eq!(verdict(&with_mode(Mode::Default), &t, "a"), "ask");
    }

    #[test]
    fn deny_beats_allow_at_both_levels() {
        let global = config(None, &["write_file"], &[], &["write_file(./secrets/**)"]);
        let plugin = config(Some(Mode::Bypass), &["write_file(**)"], &[], &[]);
        let p = Permissions::new(&global, Some(&plugin)).unwrap();
        assert_eq!(verdict(&p, &plain_write(), "secrets/key"), "deny");
        assert_eq!(verdict(&p, &plain_write(), "src/../secrets/key"), "deny");
        assert_eq!(verdict(&p, &plain_write(), "notes.md"), "allow");

        let global = config(Some(Mode::Bypass), &["write_file"], &[], &[]);
        let plugin = config(None, &[], &[], &["write_file(./secrets/**)"]);
        let p = Permissions::new(&global, Some(&plugin)).unwrap();
        let decision = p.decide(&plain_write(), &input("./secrets/key"));
        assert_eq!(
            decision.reason(),
            "denied by rule `deny: write_file(./secrets/**)` in the plugin policy"
        );
        assert_eq!(decision.rule().map(|r| r.scope), Some(Scope::Plugin));
    }

    #[test]
    fn ask_beats_allow_across_levels() {
        let global = config(None, &[], &["write_file(./src/**)"], &[]);
        let plugin = config(None, &["write_file"], &[], &[]);
        let p = Permissions::new(&global, Some(&plugin)).unwrap();
        assert_eq!(verdict(&p, &plain_write(), "src/main.rs"), "ask");
        assert_eq!(verdict(&p, &plain_write(), "docs/x.md"), "allow");
    }

    #[test]
    fn ask_rules_apply_even_in_bypass_mode() {
        let p = Permissions::new(
            &config(Some(Mode::Bypass), &[], &["delete_file"], &[]),
            None,
        )
        .unwrap();
        assert_eq!(verdict(&p, &destructive(), "a"), "ask");
    }

    #[test]
    fn allow_rules_do_not_lift_plan_mode() {
        let p =
            Permissions::new(&config(Some(Mode::Plan), &["write_file"], &[], &[]), None).unwrap();
        let decision = p.decide(&plain_write(), &input("a.txt"));
        assert_eq!(
            decision.reason(),
            "plan mode allows read-only tools only; `write_file` is not read-only"
        );
        assert_eq!(verdict(&p, &read_only(), "a.txt"), "allow");
    }

    #[test]
    fn plugin_mode_overrides_global_mode() {
        let global = config(Some(Mode::Plan), &[], &[], &[]);
        let plugin = config(Some(Mode::Bypass), &[], &[], &[]);
        assert_eq!(
            Permissions::new(&global, Some(&plugin)).unwrap().mode(),
            Mode::Bypass
        );
        let plugin = config(None, &["read_file"], &[], &[]);
        assert_eq!(
            Permissions::new(&global, Some(&plugin)).unwrap().mode(),
            Mode::Plan
        );
        assert_eq!(
            with_mode(Mode::Plan).with_mode(Mode::Default).mode(),
            Mode::Default
        );
    }

    #[test]
    fn allow_rules_do_not_follow_traversal_out_of_their_directory() {
        let p = Permissions::new(&config(None, &["write_file(./src/**)"], &[], &[]), None).unwrap();
        assert_eq!(verdict(&p, &plain_write(), "src/x.rs"), "allow");
        assert_eq!(verdict(&p, &plain_write(), "./src/x.rs"), "allow");
        assert_eq!(verdict(&p, &plain_write(), "src/../../etc/passwd"), "ask");
        assert_eq!(verdict(&p, &plain_write(), "src/../secret"), "ask");
        assert_eq!(verdict(&p, &plain_write(), "/src/x.rs"), "ask");
    }

    #[test]
    fn shell_prefix_rules_match_commands() {
        let shell = ToolSpec {
            permission_subject: Some("/command".to_owned()),
            ..tool("shell", Hints::default())
        };
        let p = Permissions::new(
            &config(None, &["shell(git commit*)"], &[], &["shell(git push*)"]),
            None,
        )
        .unwrap();
        let decide = |cmd: &str| p.decide(&shell, &json!({ "command": cmd }));
        assert!(matches!(
            decide("git commit -m wip"),
            Decision::Allow { .. }
        ));
        assert!(matches!(decide("git push --force"), Decision::Deny { .. }));
        let Decision::Ask { suggestion, .. } = decide("git status") else {
            panic!("git status should need approval");
        };
        assert_eq!(suggestion, "shell(git status)");
    }

    #[test]
    fn pattern_rules_fail_closed_without_a_subject() {
        let p = Permissions::new(
            &config(None, &["write_file(**)"], &[], &["write_file(*)"]),
            None,
        )
        .unwrap();
        let t = plain_write();
        for input in [
            json!({}),
            json!({ "path": null }),
            json!({ "path": {"a": 1} }),
            json!({ "path": [] }),
        ] {
            let decision = p.decide(&t, &input);
            assert!(matches!(decision, Decision::Deny { .. }), "{input}");
        }
        let no_subject = ToolSpec {
            permission_subject: None,
            ..plain_write()
        };
        let decision = p.decide(&no_subject, &input("a"));
        assert_eq!(
            decision.reason(),
            "denied by rule `deny: write_file(*)` in the global policy \
             (the tool declares no permission subject, so the rule applies)"
        );
        let wildcard =
            Permissions::new(&config(None, &[], &[], &["*(./secrets/**)"]), None).unwrap();
        assert!(matches!(
            wildcard.decide(&no_subject, &input("a")),
            Decision::Ask { .. }
        ));
        assert!(matches!(
            wildcard.decide(&t, &json!({})),
            Decision::Deny { .. }
        ));
        let asks = Permissions::new(
            &config(None, &["write_file(**)"], &["write_file(./src/**)"], &[]),
            None,
        )
        .unwrap();
        assert!(matches!(asks.decide(&t, &json!({})), Decision::Ask { .. }));
    }

    fn tree() -> (tempfile::TempDir, Mounts) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::os::unix::fs::symlink("secrets", root.join("alias")).unwrap();
        std::os::unix::fs::symlink("src/deep", root.join("link")).unwrap();
        std::os::unix::fs::symlink("../..", root.join("src/up")).unwrap();
        let mounts = Mounts::new([(".", root)]);
        (dir, mounts)
    }

    #[test]
    fn deny_rules_hold_against_every_spelling_of_the_path() {
        let (_dir, mounts) = tree();
        let p = Permissions::new(
            &config(Some(Mode::Bypass), &[], &[], &["write_file(./secrets/**)"]),
            None,
        )
        .unwrap()
        .with_files(mounts, Vec::new());
        for spelling in [
            "secrets/key",
            "/secrets/key",
            "./secrets//key",
            "src/../secrets/key",
            "alias/key",
            "link/../../secrets/key",
        ] {
            assert_eq!(verdict(&p, &plain_write(), spelling), "deny", "{spelling}");
        }
        for spelling in ["src/x", "/src/x", "~/secrets/key", "secretsx"] {
            assert_eq!(verdict(&p, &plain_write(), spelling), "allow", "{spelling}");
        }
        let decision = p.decide(&plain_write(), &input("src/up/etc/passwd"));
        assert_eq!(
            decision.reason(),
            "the path `src/up/etc/passwd` cannot be checked against the path rules: \
             a symbolic link in it leads out of the granted directory"
        );
        assert_eq!(verdict(&p, &plain_write(), "../x"), "deny");
    }

    #[test]
    fn allow_rules_follow_links_to_where_they_lead() {
        let (_dir, mounts) = tree();
        let p = Permissions::new(&config(None, &["write_file(./src/**)"], &[], &[]), None)
            .unwrap()
            .with_files(mounts, Vec::new());
        assert_eq!(verdict(&p, &plain_write(), "src/deep/x"), "allow");
        assert_eq!(verdict(&p, &plain_write(), "link/x"), "ask");
        std::fs::create_dir_all(_dir.path().join("src/deep")).unwrap();
        std::os::unix::fs::symlink("../secrets", _dir.path().join("src/to_secrets")).unwrap();
        assert_eq!(verdict(&p, &plain_write(), "src/to_secrets/key"), "ask");
    }

    #[test]
    fn path_guard_carries_the_tools_deny_rules() {
        let (dir, mounts) = tree();
        let p = Permissions::new(
            &config(
                None,
                &[],
                &[],
                &[
                    "write_file(./secrets/**)",
                    "read_file(**/.env)",
                    "shell(git push*)",
                ],
            ),
            None,
        )
        .unwrap()
        .with_files(mounts, Denial::exclude("", "src/deep").unwrap());
        let root = dir.path().canonicalize().unwrap();
        let guard = p.path_guard("write_file");
        assert!(guard.check_at(&root, "alias/key").is_err());
        assert!(guard.check_at(&root, "src/deep/x").is_err());
        assert!(guard.check_at(&root, "src/x").is_ok());
        let reader = p.path_guard("read_file");
        assert!(reader.check_at(&root, "alias/key").is_ok());
        assert!(reader.check_at(&root, "src/.env").is_err());
        assert!(
            !p.path_guard("shell").is_open(),
            "excludes apply to every tool"
        );
    }

    #[test]
    fn tool_wildcards_match_several_tools() {
        let p = Permissions::new(&config(None, &[], &[], &["*_file"]), None).unwrap();
        assert_eq!(verdict(&p, &read_only(), "a"), "deny");
        assert_eq!(verdict(&p, &open_world(), "a"), "ask");
    }

    #[test]
    fn unapproved_message_suggests_the_exact_rule() {
        let decision = Permissions::default().decide(&plain_write(), &input("notes/todo.md"));
        let Decision::Ask { suggestion, .. } = &decision else {
            panic!("should ask");
        };
        assert_eq!(suggestion, "write_file(./notes/todo.md)");
        assert_eq!(
            decision.unapproved_message().unwrap(),
            "`write_file` needs approval (`write_file` is not read-only and the mode is `default`) \
             and no approver is available; add `allow = [\"write_file(./notes/todo.md)\"]` to the \
             policy to allow it"
        );
        let asked = Permissions::new(&config(None, &[], &["write_file"], &[]), None).unwrap();
        let message = asked
            .decide(&plain_write(), &input("a"))
            .unapproved_message()
            .unwrap();
        assert!(
            message.contains("remove `write_file` from `ask` in the global policy"),
            "{message}"
        );
        assert_eq!(
            with_mode(Mode::Bypass)
                .decide(&plain_write(), &input("a"))
                .unapproved_message(),
            None
        );
    }

    #[test]
    fn unapproved_message_quotes_awkward_subjects_for_toml() {
        let decision = Permissions::default().decide(&plain_write(), &input("a \"b\"\n"));
        let message = decision.unapproved_message().unwrap();
        assert!(
            message.contains(r#"allow = ["write_file(a \"b\"\n)"]"#),
            "{message}"
        );
    }

    #[test]
    fn rule_errors_name_the_list_and_policy() {
        let plugin = config(None, &[], &[], &["write_file(./src/**"]);
        let err = Permissions::new(&PermissionConfig::default(), Some(&plugin)).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid deny rule "write_file(./src/**" (plugin policy): missing ')'"#
        );
    }

    #[test]
    fn modes_parse_from_strings_and_toml() {
        for mode in Mode::ALL {
            assert_eq!(mode.as_str().parse::<Mode>(), Ok(mode));
        }
        let err = "yolo".parse::<Mode>().unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"unknown permission mode "yolo"; expected one of: plan, default, accept-edits, bypass"#
        );
        let config: PermissionConfig = serde_json::from_value(json!({
            "mode": "accept-edits",
            "allow": ["read_file"],
        }))
        .unwrap();
        assert_eq!(config.mode, Some(Mode::AcceptEdits));
        assert!(config.deny.is_empty());
        let typo = serde_json::from_value::<PermissionConfig>(json!({ "alow": ["x"] }));
        assert!(typo.is_err());
    }
}
