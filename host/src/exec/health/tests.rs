//! Breakers as the pipeline drives them: admit, finish or drop, refuse; the notes each leaves on
//! the audit line, the advice the model reads, `/health` and `/metrics`. Time is this thread's
//! own clock ([`now`]), moved on by [`pass`], so a cool-down never has to be waited out.

use std::cell::Cell;
use std::time::Duration;

use serde_json::json;
use toolhost_gate::grants::{Caps, Limits};

use super::*;

thread_local! {
    /// How far this test's clock is ahead of the monotonic clock (each test runs on its own thread).
    static AHEAD: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// The breakers' clock in the tests: the monotonic clock, moved on by [`pass`].
pub(super) fn now() -> Instant {
    Instant::now() + AHEAD.get()
}

/// Let `d` pass on this test's clock.
fn pass(d: Duration) {
    AHEAD.set(AHEAD.get() + d);
}

/// Opens after `failures` timeouts in a row, for `cool_down_s` seconds.
fn policy(failures: u32, cool_down_s: u64) -> BreakerPolicy {
    BreakerPolicy::default()
        .with_failures(failures)
        .unwrap()
        .with_cool_down(Duration::from_secs(cool_down_s))
        .unwrap()
}

/// A caller whose profile lowered the tool's timeout: its timeouts are its own.
fn lowering(key: &str) -> Asker {
    let caps = Caps {
        timeout: Some(Duration::from_millis(100)),
        ..Caps::default()
    };
    Asker {
        key: Some(key.to_owned()),
        lowered: Lowered::new(&Limits::default(), &caps),
    }
}

/// How one call went: the breaker notes on its audit line, and what the model was told.
#[derive(Debug)]
struct Ended {
    notes: Vec<String>,
    /// The refusal's kind and text, when the breakers refused the call.
    refused: Option<(ErrorKind, String)>,
    /// The outcome's content, when it ran.
    content: String,
}

/// One call of `tool` by `asker` that ends as `kind` (`None`: success), if it is let run.
fn call(
    health: &ToolsHealth,
    (tool, policy): (&str, &BreakerPolicy),
    asker: &Asker,
    kind: Option<ErrorKind>,
) -> Ended {
    let mut record = AuditRecord::begin("c1", "test", tool, &json!({}));
    let (refused, content) = match health.admit_as(tool, policy, asker.clone(), &mut record) {
        Ok(admitted) => {
            let mut outcome = match kind {
                None => CallOutcome::ok("c1", "done".into(), None),
                Some(k) => CallOutcome::failed("c1", k, "it failed".into()),
            };
            admitted.finish(kind, &mut record, &mut outcome);
            (None, outcome.content)
        }
        Err(refusal) => (Some(refusal), String::new()),
    };
    Ended {
        notes: notes(&record),
        refused,
        content,
    }
}

fn notes(record: &AuditRecord) -> Vec<String> {
    record.breaker.iter().map(|n| n.event.clone()).collect()
}

fn state(health: &ToolsHealth, tool: &str) -> &'static str {
    health.health(None, |_| true)[tool].breaker.as_str()
}

const TIMEOUT: Option<ErrorKind> = Some(ErrorKind::Timeout);

