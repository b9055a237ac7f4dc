//! What the gate says about one call ([`Decision`]), the rule that decided it, and the refusal to give
//! when a call needs approval and no approver is available. Plain values: deciding is
//! `permission`'s job, asking the user the caller's.

use std::fmt;

use serde::Serialize;

use super::rule::{RuleKind, Scope};

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
