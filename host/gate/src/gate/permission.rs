//! The permission gate: modes and allow/ask/deny rules, combined from the global and the plugin
//! policy, decide whether a validated call runs, needs approval, or is refused.
//! Pure: it decides, it never asks anyone and never records anything. The modes are in `mode`,
//! the answer it gives in `decision`.
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
//! resolved towards caution: [`Hints::is_read_only`](toolhost_call::tool::Hints::is_read_only)). How rules
//! match is documented in [`Rule`].

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_call::tool::ToolSpec;

use super::decision::{Decision, MatchedRule};
use super::guard::{Denial, PathGuard};
use super::mode::Mode;
use super::mounts::Mounts;
use super::rule::{self, Reach, Rule, RuleError, RuleKind, Scope, Subject};

mod preview;
pub use self::preview::Preview;

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

/// A caller profile's mode and rules, compiled: a third layer over the global and plugin policy.
#[derive(Debug, Clone, Default)]
pub struct CallerRules {
    mode: Option<Mode>,
    rules: Vec<ScopedRule>,
}

impl CallerRules {
    /// Compile a profile's `mode`, `allow`, `ask` and `deny`.
    pub fn new(config: &PermissionConfig) -> Result<Self, RuleError> {
        Ok(Self {
            mode: config.mode,
            rules: compile(Scope::Caller, config)?,
        })
    }

    /// Whether a deny or ask rule has a path pattern, which the sandbox's filesystem must enforce
    /// too.
    pub fn has_path_rules(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.kind != RuleKind::Allow && r.rule.guest_glob().is_some())
    }
}

fn compile(scope: Scope, config: &PermissionConfig) -> Result<Vec<ScopedRule>, RuleError> {
    let mut rules = Vec::new();
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
    Ok(rules)
}

impl Permissions {
    /// This policy as it applies to a caller with `caller`'s profile: its rules join the others
    /// (deny still wins, whichever layer it comes from) and its mode can only tighten.
    pub fn for_caller(&self, caller: &CallerRules) -> Self {
        let mut rules = self.rules.clone();
        rules.extend(caller.rules.iter().cloned());
        Self {
            mode: caller.mode.map_or(self.mode, |m| self.mode.stricter(m)),
            rules,
            mounts: self.mounts.clone(),
            excludes: self.excludes.clone(),
        }
    }

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
        let mut rules = compile(Scope::Global, global)?;
        if let Some(plugin) = plugin {
            rules.extend(compile(Scope::Plugin, plugin)?);
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
    /// every deny or ask rule with a path pattern that names the tool. An ask area is open only to
    /// a call a person approved, and only at its subject ([`Self::approved_guard`]): a plugin
    /// cannot reach into it on its own.
    pub fn path_guard(&self, tool: &str) -> PathGuard {
        let mut denials = self.excludes.clone();
        for r in &self.rules {
            let Some(glob) = r.rule.guest_glob().filter(|_| r.rule.matches_tool(tool)) else {
                continue;
            };
            match r.kind {
                RuleKind::Deny => denials.push(Denial::rule(glob.clone(), r.rule.as_str())),
                RuleKind::Ask => denials.push(Denial::ask(glob.clone(), r.rule.as_str())),
                RuleKind::Allow => {}
            }
        }
        PathGuard::new(self.mounts.clone(), denials)
    }

    /// [`Self::path_guard`] for a call of `tool` with `input` that a person approved: the ask
    /// areas are open at the subject, as written and where it leads, and below it.
    pub fn approved_guard(&self, tool: &ToolSpec, input: &Value) -> PathGuard {
        let subject =
            Subject::of(input, tool.permission_subject.as_deref()).with_mounts(Some(&self.mounts));
        let mut approved = Vec::new();
        if let Ok(texts) = subject.texts() {
            for t in texts {
                approved.extend(t.lexical_guest());
                if let Some(Ok(r)) = t.resolved() {
                    approved.push(r.guest.clone());
                }
            }
        }
        self.path_guard(&tool.name).approved(approved)
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
        let read_only = tool.hints.is_read_only();

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
mod tests;
