//! [`BreakerPolicy`]: when one tool's breaker opens and how long it stays open. Checked when it is
//! built, so a policy that counts a kind the tool cannot be blamed for, or pauses for no time or
//! for days, cannot exist; `config` builds it from `[breaker]` and reports a [`PolicyError`] as a
//! config error.

use std::collections::BTreeSet;
use std::num::NonZeroU32;
use std::time::Duration;

use toolhost_call::call::ErrorKind;

/// The most consecutive failures a policy may wait for: beyond this the breaker would never open.
pub const MAX_FAILURES: u32 = 100;

/// The shortest cool-down: a breaker that reopens at once only adds a refusal per call.
pub const MIN_COOL_DOWN: Duration = Duration::from_secs(1);

/// The longest cool-down: a tool suspended longer than an hour is better disabled by the operator.
pub const MAX_COOL_DOWN: Duration = Duration::from_secs(3600);

/// A failed trial call doubles the pause, up to this many times the cool-down (4 min by default):
/// a tool that stays broken is probed less and less often, never less than once per this span.
pub const MAX_BACKOFF_FACTOR: u32 = 8;

/// How much longer than the tool's timeout a trial call may stay unreported before its slot is
/// taken for abandoned: room for the audit write and the shaping of the result.
pub const TRIAL_GRACE: Duration = Duration::from_secs(10);

/// The longest a trial slot is held, whatever the timeout: a day.
const MAX_TRIAL_EXPIRY: Duration = Duration::from_secs(24 * 3600);

/// When one tool's breaker opens and how long it stays open. The default: opens after 3
/// consecutive timeouts, for 30 s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerPolicy {
    enabled: bool,
    failures: NonZeroU32,
    kinds: BTreeSet<ErrorKind>,
    cool_down: Duration,
    trial_expiry: Duration,
}

/// Why a [`BreakerPolicy`] setting was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The failure count is 0 or above [`MAX_FAILURES`].
    #[error("must be between 1 and {MAX_FAILURES}, not {0}")]
    Failures(u32),
    /// No kind would trip the breaker.
    #[error("must name at least one kind; to turn the breaker off, set `disabled = true`")]
    NoKinds,
    /// A kind that is decided before the tool runs, or by the caller.
    #[error(
        "`{kind}` says nothing about the tool's health (the tool did not run, or the caller ended \
         the call); use some of {TRIPPABLE}",
        kind = .0.as_str()
    )]
    NotTheToolsFault(ErrorKind),
    /// The cool-down is outside [`MIN_COOL_DOWN`]..=[`MAX_COOL_DOWN`].
    #[error("must be between 1 and 3600 seconds, not {}", .0.as_secs_f64())]
    CoolDown(Duration),
}

/// The kinds a breaker may count, as listed in [`PolicyError::NotTheToolsFault`].
const TRIPPABLE: &str =
    "timeout, out_of_fuel, memory_limit, trap, tool_failed, bad_output, internal";

impl Default for BreakerPolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            failures: NonZeroU32::new(3).expect("3 is not 0"),
            kinds: BTreeSet::from([ErrorKind::Timeout]),
            cool_down: Duration::from_secs(30),
            trial_expiry: Duration::from_secs(30) + TRIAL_GRACE,
        }
    }
}

impl BreakerPolicy {
    /// The same policy, with the breaker on or off. Off, every call runs and nothing is counted
    /// (the failure statistics still are). By default it is on.
    #[must_use]
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// The same policy, opening after `failures` consecutive failures of one kind (1 to
    /// [`MAX_FAILURES`]).
    pub fn with_failures(mut self, failures: u32) -> Result<Self, PolicyError> {
        self.failures = NonZeroU32::new(failures)
            .filter(|n| n.get() <= MAX_FAILURES)
            .ok_or(PolicyError::Failures(failures))?;
        Ok(self)
    }

    /// The same policy, counting failures of these kinds (at least one; each a kind for which
    /// [`ErrorKind::is_tool_fault`] holds).
    pub fn with_kinds(
        mut self,
        kinds: impl IntoIterator<Item = ErrorKind>,
    ) -> Result<Self, PolicyError> {
        let kinds: BTreeSet<ErrorKind> = kinds.into_iter().collect();
        if let Some(&kind) = kinds.iter().find(|k| !k.is_tool_fault()) {
            return Err(PolicyError::NotTheToolsFault(kind));
        }
        if kinds.is_empty() {
            return Err(PolicyError::NoKinds);
        }
        self.kinds = kinds;
        Ok(self)
    }

