//! The breaker's state machine, step by step: opening, refusing, the trial, closing and
//! reopening, per tool.

use std::time::{Duration, Instant};

use toolhost_call::call::ErrorKind::{self, *};

use super::*;

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// A default breaker (3 timeouts, 30 s) whose calls may take 10 s: trials expire after 20 s.
fn breaker() -> Breaker {
    Breaker::new(BreakerPolicy::default().with_call_timeout(s(10)))
}

/// Admit a call at `now` and record `outcome` for it; panics if it was refused.
fn call(b: &mut Breaker, now: Instant, outcome: Option<ErrorKind>) -> Option<Transition> {
    match b.admit(now).0 {
        Admission::Run(pass) | Admission::Trial(pass) => b.record(now, pass, outcome),
        Admission::Refuse(r) => panic!("refused: {r:?}"),
    }
}

fn refused(b: &mut Breaker, now: Instant) -> Suspension {
    match b.admit(now) {
        (Admission::Refuse(r), None) => r,
        other => panic!("admitted: {other:?}"),
    }
}

fn trial(b: &mut Breaker, now: Instant) -> Pass {
    match b.admit(now).0 {
        Admission::Trial(pass) => pass,
        other => panic!("not a trial: {other:?}"),
    }
}

/// Open the breaker at `t0` with three timeouts.
fn open(b: &mut Breaker, t0: Instant) {
    assert_eq!(call(b, t0, Some(Timeout)), None);
    assert_eq!(call(b, t0, Some(Timeout)), None);
    assert!(matches!(
        call(b, t0, Some(Timeout)),
        Some(Transition::Opened {
            kind: Timeout,
            failures: 3,
            ..
        })
    ));
}

#[test]
fn opens_after_three_consecutive_timeouts() {
    let (mut b, t0) = (breaker(), Instant::now());
    open(&mut b, t0);
    assert_eq!(
        b.state(t0 + s(3)),
        BreakerState::Open {
            kind: Timeout,
            failures: 3,
            open_for_s: 3,
            retry_at_in_s: 27
        }
    );
}

#[test]
fn a_success_or_an_uncounted_tool_failure_ends_the_streak() {
    let (mut b, t0) = (breaker(), Instant::now());
    for ending in [None, Some(Trap), Some(ToolFailed)] {
        call(&mut b, t0, Some(Timeout));
        call(&mut b, t0, Some(Timeout));
        call(&mut b, t0, ending);
        assert_eq!(
            b.state(t0),
            BreakerState::Closed {
                kind: None,
                failures: 0
            }
        );
    }
    assert_eq!(call(&mut b, t0, Some(Timeout)), None);
}

#[test]
fn a_counted_failure_of_another_kind_restarts_the_count() {
    let policy = BreakerPolicy::default()
        .with_kinds([Timeout, Trap])
        .unwrap();
    let (mut b, t0) = (Breaker::new(policy), Instant::now());
    call(&mut b, t0, Some(Timeout));
    call(&mut b, t0, Some(Timeout));
    call(&mut b, t0, Some(Trap));
    assert_eq!(
        b.state(t0),
        BreakerState::Closed {
            kind: Some(Trap),
            failures: 1
        }
    );
    call(&mut b, t0, Some(Trap));
    assert!(matches!(
        call(&mut b, t0, Some(Trap)),
        Some(Transition::Opened { kind: Trap, .. })
    ));
}

#[test]
fn outcomes_that_are_not_the_tools_fault_neither_count_nor_reset() {
    let (mut b, t0) = (breaker(), Instant::now());
    call(&mut b, t0, Some(Timeout));
    for kind in [
        Denied,
        InvalidInput,
        Cancelled,
        Busy,
        InputRequired,
        UnknownTool,
    ] {
        assert_eq!(call(&mut b, t0, Some(kind)), None);
    }
    call(&mut b, t0, Some(Timeout));
    assert_eq!(
        b.state(t0),
        BreakerState::Closed {
            kind: Some(Timeout),
            failures: 2
        }
    );
}

#[test]
fn refuses_at_once_while_open_saying_why_and_until_when() {
    let (mut b, t0) = (breaker(), Instant::now());
    open(&mut b, t0);
    let r = refused(&mut b, t0 + s(3));
    assert_eq!((r.kind, r.failures, r.trials), (Timeout, 3, 0));
    assert_eq!((r.since, r.retry_at, r.retry_in), (t0, t0 + s(30), s(27)));
    assert!(!r.trial_running);
    assert_eq!(b.refusal(t0 + s(3)), Some(r.clone()));
    assert_eq!(
        r.message("grep"),
        "The tool 'grep' is suspended: its last 3 calls timed out. Do not call it for 27 s: until \
         then every call is refused at once, and the first call after that is a trial that decides \
         whether it is back. Narrow the input so that it does less work: a smaller file or range, \
         fewer items, a tighter pattern."
    );
    // One moment before the end of the cool-down it still refuses.
    refused(&mut b, t0 + s(30) - Duration::from_nanos(1));
}

