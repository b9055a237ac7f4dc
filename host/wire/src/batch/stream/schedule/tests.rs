use proptest::prelude::*;

use super::Sharing::{Exclusive as W, Shared as R};
use super::*;
use crate::batch::partition;

#[test]
fn reads_start_together_up_to_the_limit_and_a_write_waits_for_them() {
    let mut s = Schedule::new(2);
    assert_eq!(s.arrive(0, R), vec![0]);
    assert_eq!(s.arrive(1, R), vec![1]);
    assert_eq!(s.arrive(2, R), Vec::<usize>::new());
    assert_eq!(s.arrive(3, W), Vec::<usize>::new());
    // A finished read makes room for the next one, not for the write.
    assert_eq!(s.finish(0), vec![2]);
    assert_eq!(s.finish(2), Vec::<usize>::new());
    assert_eq!(s.finish(1), vec![3]);
    // Nothing starts beside a write.
    assert_eq!(s.arrive(4, R), Vec::<usize>::new());
    assert_eq!(s.finish(3), vec![4]);
    assert_eq!((s.running(), s.started()), (1, 5));
}

#[test]
fn a_call_waits_for_the_calls_before_it_to_arrive() {
    let mut s = Schedule::new(10);
    assert_eq!(s.arrive(1, R), Vec::<usize>::new());
    assert_eq!(s.arrive(2, R), Vec::<usize>::new());
    assert_eq!(s.arrive(0, R), vec![0, 1, 2]);
}

#[test]
fn repeated_and_unknown_indices_are_ignored() {
    let mut s = Schedule::new(0);
    assert_eq!(s.arrive(0, W), vec![0]);
    assert_eq!(s.arrive(0, R), Vec::<usize>::new());
    assert_eq!(s.finish(7), Vec::<usize>::new());
    assert_eq!(s.arrive(1, R), Vec::<usize>::new());
    assert_eq!(s.finish(0), vec![1]);
    assert_eq!(s.finish(0), Vec::<usize>::new());
    assert_eq!(s.running(), 1);
}

/// Drives a schedule through one random order of arrivals and finishes, checking the rule after
/// every step. `choices` picks, at each step, between arriving the next call of `order` and
/// finishing one of the running calls.
fn check(calls: &[Sharing], limit: usize, order: &[usize], choices: &[usize]) {
    let mut s = Schedule::new(limit);
    let together = partition(calls, usize::MAX);
    let group = |i: usize| together.iter().position(|g| g.contains(&i));
    let mut started: Vec<bool> = vec![false; calls.len()];
    let mut finished: Vec<bool> = vec![false; calls.len()];
    let mut running: Vec<usize> = Vec::new();
    let mut arrivals = order.iter().copied();
    let mut choices = choices.iter().copied().cycle();
    let mut pending_arrivals = order.len();
    loop {
        let pick = choices.next().unwrap_or(0);
        let arrive = pending_arrivals > 0 && (running.is_empty() || pick % 2 == 0);
        let now = if arrive {
            pending_arrivals -= 1;
            let i = arrivals.next().unwrap();
            s.arrive(i, calls[i])
        } else if !running.is_empty() {
            let i = running.remove(pick % running.len());
            finished[i] = true;
            s.finish(i)
        } else {
            break;
        };
        for &i in &now {
            // In index order, after every earlier call started.
            assert!(!started[i], "{i} started twice");
            assert!(
                started[..i].iter().all(|s| *s),
                "{i} started before an earlier call"
            );
            if calls[i] == W {
                assert!(
                    finished[..i].iter().all(|f| *f),
                    "write {i} started beside earlier calls"
                );
            }
            started[i] = true;
            running.push(i);
        }
        // Never more than the limit; a write runs alone; calls that run together are reads
        // `partition` would put in one group, were there no limit.
        assert!(running.len() <= limit.max(1), "{running:?}");
        if running.iter().any(|&i| calls[i] == W) {
            assert_eq!(running.len(), 1, "a write runs beside {running:?}");
        }
        for &i in &running {
            assert_eq!(group(i), group(running[0]), "{running:?} cross a write");
        }
        assert_eq!(s.running(), running.len());
    }
    // Every call started once all arrived and all running ones finished.
    assert!(started.iter().all(|s| *s), "{started:?}");
    assert_eq!(s.started(), calls.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn any_arrival_and_finish_order_keeps_the_rule(
        (calls, order) in prop::collection::vec(prop_oneof![3 => Just(R), 1 => Just(W)], 0..24)
            .prop_flat_map(|calls| {
                let n = calls.len();
                (Just(calls), Just((0..n).collect::<Vec<_>>()).prop_shuffle())
            }),
        limit in 0usize..5,
        choices in prop::collection::vec(0usize..1000, 1..64),
    ) {
        check(&calls, limit, &order, &choices);
    }
}
