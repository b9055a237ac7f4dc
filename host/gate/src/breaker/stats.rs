//! [`FailureStats`]: one tool's last [`WINDOW`] outcomes, and the sentence that tells a model the
//! tool has been failing, when that helps it choose its next call.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;
use toolhost_call::call::ErrorKind;

use super::advice::{remedy, verb};

/// How many of a tool's latest calls are kept.
pub const WINDOW: usize = 10;

/// How many failures among them make the statistics worth telling the model. Below this, one or
/// two failures are news the error result already carries; at 3 of 10 (30 %) a pattern begins
/// that the model can act on, by changing its input or choosing another tool.
pub const MIN_FAILURES: usize = 3;

/// One tool's recent outcomes: successes and failures that say something about the tool
/// ([`ErrorKind::is_tool_fault`]). Denied, invalid, cancelled or refused calls are not kept: they
/// say nothing about whether the tool works, and would read as "the tool failed".
#[derive(Debug, Clone, Default)]
pub struct FailureStats {
    /// Oldest first; `None` is a success.
    window: VecDeque<Option<ErrorKind>>,
}

/// [`FailureStats`] at a glance, for `/health`: `{"calls":10,"failures":5,"kinds":{"timeout":4,"trap":1}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecentCalls {
    /// Calls kept, at most [`WINDOW`].
    pub calls: usize,
    /// Failures among them.
    pub failures: usize,
    /// Failures by kind.
    pub kinds: BTreeMap<ErrorKind, usize>,
}

impl FailureStats {
    /// Keep the outcome of a call: `None` for a success, else its kind. Kinds that are not the
    /// tool's fault are dropped.
    pub fn record(&mut self, outcome: Option<ErrorKind>) {
        if outcome.is_some_and(|k| !k.is_tool_fault()) {
            return;
        }
        if self.window.len() == WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(outcome);
    }

    /// The counts, for `/health` and metrics.
    pub fn recent(&self) -> RecentCalls {
        let mut kinds = BTreeMap::new();
        for kind in self.window.iter().flatten() {
            *kinds.entry(*kind).or_default() += 1;
        }
        RecentCalls {
            calls: self.window.len(),
            failures: kinds.values().sum(),
            kinds,
        }
    }

    /// The sentence for the model when `tool` failed at least [`MIN_FAILURES`] of its last
    /// [`WINDOW`] calls, with the failures by kind, the most frequent first (ties: the most recent),
    /// and what to change for that kind, e.g. "The tool 'grep' failed 5 of its last 10 calls
    /// (4 timed out, 1 crashed). Narrow the input so that it does less work: …". `None` below the
    /// threshold.
    pub fn advice(&self, tool: &str) -> Option<String> {
        // Every failure of a failing tool asks for this sentence, so it is counted in place: each
        // kind once, with its count and its latest place in the window (at most WINDOW kinds).
        let mut kinds = [(ErrorKind::Trap, 0, 0); WINDOW];
        let (mut distinct, mut failures) = (0, 0);
        for (at, kind) in self.window.iter().enumerate() {
            let Some(kind) = *kind else { continue };
            failures += 1;
            match kinds[..distinct].iter_mut().find(|(k, ..)| *k == kind) {
                Some((_, n, last)) => (*n, *last) = (*n + 1, at),
                None => {
                    kinds[distinct] = (kind, 1, at);
                    distinct += 1;
                }
            }
        }
        if failures < MIN_FAILURES {
            return None;
        }
        let kinds = &mut kinds[..distinct];
        // The most frequent first; ties, the most recent first.
        kinds.sort_unstable_by_key(|&(_, n, last)| std::cmp::Reverse((n, last)));
        // Pushed piece by piece: `format!` took most of a failed call's bookkeeping (issue 20).
        let mut count = itoa::Buffer::new();
        let mut text = String::with_capacity(200 + tool.len());
        text.push_str("The tool '");
        text.push_str(tool);
        text.push_str("' failed ");
        text.push_str(count.format(failures));
        text.push_str(" of its last ");
        text.push_str(count.format(self.window.len()));
        text.push_str(" calls (");
        for (i, (kind, n, _)) in kinds.iter().enumerate() {
            if i > 0 {
                text.push_str(", ");
            }
            text.push_str(count.format(*n));
            text.push(' ');
            text.push_str(verb(*kind));
        }
        text.push_str("). ");
        text.push_str(remedy(kinds[0].0));
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(outcomes: &[Option<ErrorKind>]) -> FailureStats {
        let mut s = FailureStats::default();
        for o in outcomes {
            s.record(*o);
        }
        s
    }

    const T: Option<ErrorKind> = Some(ErrorKind::Timeout);
    const TRAP: Option<ErrorKind> = Some(ErrorKind::Trap);

    #[test]
    fn says_nothing_below_three_failures() {
        assert_eq!(stats(&[T, T]).advice("grep"), None);
        assert_eq!(stats(&[T, None, T, None, None]).advice("grep"), None);
        assert_eq!(stats(&[]).advice("grep"), None);
    }

    #[test]
    fn tells_how_often_and_how_the_tool_failed_and_what_to_change() {
        let s = stats(&[None, T, T, None, TRAP, None, T, None, T, None]);
        assert_eq!(
            s.advice("grep").unwrap(),
            "The tool 'grep' failed 5 of its last 10 calls (4 timed out, 1 crashed). Narrow the \
             input so that it does less work: a smaller file or range, fewer items, a tighter pattern."
        );
        let s = stats(&[Some(ErrorKind::MemoryLimit); 3]);
        assert_eq!(
            s.advice("q").unwrap(),
            "The tool 'q' failed 3 of its last 3 calls (3 hit the memory limit). Ask for less \
             data at once: a smaller range, a filter, one page at a time."
        );
    }

    #[test]
    fn a_tie_is_broken_by_the_most_recent_failure() {
        let s = stats(&[T, TRAP, T, TRAP]);
        let advice = s.advice("x").unwrap();
        assert!(advice.contains("(2 crashed, 2 timed out)"), "{advice}");
        assert!(
            advice.contains("The fault is likely in the tool"),
            "{advice}"
        );
    }

    #[test]
    fn keeps_only_the_last_ten_tool_outcomes() {
        let mut s = stats(&[T, T, T]);
        for _ in 0..8 {
            s.record(None);
        }
        // The first timeout has left the window.
        assert_eq!(s.recent().calls, WINDOW);
        assert_eq!(s.recent().failures, 2);
        assert_eq!(s.advice("x"), None);
        for kind in [
            ErrorKind::Denied,
            ErrorKind::Cancelled,
            ErrorKind::Suspended,
        ] {
            s.record(Some(kind));
        }
        assert_eq!(s.recent().failures, 2);
    }

    #[test]
    fn serializes_the_counts_by_kind() {
        let s = stats(&[T, None, TRAP]);
        assert_eq!(
            serde_json::to_value(s.recent()).unwrap(),
            serde_json::json!({"calls": 3, "failures": 2, "kinds": {"timeout": 1, "trap": 1}})
        );
    }
}