#[test]
fn opens_after_the_policys_failures_in_a_row_and_refuses_at_once_saying_why_and_when() {
    let health = ToolsHealth::default();
    let p = policy(3, 5);
    let nobody = Asker::default();
    for _ in 0..2 {
        let ended = call(&health, ("grep", &p), &nobody, TIMEOUT);
        assert!(
            ended.refused.is_none() && ended.notes.is_empty(),
            "{ended:?}"
        );
    }
    assert_eq!(state(&health, "grep"), "closed");

    let third = call(&health, ("grep", &p), &nobody, TIMEOUT);
    assert_eq!(third.notes, ["opened"]);
    assert!(
        third.content.contains("failed 3 of its last 3 calls"),
        "the model is told the tool keeps failing: {}",
        third.content
    );
    assert_eq!(state(&health, "grep"), "open");

    let refused = call(&health, ("grep", &p), &nobody, None);
    let (kind, text) = refused.refused.expect("an open breaker refuses");
    assert_eq!(kind, ErrorKind::Suspended);
    for needle in ["'grep' is suspended", "timed out", "5 s"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert_eq!(refused.notes, ["refused"]);
}

#[test]
fn after_the_cool_down_one_trial_runs_and_its_success_closes_the_breaker() {
    let health = ToolsHealth::default();
    let p = policy(2, 5);
    let nobody = Asker::default();
    for _ in 0..2 {
        call(&health, ("grep", &p), &nobody, TIMEOUT);
    }
    pass(Duration::from_millis(4900));
    assert!(
        call(&health, ("grep", &p), &nobody, None).refused.is_some(),
        "still cooling down"
    );

    pass(Duration::from_millis(200));
    assert_eq!(state(&health, "grep"), "half_open");
    let trial = call(&health, ("grep", &p), &nobody, None);
    assert!(trial.refused.is_none(), "{trial:?}");
    assert_eq!(trial.notes, ["half_opened", "closed"]);
    assert_eq!(state(&health, "grep"), "closed");
    let after = call(&health, ("grep", &p), &nobody, None);
    assert!(
        after.refused.is_none() && after.notes.is_empty(),
        "{after:?}"
    );
}

#[test]
fn a_failed_trial_reopens_the_breaker_for_twice_the_cool_down() {
    let health = ToolsHealth::default();
    let p = policy(1, 5);
    let nobody = Asker::default();
    call(&health, ("grep", &p), &nobody, TIMEOUT);
    pass(Duration::from_secs(5));
    let trial = call(&health, ("grep", &p), &nobody, TIMEOUT);
    assert_eq!(trial.notes, ["half_opened", "reopened"]);

    let (_, text) = call(&health, ("grep", &p), &nobody, None)
        .refused
        .expect("reopened");
    assert!(text.contains("10 s"), "twice the cool-down: {text}");
    pass(Duration::from_secs(9));
    assert!(call(&health, ("grep", &p), &nobody, None).refused.is_some());
    pass(Duration::from_secs(1));
    assert_eq!(
        call(&health, ("grep", &p), &nobody, None).notes,
        ["half_opened", "closed"]
    );
}

#[test]
fn while_the_trial_runs_others_are_refused_and_a_trial_dropped_unreported_frees_its_slot() {
    let health = ToolsHealth::default();
    let p = policy(1, 5);
    let nobody = Asker::default();
    call(&health, ("grep", &p), &nobody, TIMEOUT);
    pass(Duration::from_secs(5));

    let mut record = AuditRecord::begin("trial", "test", "grep", &json!({}));
    let trial = health
        .admit_as("grep", &p, nobody.clone(), &mut record)
        .expect("the first call after the cool-down is the trial");
    assert_eq!(notes(&record), ["half_opened"]);
    let (_, text) = call(&health, ("grep", &p), &nobody, None)
        .refused
        .expect("one trial at a time");
    assert!(text.contains("A trial call is running now"), "{text}");

    // The trial's future dropped (a client gone, a panic): cancelled, which decides nothing.
    drop(trial);
    assert_eq!(state(&health, "grep"), "half_open");
    let next = call(&health, ("grep", &p), &nobody, None);
    assert!(next.refused.is_none(), "the slot is free again: {next:?}");
    assert_eq!(next.notes, ["closed"]);
}

#[test]
fn refusal_tells_without_taking_the_trial() {
    let health = ToolsHealth::default();
    let p = policy(1, 5);
    let nobody = Asker::default();
    let mut record = AuditRecord::begin("c", "test", "grep", &json!({}));
    assert!(health.refusal("grep", &nobody, &mut record).is_none());
    call(&health, ("grep", &p), &nobody, TIMEOUT);

    let (kind, _) = health.refusal("grep", &nobody, &mut record).expect("open");
    assert_eq!(kind, ErrorKind::Suspended);
    assert_eq!(notes(&record), ["refused"]);

    pass(Duration::from_secs(5));
    for _ in 0..2 {
        assert!(health.refusal("grep", &nobody, &mut record).is_none());
    }
    assert_eq!(
        call(&health, ("grep", &p), &nobody, None).notes,
        ["half_opened", "closed"],
        "asking twice left the trial to the call"
    );
}

#[test]
fn failures_the_policy_does_not_count_never_suspend_the_tool() {
    let health = ToolsHealth::default();
    let p = policy(2, 5);
    let nobody = Asker::default();
    let kinds = [
        ErrorKind::InvalidInput,
        ErrorKind::Denied,
        ErrorKind::Cancelled,
        ErrorKind::Trap,
    ];
    for kind in kinds.into_iter().cycle().take(12) {
        let ended = call(&health, ("grep", &p), &nobody, Some(kind));
        assert!(ended.refused.is_none(), "{kind:?}: {ended:?}");
        assert!(ended.notes.is_empty(), "{kind:?}: {ended:?}");
    }
    // A timeout, a trap that ends the streak, a timeout: never two in a row.
    for kind in [TIMEOUT, Some(ErrorKind::Trap), TIMEOUT] {
        call(&health, ("grep", &p), &nobody, kind);
    }
    assert_eq!(state(&health, "grep"), "closed");
}

#[test]
fn a_disabled_breaker_lets_every_call_run() {
    let health = ToolsHealth::default();
    let p = policy(1, 5).with_enabled(false);
    let nobody = Asker::default();
    for _ in 0..5 {
        let ended = call(&health, ("grep", &p), &nobody, TIMEOUT);
        assert!(
            ended.refused.is_none() && ended.notes.is_empty(),
            "{ended:?}"
        );
    }
    assert_eq!(state(&health, "grep"), "disabled");
}

#[test]
fn one_tools_open_breaker_leaves_other_tools_running() {
    let health = ToolsHealth::default();
    let p = policy(1, 5);
    let nobody = Asker::default();
    call(&health, ("grep", &p), &nobody, TIMEOUT);
    assert!(call(&health, ("grep", &p), &nobody, None).refused.is_some());
    let other = call(&health, ("read", &p), &nobody, None);
    assert!(other.refused.is_none(), "{other:?}");
    assert_eq!(state(&health, "read"), "closed");
}

#[test]
fn a_callers_own_lowered_limits_suspend_that_caller_alone() {
    let health = ToolsHealth::default();
    let p = policy(2, 5);
    let alice = lowering("alice");
    for _ in 0..2 {
        call(&health, ("grep", &p), &alice, TIMEOUT);
    }
    let (kind, text) = call(&health, ("grep", &p), &alice, None)
        .refused
        .expect("alice's own breaker is open");
    assert_eq!(kind, ErrorKind::Suspended);
    assert!(text.contains("Only your calls are refused"), "{text}");

    let mut record = AuditRecord::begin("c", "test", "grep", &json!({}));
    assert!(health.refusal("grep", &alice, &mut record).is_some());
    assert_eq!(notes(&record), ["caller_refused"]);

    let bob = lowering("bob");
    assert!(call(&health, ("grep", &p), &bob, None).refused.is_none());
    assert!(
        call(&health, ("grep", &p), &Asker::default(), None)
            .refused
            .is_none()
    );
    let seen = health.health(Some("alice"), |_| true);
    assert_eq!(seen["grep"].breaker.as_str(), "closed", "the tool's own");
    let own = seen["grep"]
        .own
        .as_ref()
        .expect("alice's breaker beside it");
    assert_eq!(own.breaker.as_str(), "open");
    let bobs = health.health(Some("bob"), |_| true);
    let own = bobs["grep"].own.as_ref().expect("bob's breaker");
    assert_eq!(own.breaker.as_str(), "closed", "alice's failures are hers");
    assert!(health.health(None, |_| true)["grep"].own.is_none());
}

#[test]
fn a_callers_own_breaker_opening_is_noted_for_the_caller_and_left_out_of_metrics() {
    let health = ToolsHealth::default();
    let p = policy(1, 5);
    let opened = call(&health, ("grep", &p), &lowering("alice"), TIMEOUT);
    assert_eq!(opened.notes, ["caller_opened"]);
    let mut out = Exposition::new();
    health.write_prometheus(&mut out);
    let text = out.into_text();
    assert!(!text.contains("transition=\"opened\""), "{text}");
    assert!(
        text.contains("toolhost_tool_breaker_state{tool=\"grep\",state=\"closed\"} 1"),
        "{text}"
    );
}

#[test]
fn metrics_show_each_tools_state_and_count_its_transitions() {
    let health = ToolsHealth::default();
    let p = policy(1, 5);
    let nobody = Asker::default();
    call(&health, ("grep", &p), &nobody, TIMEOUT);
    call(&health, ("read", &p), &nobody, None);
    pass(Duration::from_secs(5));
    call(&health, ("grep", &p), &nobody, TIMEOUT);

    let mut out = Exposition::new();
    health.write_prometheus(&mut out);
    let text = out.into_text();
    for line in [
        "# TYPE toolhost_tool_breaker_state gauge",
        "toolhost_tool_breaker_state{tool=\"grep\",state=\"open\"} 1\n",
        "toolhost_tool_breaker_state{tool=\"read\",state=\"closed\"} 1\n",
        "# TYPE toolhost_tool_breaker_transitions_total counter",
        "toolhost_tool_breaker_transitions_total{tool=\"grep\",transition=\"opened\"} 1\n",
        "toolhost_tool_breaker_transitions_total{tool=\"grep\",transition=\"half_opened\"} 1\n",
        "toolhost_tool_breaker_transitions_total{tool=\"grep\",transition=\"reopened\"} 1\n",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }

    let mut out = Exposition::new();
    health.write_prometheus_for(&mut out, |tool| tool == "read");
    let text = out.into_text();
    assert!(text.contains("tool=\"read\""), "{text}");
    assert!(
        !text.contains("tool=\"grep\""),
        "a caller sees its own tools: {text}"
    );
}

#[test]
fn health_lists_the_called_tools_the_caller_may_see() {
    let health = ToolsHealth::default();
    let p = policy(1, 5);
    let nobody = Asker::default();
    assert!(
        health.health(None, |_| true).is_empty(),
        "nothing called yet"
    );
    call(&health, ("grep", &p), &nobody, TIMEOUT);
    call(&health, ("read", &p), &nobody, None);
    let seen = health.health(None, |tool| tool != "grep");
    assert_eq!(seen.keys().collect::<Vec<_>>(), ["read"]);
    let all = health.health(None, |_| true);
    assert_eq!(all["grep"].recent.calls, 1);
}