#[test]
fn half_opens_after_the_cool_down_and_admits_exactly_one_trial() {
    let (mut b, t0) = (breaker(), Instant::now());
    open(&mut b, t0);
    let t1 = t0 + s(30);
    assert_eq!(b.refusal(t1), None);
    let (admission, transition) = b.admit(t1);
    assert!(matches!(&admission, Admission::Trial(p) if p.is_trial()));
    assert_eq!(transition, Some(Transition::HalfOpened));
    let r = refused(&mut b, t1 + s(1));
    assert!(r.trial_running);
    assert_eq!(r.retry_at, t1 + s(20));
    assert!(r.message("grep").contains(
        "A trial call is running now and decides whether it is back: try again in a little while \
         (the trial ends within 19 s)."
    ));
    assert!(matches!(
        b.state(t1),
        BreakerState::HalfOpen {
            trial_running: true,
            ..
        }
    ));
    drop(admission);
}

#[test]
fn a_successful_trial_closes_the_breaker() {
    let (mut b, t0) = (breaker(), Instant::now());
    open(&mut b, t0);
    let pass = trial(&mut b, t0 + s(30));
    assert_eq!(
        b.record(t0 + s(31), pass, None),
        Some(Transition::Closed {
            suspended_for: s(31),
            trials: 1
        })
    );
    assert_eq!(
        b.state(t0 + s(31)),
        BreakerState::Closed {
            kind: None,
            failures: 0
        }
    );
    assert!(matches!(b.admit(t0 + s(31)).0, Admission::Run(ref p) if !p.is_trial()));
    // The count starts afresh: two timeouts do not reopen it.
    call(&mut b, t0 + s(32), Some(Timeout));
    assert_eq!(call(&mut b, t0 + s(32), Some(Timeout)), None);
}

#[test]
fn a_failed_trial_reopens_for_twice_the_pause_up_to_eight_times() {
    let (mut b, t0) = (breaker(), Instant::now());
    open(&mut b, t0);
    let mut now = t0;
    let mut pause = s(30);
    for n in 1..=5u32 {
        now += pause;
        let pass = trial(&mut b, now);
        pause = (pause * 2).min(s(240));
        assert_eq!(
            b.record(now, pass, Some(Timeout)),
            Some(Transition::Reopened {
                kind: Timeout,
                failures: 3 + n,
                trials: n,
                cool_down: pause,
                until: now + pause
            })
        );
        assert_eq!(refused(&mut b, now).retry_in, pause);
    }
    assert_eq!(pause, s(240));
    let r = refused(&mut b, now + s(1));
    assert_eq!(r.since, t0);
    assert!(
        r.message("grep").starts_with(
            "The tool 'grep' is suspended: its last 8 calls timed out, the last 5 of them trials \
             after pauses. Do not call it for 4 min:"
        ),
        "{}",
        r.message("grep")
    );
}

#[test]
fn a_trial_failing_another_way_reopens_under_that_kind() {
    let policy = BreakerPolicy::default()
        .with_kinds([Timeout, Trap])
        .unwrap();
    let (mut b, t0) = (Breaker::new(policy), Instant::now());
    for _ in 0..3 {
        call(&mut b, t0, Some(Timeout));
    }
    let pass = trial(&mut b, t0 + s(30));
    b.record(t0 + s(30), pass, Some(Trap)).unwrap();
    let r = refused(&mut b, t0 + s(30));
    assert_eq!((r.kind, r.failures, r.trials), (Trap, 1, 1));
    // Two trials in all: the second one closes it.
    let pass = trial(&mut b, t0 + s(90));
    assert_eq!(
        b.record(t0 + s(90), pass, None),
        Some(Transition::Closed {
            suspended_for: s(90),
            trials: 2
        })
    );
    assert!(
        r.message("x")
            .contains("its trial call after a pause crashed. ")
    );
    assert!(
        r.message("x")
            .ends_with("try a different input, or another tool.")
    );
}

#[test]
fn a_trial_ended_by_the_caller_frees_the_slot_without_deciding() {
    let (mut b, t0) = (breaker(), Instant::now());
    open(&mut b, t0);
    for kind in [Denied, Cancelled] {
        let pass = trial(&mut b, t0 + s(30));
        assert_eq!(b.record(t0 + s(31), pass, Some(kind)), None);
        assert!(matches!(
            b.state(t0 + s(31)),
            BreakerState::HalfOpen {
                trial_running: false,
                ..
            }
        ));
    }
    // The next call is the trial at once, and no new half-open transition is reported.
    let (admission, transition) = b.admit(t0 + s(32));
    assert!(matches!(admission, Admission::Trial(_)));
    assert_eq!(transition, None);
}

#[test]
fn an_abandoned_trial_does_not_wedge_the_breaker() {
    let (mut b, t0) = (breaker(), Instant::now());
    open(&mut b, t0);
    let t1 = t0 + s(30);
    let lost = trial(&mut b, t1);
    refused(&mut b, t1 + s(19));
    // The trial's slot expires after the call timeout (10 s) and the grace (10 s).
    let pass = trial(&mut b, t1 + s(20));
    // The abandoned trial's late report is ignored; the new trial decides.
    assert_eq!(b.record(t1 + s(21), lost, Some(Timeout)), None);
    assert!(matches!(
        b.record(t1 + s(21), pass, None),
        Some(Transition::Closed { .. })
    ));
}

