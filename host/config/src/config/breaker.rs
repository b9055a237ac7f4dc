//! `[breaker]`, `[plugins.NAME.breaker]` and `[plugins.NAME.tools.TOOL.breaker]`: when a failing
//! tool is suspended, as written, and resolved into a [`BreakerPolicy`]. Each level inherits every
//! key it does not set from the one above, as `[limits]` do; a bad value stops the daemon at start.

use std::time::Duration;

use serde::Deserialize;
use toolhost_call::call::ErrorKind;
use toolhost_gate::breaker::BreakerPolicy;

use super::{ConfigError, invalid};

/// A `breaker` table as written; every key optional, inherited when missing.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawBreaker {
    /// Consecutive failures of one kind that suspend the tool (1-100). Default 3.
    pub failures: Option<u32>,
    /// The kinds that count, by their audit names: `timeout`, `out_of_fuel`, `memory_limit`,
    /// `trap`, `tool_failed`, `bad_output`, `internal`. Default `["timeout"]`.
    pub kinds: Option<Vec<ErrorKind>>,
    /// How long the tool is suspended, in seconds (1-3600), before one trial call; each failed
    /// trial doubles it, up to 8 times. Default 30.
    pub cool_down_s: Option<u64>,
    /// Never suspend (failures are still counted for the model's advice). Default false.
    pub disabled: Option<bool>,
}

/// `raw` over `parent`, for calls that may take up to `timeout` (the plugin's `timeout-ms`);
/// `key` names the table in errors, e.g. `plugins.fs.breaker`.
pub(super) fn resolve_breaker(
    raw: &RawBreaker,
    parent: &BreakerPolicy,
    timeout: Duration,
    key: &str,
) -> Result<BreakerPolicy, ConfigError> {
    let at = |field: &str| format!("{key}.{field}");
    let mut policy = parent.clone().with_call_timeout(timeout);
    if let Some(disabled) = raw.disabled {
        policy = policy.with_enabled(!disabled);
    }
    if let Some(n) = raw.failures {
        policy = policy
            .with_failures(n)
            .map_err(|e| invalid(at("failures"), e.to_string()))?;
    }
    if let Some(kinds) = &raw.kinds {
        policy = policy
            .with_kinds(kinds.iter().copied())
            .map_err(|e| invalid(at("kinds"), e.to_string()))?;
    }
    if let Some(s) = raw.cool_down_s {
        policy = policy
            .with_cool_down(Duration::from_secs(s))
            .map_err(|e| invalid(at("cool-down-s"), e.to_string()))?;
    }
    Ok(policy)
}

#[cfg(test)]
mod tests;
