//! `[breaker]`, `[plugins.NAME.breaker]` and `[plugins.NAME.tools.TOOL.breaker]`: when a failing
//! tool is suspended, as written, and resolved into a [`BreakerPolicy`]. Each level inherits every
//! key it does not set from the one above, as `[limits]` do; a bad value stops the daemon at start.

use std::time::Duration;

use serde::Deserialize;

use super::{ConfigError, PluginPolicy, invalid};
use crate::breaker::BreakerPolicy;
use crate::call::ErrorKind;

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

impl PluginPolicy {
    /// The breaker policy of `tool`, by the name the plugin gives it (without the prefix): its own
    /// `[plugins.NAME.tools.TOOL.breaker]`, else the plugin's, else the global `[breaker]`.
    pub fn breaker_for(&self, tool: &str) -> &BreakerPolicy {
        self.tools
            .get(tool)
            .and_then(super::ToolOverride::breaker)
            .unwrap_or(&self.breaker)
    }
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
mod tests {
    use super::*;
    use crate::config::resolved::tests::parse;

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn without_a_table_every_tool_opens_after_three_timeouts() {
        let c = parse("").unwrap();
        let p = c.breaker_for("any", "tool");
        let timeout = c.policy("any").limits.timeout;
        assert_eq!(p, &BreakerPolicy::default().with_call_timeout(timeout));
        assert!(p.enabled());
    }

    #[test]
    fn tools_inherit_from_their_plugin_and_the_plugin_from_the_global_table() {
        let c = parse(
            "[breaker]\nfailures = 5\nkinds = [\"timeout\", \"trap\"]\n\
             [plugins.a.limits]\ntimeout-ms = 5000\n\
             [plugins.a.breaker]\ncool-down-s = 60\n\
             [plugins.a.tools.slow.breaker]\nfailures = 2\n\
             [plugins.a.tools.flaky.breaker]\ndisabled = true\n\
             [plugins.a.tools.plain]\ntitle = \"Plain\"\n",
        )
        .unwrap();
        let global = c.breaker_for("b", "x");
        assert_eq!(global.failures().get(), 5);
        assert!(global.trips_on(ErrorKind::Trap) && global.trips_on(ErrorKind::Timeout));
        assert_eq!(global.cool_down(), Duration::from_secs(30));

        let plugin = c.breaker_for("a", "plain");
        assert_eq!(plugin.failures().get(), 5);
        assert_eq!(plugin.cool_down(), Duration::from_secs(60));
        assert_eq!(plugin.trial_expiry(), Duration::from_secs(15));
        assert_eq!(c.breaker_for("a", "unnamed"), plugin);

        let slow = c.breaker_for("a", "slow");
        assert_eq!(slow.failures().get(), 2);
        assert_eq!(slow.cool_down(), Duration::from_secs(60));
        assert!(slow.trips_on(ErrorKind::Trap));
        assert_eq!(slow.trial_expiry(), Duration::from_secs(15));

        assert!(!c.breaker_for("a", "flaky").enabled());
    }

    #[test]
    fn refuses_kinds_that_are_not_the_tools_fault_naming_the_setting() {
        let e = error("[plugins.a.tools.t.breaker]\nkinds = [\"timeout\", \"denied\"]\n");
        assert!(
            e.contains("`plugins.a.tools.t.breaker.kinds`")
                && e.contains("`denied` says nothing about the tool's health")
                && e.contains("use some of timeout, out_of_fuel"),
            "{e}"
        );
        let e = error("[breaker]\nkinds = []\n");
        assert!(
            e.contains("`breaker.kinds`") && e.contains("disabled = true"),
            "{e}"
        );
        let e = error("[breaker]\nkinds = [\"timout\"]\n");
        assert!(e.contains("unknown variant `timout`"), "{e}");
    }

    #[test]
    fn refuses_counts_and_cool_downs_out_of_range() {
        let e = error("[breaker]\nfailures = 0\n");
        assert!(
            e.contains("invalid setting `breaker.failures`: must be between 1 and 100, not 0"),
            "{e}"
        );
        assert!(
            error("[plugins.a.breaker]\nfailures = 1000\n").contains("plugins.a.breaker.failures")
        );
        let e = error("[breaker]\ncool-down-s = 0\n");
        assert!(
            e.contains("`breaker.cool-down-s`: must be between 1 and 3600 seconds, not 0"),
            "{e}"
        );
        assert!(error("[breaker]\ncool-down-s = 86400\n").contains("not 86400"));
        let e = error("[breaker]\ncooldown = 5\n");
        assert!(e.contains("unknown field `cooldown`"), "{e}");
    }
}