    /// The same policy, pausing the tool this long when the breaker opens (1 s to 1 h).
    pub fn with_cool_down(mut self, cool_down: Duration) -> Result<Self, PolicyError> {
        if !(MIN_COOL_DOWN..=MAX_COOL_DOWN).contains(&cool_down) {
            return Err(PolicyError::CoolDown(cool_down));
        }
        self.cool_down = cool_down;
        Ok(self)
    }

    /// The same policy for a tool whose calls may take up to `timeout`: a trial call not reported
    /// within `timeout` plus [`TRIAL_GRACE`] is taken for abandoned, and the next call is a new
    /// trial (never later than a day). `config` sets it from the plugin's `timeout-ms`.
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.trial_expiry = timeout.saturating_add(TRIAL_GRACE).min(MAX_TRIAL_EXPIRY);
        self
    }

    /// Whether the breaker is on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// How many consecutive failures of one kind open the breaker.
    pub fn failures(&self) -> NonZeroU32 {
        self.failures
    }

    /// The kinds of failure that count.
    pub fn kinds(&self) -> &BTreeSet<ErrorKind> {
        &self.kinds
    }

    /// Whether a failure of `kind` counts.
    pub fn trips_on(&self, kind: ErrorKind) -> bool {
        self.kinds.contains(&kind)
    }

    /// How long the tool is paused when the breaker first opens.
    pub fn cool_down(&self) -> Duration {
        self.cool_down
    }

    /// The longest pause, after repeated failed trials: [`MAX_BACKOFF_FACTOR`] times the cool-down.
    pub fn max_cool_down(&self) -> Duration {
        self.cool_down * MAX_BACKOFF_FACTOR
    }

    /// How long a trial call may stay unreported before its slot is freed for another.
    pub fn trial_expiry(&self) -> Duration {
        self.trial_expiry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_to_three_timeouts_and_thirty_seconds() {
        let p = BreakerPolicy::default();
        assert!(p.enabled());
        assert_eq!(p.failures().get(), 3);
        assert_eq!(p.kinds(), &BTreeSet::from([ErrorKind::Timeout]));
        assert_eq!(p.cool_down(), Duration::from_secs(30));
        assert_eq!(p.max_cool_down(), Duration::from_secs(240));
    }

    #[test]
    fn refuses_kinds_that_do_not_blame_the_tool() {
        for kind in [
            ErrorKind::Denied,
            ErrorKind::InvalidInput,
            ErrorKind::UnknownTool,
            ErrorKind::Cancelled,
            ErrorKind::Busy,
            ErrorKind::InputRequired,
            ErrorKind::AuditUnavailable,
            ErrorKind::Suspended,
        ] {
            let e = BreakerPolicy::default()
                .with_kinds([ErrorKind::Timeout, kind])
                .unwrap_err();
            assert_eq!(e, PolicyError::NotTheToolsFault(kind));
            assert!(e.to_string().contains(kind.as_str()), "{e}");
        }
        assert_eq!(
            BreakerPolicy::default().with_kinds([]).unwrap_err(),
            PolicyError::NoKinds
        );
        let p = BreakerPolicy::default()
            .with_kinds([ErrorKind::Trap, ErrorKind::OutOfFuel, ErrorKind::Trap])
            .unwrap();
        assert!(p.trips_on(ErrorKind::Trap) && p.trips_on(ErrorKind::OutOfFuel));
        assert!(!p.trips_on(ErrorKind::Timeout));
    }

    #[test]
    fn bounds_failures_and_cool_down() {
        let p = BreakerPolicy::default();
        assert_eq!(p.clone().with_failures(0), Err(PolicyError::Failures(0)));
        assert_eq!(
            p.clone().with_failures(101),
            Err(PolicyError::Failures(101))
        );
        assert_eq!(p.clone().with_failures(1).unwrap().failures().get(), 1);
        for bad in [
            Duration::ZERO,
            Duration::from_millis(999),
            Duration::from_secs(3601),
        ] {
            assert_eq!(
                p.clone().with_cool_down(bad),
                Err(PolicyError::CoolDown(bad))
            );
        }
        let p = p.with_cool_down(Duration::from_secs(3600)).unwrap();
        assert_eq!(p.max_cool_down(), Duration::from_secs(8 * 3600));
    }

    #[test]
    fn a_trial_expires_after_the_call_timeout_and_a_grace() {
        let p = BreakerPolicy::default().with_call_timeout(Duration::from_secs(5));
        assert_eq!(p.trial_expiry(), Duration::from_secs(15));
        let p = p.with_call_timeout(Duration::MAX);
        assert_eq!(p.trial_expiry(), Duration::from_secs(24 * 3600));
    }
}
