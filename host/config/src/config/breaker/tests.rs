//! Breaker settings: defaults, inheritance from `[breaker]` to a plugin and a tool, and bad values.

use super::*;
use crate::config::load::tests::parse;

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
    assert!(error("[plugins.a.breaker]\nfailures = 1000\n").contains("plugins.a.breaker.failures"));
    let e = error("[breaker]\ncool-down-s = 0\n");
    assert!(
        e.contains("`breaker.cool-down-s`: must be between 1 and 3600 seconds, not 0"),
        "{e}"
    );
    assert!(error("[breaker]\ncool-down-s = 86400\n").contains("not 86400"));
    let e = error("[breaker]\ncooldown = 5\n");
    assert!(e.contains("unknown field `cooldown`"), "{e}");
}
