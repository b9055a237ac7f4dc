//! The breaker's invariants over random sequences of waits, admissions, outcomes and dropped
//! passes, checked against a model of the streak.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use toolhost_call::call::ErrorKind::{self, *};

use super::*;

#[derive(Debug, Clone)]
enum Step {
    Wait(u64),
    Admit,
    /// Report the outcome of the held pass at this index (modulo their number), or drop it.
    Report(usize, Option<ErrorKind>),
    Drop(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let kind = prop_oneof![
        Just(None),
        Just(Some(Timeout)),
        Just(Some(Trap)),
        Just(Some(ToolFailed)),
        Just(Some(Denied)),
        Just(Some(Cancelled)),
    ];
    prop_oneof![
        (0u64..40_000).prop_map(Step::Wait),
        Just(Step::Admit),
        Just(Step::Admit),
        (any::<usize>(), kind).prop_map(|(i, k)| Step::Report(i, k)),
        any::<usize>().prop_map(Step::Drop),
    ]
}

proptest! {
    /// Never two trials in flight; a refusal is always for later; the breaker opens only on the
    /// policy's count of consecutive counted failures of one kind, as a model of it says.
    #[test]
    fn invariants_hold_for_any_sequence(steps in proptest::collection::vec(step(), 1..200)) {
        let policy = BreakerPolicy::default().with_kinds([Timeout, Trap]).unwrap().with_call_timeout(Duration::from_secs(5));
        let mut b = Breaker::new(policy);
        let mut now = Instant::now();
        let mut held: Vec<Pass> = Vec::new();
        // The model: the current streak of counted failures (by calls admitted while closed).
        let mut streak: Option<(ErrorKind, u32)> = None;
        for step in steps {
            match step {
                Step::Wait(ms) => now += Duration::from_millis(ms),
                Step::Admit => match b.admit(now).0 {
                    Admission::Refuse(r) => {
                        prop_assert!(r.retry_at > now && r.retry_in > Duration::ZERO);
                        prop_assert!(b.refusal(now).is_some());
                    }
                    Admission::Run(pass) | Admission::Trial(pass) => {
                        if pass.is_trial() {
                            let trials = held.iter().filter(|p| p.is_trial() && b.is_current(p)).count();
                            prop_assert_eq!(trials, 0, "a second trial while one is in flight");
                        }
                        held.push(pass);
                    }
                },
                Step::Report(i, outcome) if !held.is_empty() => {
                    let pass = held.swap_remove(i % held.len());
                    let closed_and_current = matches!(b.state(now), BreakerState::Closed { .. }) && b.is_current(&pass);
                    let transition = b.record(now, pass, outcome);
                    if closed_and_current {
                        let counted = outcome.filter(|k| matches!(k, Timeout | Trap));
                        let is_fault = outcome.is_none_or(ErrorKind::is_tool_fault);
                        streak = match (counted, streak) {
                            (Some(k), Some((s, n))) if s == k => Some((k, n + 1)),
                            (Some(k), _) => Some((k, 1)),
                            (None, s) if !is_fault => s,
                            (None, _) => None,
                        };
                        let opens = streak.is_some_and(|(_, n)| n == 3);
                        let opened = matches!(transition, Some(Transition::Opened { .. }));
                        prop_assert_eq!(opened, opens);
                        if opens {
                            streak = None;
                        }
                    } else {
                        let opened = matches!(transition, Some(Transition::Opened { .. }));
                        prop_assert!(!opened);
                    }
                    if matches!(transition, Some(Transition::Closed { .. })) {
                        streak = None;
                    }
                }
                Step::Report(..) => {}
                Step::Drop(i) if !held.is_empty() => {
                    drop(held.swap_remove(i % held.len()));
                }
                Step::Drop(_) => {}
            }
            // Closed shows the model's streak.
            if let BreakerState::Closed { kind, failures } = b.state(now) {
                prop_assert_eq!((kind, failures), streak.map_or((None, 0), |(k, n)| (Some(k), n)));
            }
        }
    }
}
