//! The words a model reads about a failing tool: why it is suspended and when to call it again
//! ([`Suspension::message`](super::Suspension::message)), how often it failed lately
//! ([`FailureStats::advice`](super::FailureStats::advice)), and what to change in the next call.
//! Complete sentences, no instants: a model has no clock, so times are spans from now.

use std::time::Duration;

use toolhost_call::call::ErrorKind;

/// What calls of `kind` did, after "N calls": "timed out", "crashed".
pub(super) fn verb(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Timeout => "timed out",
        ErrorKind::OutOfFuel => "ran out of fuel",
        ErrorKind::MemoryLimit => "hit the memory limit",
        ErrorKind::Trap => "crashed",
        ErrorKind::ToolFailed => "reported an error",
        ErrorKind::BadOutput => "returned output that broke the tool's own schema",
        ErrorKind::Internal => "failed inside toolhost",
        // Never counted (`ErrorKind::is_tool_fault`), named for completeness.
        _ => "failed",
    }
}

/// What the model should change after failures mostly of `kind`: one sentence.
pub(super) fn remedy(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Timeout | ErrorKind::OutOfFuel => {
            "Narrow the input so that it does less work: a smaller file or range, fewer items, a tighter pattern."
        }
        ErrorKind::MemoryLimit => {
            "Ask for less data at once: a smaller range, a filter, one page at a time."
        }
        ErrorKind::Trap => {
            "The fault is likely in the tool: try a different input, or another tool."
        }
        ErrorKind::ToolFailed => "Read its error messages and correct the input.",
        ErrorKind::BadOutput => {
            "The fault is in the tool, not in your input: use another tool if you can."
        }
        _ => "The fault is not in your input: try again later, or use another tool.",
    }
}

/// A span from now as a model reads it, never shorter than the truth: "27 s", "5 min".
pub(super) fn span(d: Duration) -> String {
    let secs = (d.as_secs_f64().ceil() as u64).max(1);
    if secs < 120 {
        format!("{secs} s")
    } else {
        format!("{} min", secs.div_ceil(60))
    }
}

/// "its last 3 calls timed out", with the failed trials among them when there were any.
pub(super) fn why(kind: ErrorKind, failures: u32, trials: u32) -> String {
    let verb = verb(kind);
    match (failures, trials) {
        (1, 0) => format!("its last call {verb}"),
        (n, 0) => format!("its last {n} calls {verb}"),
        (1, _) => format!("its trial call after a pause {verb}"),
        (n, t) if t >= n => format!("its last {n} calls {verb}, each a trial after a pause"),
        (n, 1) => format!("its last {n} calls {verb}, the last one a trial after a pause"),
        (n, t) => format!("its last {n} calls {verb}, the last {t} of them trials after pauses"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_round_up_and_switch_to_minutes() {
        assert_eq!(span(Duration::from_millis(1)), "1 s");
        assert_eq!(span(Duration::from_millis(26_001)), "27 s");
        assert_eq!(span(Duration::from_secs(119)), "119 s");
        assert_eq!(span(Duration::from_secs(120)), "2 min");
        assert_eq!(span(Duration::from_secs(121)), "3 min");
    }

    #[test]
    fn says_why_with_the_trials_among_the_failures() {
        let t = ErrorKind::Timeout;
        assert_eq!(why(t, 1, 0), "its last call timed out");
        assert_eq!(why(t, 3, 0), "its last 3 calls timed out");
        assert_eq!(
            why(ErrorKind::Trap, 1, 1),
            "its trial call after a pause crashed"
        );
        assert_eq!(
            why(t, 4, 1),
            "its last 4 calls timed out, the last one a trial after a pause"
        );
        assert_eq!(
            why(t, 5, 2),
            "its last 5 calls timed out, the last 2 of them trials after pauses"
        );
        assert_eq!(
            why(t, 2, 2),
            "its last 2 calls timed out, each a trial after a pause"
        );
    }
}
