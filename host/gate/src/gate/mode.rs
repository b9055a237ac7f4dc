//! Permission modes: how calls that no rule decides are treated, and their names in toolhost.toml and
//! on the command line. Plain values: the steps that apply a mode are in `permission`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

    /// The less trusting of two modes: a caller's mode may tighten a plugin's, never loosen it.
    pub fn stricter(self, other: Mode) -> Mode {
        let rank = |m: Mode| Self::ALL.iter().position(|&x| x == m).unwrap_or(0);
        if rank(other) < rank(self) {
            other
        } else {
            self
        }
    }

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
