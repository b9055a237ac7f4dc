//! Tools that learn from failure: a circuit breaker per tool ([`Breaker`]), its policy
//! ([`BreakerPolicy`], from `[breaker]` in the config), the recent failures of each tool
//! ([`FailureStats`]), and the sentences that tell a model about them. Pure: the host passes the
//! time in, holds the lock, and writes the audit lines and metrics the [`Transition`]s call for.
//!
//! The life of one call, for the host (through [`Breakers`] or a [`ToolHealth`] directly):
//!
//! 1. [`ToolHealth::admit`] at `now`: [`Admission::Refuse`] is answered at once as
//!    [`ErrorKind::Suspended`] with [`Suspension::message`], and
//!    nothing is recorded; [`Admission::Run`] or [`Admission::Trial`] hands out a [`Pass`].
//!    Admit next to the concurrency check, after the gate: a trial then lasts no longer than the
//!    call itself (its slot expires after the tool's timeout plus [`TRIAL_GRACE`]). To refuse
//!    before asking a person to approve a call, check [`Breaker::refusal`] first.
//! 2. [`ToolHealth::record`] with the pass and the outcome: its
//!    [`transition`](Recorded::transition) is the moment for an audit line and a metric, its
//!    [`advice`](Recorded::advice) is appended to the error result the model gets.
//!
//! A breaker counts N consecutive failures *of the same kind* among the kinds its policy names
//! (by default 3 timeouts). A success, or a failure of the tool the policy does not count, ends the
//! streak; a counted failure of another kind starts a new one. Outcomes that say nothing about the
//! tool (denied, invalid input, cancelled, ...: [`ErrorKind::is_tool_fault`]) neither count nor end
//! a streak.

mod advice;
mod circuit;
mod health;
#[cfg(test)]
mod invariants;
mod own;
mod policy;
mod stats;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use serde::Serialize;
use toolhost_call::call::ErrorKind;

pub use self::circuit::{Admission, Breaker, Pass};
pub use self::health::{Breakers, Health, Recorded, ToolHealth};
pub use self::own::{Admitted, Lowered, Passes, Reported, Whose};
pub use self::policy::{
    BreakerPolicy, MAX_BACKOFF_FACTOR, MAX_COOL_DOWN, MAX_FAILURES, MIN_COOL_DOWN, PolicyError,
    TRIAL_GRACE,
};
pub use self::stats::{FailureStats, MIN_FAILURES, RecentCalls, WINDOW};

/// Why a tool is suspended and until when: the answer to a refused call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suspension {
    /// The kind of the latest failure.
    pub kind: ErrorKind,
    /// Consecutive failures of that kind, trials included.
    pub failures: u32,
    /// Failed trial calls among them.
    pub trials: u32,
    /// When the breaker opened.
    pub since: Instant,
    /// When the next call may run: the end of the cool-down, or the latest a running trial
    /// reports. Always after the moment of the refusal.
    pub retry_at: Instant,
    /// `retry_at`, from the moment of the refusal.
    pub retry_in: Duration,
    /// A trial call is running now, and decides whether the tool is back.
    pub trial_running: bool,
}

impl Suspension {
    /// The error text for the model: what is suspended, why, when to call again, and what to
    /// change. E.g. "The tool 'grep' is suspended: its last 3 calls timed out. Do not call it for
    /// 27 s: until then every call is refused at once, and the first call after that is a trial
    /// that decides whether it is back. Narrow the input so that it does less work: …"
    pub fn message(&self, tool: &str) -> String {
        let why = advice::why(self.kind, self.failures, self.trials);
        let wait = advice::span(self.retry_in);
        let remedy = advice::remedy(self.kind);
        if self.trial_running {
            format!(
                "The tool '{tool}' is suspended: {why}. A trial call is running now and decides \
                 whether it is back: try again in a little while (the trial ends within {wait}). {remedy}"
            )
        } else {
            format!(
                "The tool '{tool}' is suspended: {why}. Do not call it for {wait}: until then every \
                 call is refused at once, and the first call after that is a trial that decides \
                 whether it is back. {remedy}"
            )
        }
    }
}

impl Suspension {
    /// The error text for the model when `whose` breaker refused: [`Self::message`], and for the
    /// caller's own breaker a sentence saying that only this caller's calls are refused, and why.
    pub fn message_for(&self, tool: &str, whose: Whose) -> String {
        let mut text = self.message(tool);
        if whose == Whose::Own {
            text.push_str(
                " Only your calls are refused: they run under lower limits than the tool's own \
                 (your access profile sets them), and those limits ended them.",
            );
        }
        text
    }
}

/// A change of a breaker's state: the moment to write an audit line and update metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// Closed to open: `failures` consecutive failures of `kind`; calls are refused until `until`.
    Opened {
        /// The kind that failed.
        kind: ErrorKind,
        /// How many in a row (the policy's count).
        failures: u32,
        /// The pause.
        cool_down: Duration,
        /// When it ends.
        until: Instant,
    },
    /// Open to half-open: the cool-down passed and the call just admitted is the trial.
    HalfOpened,
    /// Half-open to open: the trial failed; the pause doubled (up to its cap).
    Reopened {
        /// The kind the trial failed with.
        kind: ErrorKind,
        /// Consecutive failures of that kind, trials included.
        failures: u32,
        /// Failed trials among them.
        trials: u32,
        /// The new pause.
        cool_down: Duration,
        /// When it ends.
        until: Instant,
    },
    /// Half-open to closed: the trial succeeded (or failed in a way the policy does not count).
    Closed {
        /// From the opening to now.
        suspended_for: Duration,
        /// Trial calls it took, the successful one included.
        trials: u32,
    },
}

impl Transition {
    /// The stable name for audit lines and metrics: `opened`, `half_opened`, `reopened`, `closed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Opened { .. } => "opened",
            Self::HalfOpened => "half_opened",
            Self::Reopened { .. } => "reopened",
            Self::Closed { .. } => "closed",
        }
    }
}

/// A breaker's state at a moment, for `/health`:
/// `{"state":"open","kind":"timeout","failures":3,"open_for_s":3,"retry_at_in_s":27}`.
/// Seconds are whole, rounded up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum BreakerState {
    /// The policy turned the breaker off: every call runs.
    Disabled,
    /// Calls run; `failures` consecutive counted failures of `kind` so far.
    Closed {
        /// The kind of the current streak, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<ErrorKind>,
        /// Its length; 0 without one.
        failures: u32,
    },
    /// Calls are refused.
    Open {
        /// The kind of the latest failure.
        kind: ErrorKind,
        /// Consecutive failures of that kind.
        failures: u32,
        /// Since the breaker opened.
        open_for_s: u64,
        /// Until the next call may run as a trial.
        retry_at_in_s: u64,
    },
    /// The cool-down has passed: the next call, or the one running, is the trial.
    HalfOpen {
        /// The kind of the latest failure.
        kind: ErrorKind,
        /// Consecutive failures of that kind.
        failures: u32,
        /// Since the breaker opened.
        open_for_s: u64,
        /// Whether the trial call is running.
        trial_running: bool,
    },
}

impl BreakerState {
    /// The stable name for metrics: `disabled`, `closed`, `open`, `half_open`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Closed { .. } => "closed",
            Self::Open { .. } => "open",
            Self::HalfOpen { .. } => "half_open",
        }
    }
}
