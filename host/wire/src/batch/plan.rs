//! Splits a batch into the groups it runs in, in order. Pure: it sees only whether each call may
//! share its time with others.
//!
//! Consecutive calls that may run concurrently form one group, up to a limit; any other call is a
//! group of its own, so it starts after everything before it has finished and finishes before
//! anything after it starts. `[read a, read b, write c, read d]` runs as `{a, b}`, `{c}`, `{d}`.

use std::ops::Range;

/// Whether a call may overlap other calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// A read-only tool, or a call that runs nothing (it is answered with an error at once).
    Shared,
    /// Anything else: it runs alone.
    Exclusive,
}

/// The groups of a batch of calls, as ranges of call indices, in order: every index once. A limit
/// of 0 is taken as 1.
pub fn partition(calls: &[Sharing], limit: usize) -> Vec<Range<usize>> {
    let limit = limit.max(1);
    let mut groups: Vec<Range<usize>> = Vec::new();
    for (i, sharing) in calls.iter().enumerate() {
        let joins_last = *sharing == Sharing::Shared
            && i > 0
            && calls[i - 1] == Sharing::Shared
            && groups.last().is_some_and(|g| g.len() < limit);
        match groups.last_mut() {
            Some(last) if joins_last => last.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::Sharing::{Exclusive as W, Shared as R};
    use super::*;

    #[test]
    fn groups_consecutive_shared_calls_and_isolates_the_others() {
        assert_eq!(partition(&[R, R, W, R], 10), vec![0..2, 2..3, 3..4]);
        assert_eq!(partition(&[W, W], 10), vec![0..1, 1..2]);
        assert_eq!(
            partition(&[R, W, R, R, R, W], 10),
            vec![0..1, 1..2, 2..5, 5..6]
        );
        assert_eq!(partition(&[], 10), Vec::<Range<usize>>::new());
    }

    #[test]
    fn splits_long_runs_at_the_limit() {
        assert_eq!(partition(&[R; 7], 3), vec![0..3, 3..6, 6..7]);
        assert_eq!(partition(&[R, R], 0), vec![0..1, 1..2]);
        assert_eq!(partition(&[R, R], 1), vec![0..1, 1..2]);
    }

    #[test]
    fn covers_every_call_once_in_order() {
        let calls: Vec<Sharing> = (0..50).map(|i| if i % 7 == 3 { W } else { R }).collect();
        let groups = partition(&calls, 4);
        let flat: Vec<usize> = groups.iter().flat_map(|g| g.clone()).collect();
        assert_eq!(flat, (0..50).collect::<Vec<_>>());
        for g in &groups {
            assert!(g.len() <= 4);
            assert!(g.len() == 1 || g.clone().all(|i| calls[i] == R));
        }
    }
}