#[test]
fn calls_in_flight_when_it_opens_are_ignored_when_they_end() {
    let (mut b, t0) = (breaker(), Instant::now());
    let (Admission::Run(late_failure), _) = b.admit(t0) else {
        panic!()
    };
    let (Admission::Run(late_success), _) = b.admit(t0) else {
        panic!()
    };
    open(&mut b, t0);
    assert_eq!(b.record(t0 + s(1), late_failure, Some(Timeout)), None);
    assert_eq!(b.record(t0 + s(1), late_success, None), None);
    assert_eq!(refused(&mut b, t0 + s(1)).retry_at, t0 + s(30));
}

#[test]
fn a_disabled_breaker_runs_everything_and_counts_nothing() {
    let (mut b, t0) = (breaker(), Instant::now());
    b.set_policy(BreakerPolicy::default().with_enabled(false));
    for _ in 0..10 {
        assert_eq!(call(&mut b, t0, Some(Timeout)), None);
    }
    assert_eq!(b.state(t0), BreakerState::Disabled);
    assert_eq!(
        serde_json::to_value(b.state(t0)).unwrap(),
        serde_json::json!({"state": "disabled"})
    );
    // Disabling an open breaker closes it.
    let mut b = breaker();
    open(&mut b, t0);
    b.set_policy(BreakerPolicy::default().with_enabled(false));
    assert!(matches!(b.admit(t0).0, Admission::Run(_)));
}

#[test]
fn serializes_the_state_for_health() {
    let (mut b, t0) = (breaker(), Instant::now());
    call(&mut b, t0, Some(Timeout));
    assert_eq!(
        serde_json::to_value(b.state(t0)).unwrap(),
        serde_json::json!({"state": "closed", "kind": "timeout", "failures": 1})
    );
    call(&mut b, t0, Some(Timeout));
    call(&mut b, t0, Some(Timeout));
    assert_eq!(
        serde_json::to_value(b.state(t0 + Duration::from_millis(2500))).unwrap(),
        serde_json::json!({"state": "open", "kind": "timeout", "failures": 3, "open_for_s": 3, "retry_at_in_s": 28})
    );
    assert_eq!(b.state(t0 + s(30)).as_str(), "half_open");
}

#[test]
fn tools_are_suspended_one_by_one() {
    let (mut all, t0) = (Breakers::default(), Instant::now());
    let policy = BreakerPolicy::default();
    for _ in 0..3 {
        let h = all.tool("slow", &policy);
        let (Admission::Run(pass), _) = h.admit(t0) else {
            panic!()
        };
        let _ = h.record("slow", t0, pass, Some(Timeout));
        let h = all.tool("fast", &policy);
        let (Admission::Run(pass), _) = h.admit(t0) else {
            panic!()
        };
        assert_eq!(h.record("fast", t0, pass, None), Recorded::default());
    }
    assert!(matches!(
        all.tool("slow", &policy).admit(t0).0,
        Admission::Refuse(_)
    ));
    assert!(matches!(
        all.tool("fast", &policy).admit(t0).0,
        Admission::Run(_)
    ));
    let health = all.health(t0);
    assert_eq!(health["slow"].breaker.as_str(), "open");
    assert_eq!(health["fast"].breaker.as_str(), "closed");
    assert_eq!(health["slow"].recent.failures, 3);
    all.retain(|name| name != "slow");
    assert!(all.get("slow").is_none() && all.get("fast").is_some());
}

#[test]
fn the_third_failure_opens_the_breaker_and_brings_advice() {
    let (mut health, t0) = (ToolHealth::new(BreakerPolicy::default()), Instant::now());
    let mut last = Recorded::default();
    for _ in 0..3 {
        let (Admission::Run(pass), _) = health.admit(t0) else {
            panic!()
        };
        last = health.record("grep", t0, pass, Some(Timeout));
    }
    assert!(matches!(last.transition, Some(Transition::Opened { .. })));
    assert!(
        last.advice
            .unwrap()
            .starts_with("The tool 'grep' failed 3 of its last 3 calls (3 timed out).")
    );
}

#[test]
fn a_new_policy_keeps_the_suspension_and_drops_an_uncounted_streak() {
    let (mut all, t0) = (Breakers::default(), Instant::now());
    let timeouts = BreakerPolicy::default();
    let traps = BreakerPolicy::default().with_kinds([Trap]).unwrap();
    let h = all.tool("x", &timeouts);
    let (Admission::Run(pass), _) = h.admit(t0) else {
        panic!()
    };
    let _ = h.record("x", t0, pass, Some(Timeout));
    let h = all.tool("x", &traps);
    assert_eq!(h.breaker().policy(), &traps);
    assert_eq!(
        h.health(t0).breaker,
        BreakerState::Closed {
            kind: None,
            failures: 0
        }
    );
}
