//! [`Breaker`]: one tool's circuit breaker, a state machine driven by the caller's clock.
//!
//! Closed, calls run and consecutive failures of one kind are counted; at the policy's count it
//! opens, and calls are refused at once for a cool-down; then the next call is the one trial
//! (half-open): its success closes the breaker, its failure reopens it for twice the pause (up to
//! [`MAX_BACKOFF_FACTOR`](super::MAX_BACKOFF_FACTOR) times the cool-down). No clock is read and no
//! lock is taken here: the host passes `now` and serializes access.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use toolhost_call::call::ErrorKind;

use super::{BreakerPolicy, BreakerState, Suspension, Transition};

/// One tool's circuit breaker. See the [module docs](super) for the life of a call through it.
#[derive(Debug, Clone)]
pub struct Breaker {
    policy: BreakerPolicy,
    /// Bumped on every opening, trial and closing: a [`Pass`] from an earlier epoch is stale, and
    /// its outcome (a call that began before the breaker opened, or an abandoned trial) is ignored.
    epoch: u64,
    state: State,
}

#[derive(Debug, Clone)]
enum State {
    /// Calls run; `streak` counts consecutive failures of one tripping kind, fewer than the policy's.
    Closed { streak: Option<Streak> },
    /// Calls are refused until `episode.until`; the first call after it is a trial.
    Open(Episode),
    /// One trial call may run; a trial not reported by its deadline is taken for abandoned.
    HalfOpen {
        episode: Episode,
        trial: Option<Trial>,
    },
}

#[derive(Debug, Clone, Copy)]
struct Streak {
    kind: ErrorKind,
    count: NonZeroU32,
}

/// One suspension, from opening to closing.
#[derive(Debug, Clone, Copy)]
struct Episode {
    /// The kind of the latest failure.
    kind: ErrorKind,
    /// Consecutive failures of that kind, trials included.
    failures: u32,
    /// Failed trials among those `failures`.
    trials: u32,
    /// Failed trials since the breaker opened, of any kind.
    reopened: u32,
    /// When the breaker first opened.
    since: Instant,
    /// The pause in force.
    cool_down: Duration,
    /// When the pause ends.
    until: Instant,
}

/// The trial in flight; its pass carries the breaker's current epoch.
#[derive(Debug, Clone, Copy)]
struct Trial {
    deadline: Instant,
}

/// Leave to run one call: give it back to [`Breaker::record`] with the call's outcome. Neither
/// `Clone` nor `Copy`, so one admission reports one outcome. A pass dropped unreported costs
/// nothing while the breaker is closed; a dropped trial pass holds the trial slot until the
/// policy's [`trial_expiry`](BreakerPolicy::trial_expiry), so report `Cancelled` when a call is
/// dropped if you can.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "report the call's outcome with `Breaker::record`"]
pub struct Pass {
    epoch: u64,
    trial: bool,
}

impl Pass {
    /// True for the one trial call of a half-open breaker.
    pub fn is_trial(&self) -> bool {
        self.trial
    }
}

/// What [`Breaker::admit`] says about a call.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a refused call must not run, and an admitted one must be recorded"]
pub enum Admission {
    /// The breaker is closed (or disabled): run the call.
    Run(Pass),
    /// The cool-down has passed: run the call as the one trial that decides whether the tool is back.
    Trial(Pass),
    /// The tool is suspended: answer at once with [`Suspension::message`], as `suspended`.
    Refuse(Suspension),
}

impl Breaker {
    /// A closed breaker under `policy`.
    pub fn new(policy: BreakerPolicy) -> Self {
        Self {
            policy,
            epoch: 0,
            state: State::Closed { streak: None },
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &BreakerPolicy {
        &self.policy
    }

    /// Put `policy` in force (a reloaded config). A suspension in progress runs its course; a
    /// streak of a kind the new policy does not count is dropped; disabling closes the breaker.
    pub fn set_policy(&mut self, policy: BreakerPolicy) {
        if !policy.enabled() {
            self.close();
        } else if let State::Closed { streak } = &mut self.state
            && streak.is_some_and(|s| !policy.trips_on(s.kind))
        {
            *streak = None;
        }
        self.policy = policy;
    }

    /// Whether a call may run now. Moving from open to half-open happens here, at the first
    /// call after the cool-down, reported as [`Transition::HalfOpened`]; nothing runs in between.
    pub fn admit(&mut self, now: Instant) -> (Admission, Option<Transition>) {
        if !self.policy.enabled() {
            return (Admission::Run(self.pass(false)), None);
        }
        match self.state {
            State::Closed { .. } => (Admission::Run(self.pass(false)), None),
            State::Open(episode) if now < episode.until => (
                Admission::Refuse(refusal(&episode, episode.until, false, now)),
                None,
            ),
            State::Open(episode) => {
                let pass = self.start_trial(episode, now);
                (Admission::Trial(pass), Some(Transition::HalfOpened))
            }
            State::HalfOpen {
                episode,
                trial: Some(trial),
            } if now < trial.deadline => (
                Admission::Refuse(refusal(&episode, trial.deadline, true, now)),
                None,
            ),
            // No trial running, or one that never reported: a new trial.
            State::HalfOpen { episode, .. } => {
                (Admission::Trial(self.start_trial(episode, now)), None)
            }
        }
    }

    /// What [`Self::admit`] would refuse now, without taking the trial slot: lets the host refuse a
    /// suspended tool before asking a person to approve the call.
    pub fn refusal(&self, now: Instant) -> Option<Suspension> {
        if !self.policy.enabled() {
            return None;
        }
        match &self.state {
            State::Open(e) if now < e.until => Some(refusal(e, e.until, false, now)),
            State::HalfOpen {
                episode,
                trial: Some(t),
            } if now < t.deadline => Some(refusal(episode, t.deadline, true, now)),
            _ => None,
        }
    }

    /// Report how the call admitted with `pass` ended: `None` for a success, else its kind.
    /// Returns the transition it caused, for the audit log and metrics.
    ///
    /// Kinds that say nothing about the tool ([`ErrorKind::is_tool_fault`] is false: denied,
    /// cancelled, ...) change nothing, except that they free the trial slot. Any other outcome that
    /// is not a counted failure of the current streak's kind ends the streak (a success, a failure
    /// the policy does not count: the tool answered), and a counted failure of another kind starts
    /// a new streak. The outcome of a stale pass (from before the breaker last changed state) is
    /// ignored.
    pub fn record(
        &mut self,
        now: Instant,
        pass: Pass,
        outcome: Option<ErrorKind>,
    ) -> Option<Transition> {
        if pass.epoch != self.epoch || !self.policy.enabled() {
            return None;
        }
        let tool_fault = outcome.filter(|k| k.is_tool_fault());
        let counted = tool_fault.filter(|k| self.policy.trips_on(*k));
        match &mut self.state {
            State::Closed { streak } => {
                if outcome.is_some() && tool_fault.is_none() {
                    return None;
                }
                let Some(kind) = counted else {
                    *streak = None;
                    return None;
                };
                let count = match streak {
                    Some(s) if s.kind == kind => s.count.saturating_add(1),
                    _ => NonZeroU32::MIN,
                };
                if count < self.policy.failures() {
                    *streak = Some(Streak { kind, count });
                    return None;
                }
                let cool_down = self.policy.cool_down();
                let until = now + cool_down;
                self.state = State::Open(Episode {
                    kind,
                    failures: count.get(),
                    trials: 0,
                    reopened: 0,
                    since: now,
                    cool_down,
                    until,
                });
                self.epoch += 1;
                Some(Transition::Opened {
                    kind,
                    failures: count.get(),
                    cool_down,
                    until,
                })
            }
            // Opening bumped the epoch and no pass is handed out while open.
            State::Open(_) => None,
            State::HalfOpen { episode, trial } => {
                if outcome.is_some() && tool_fault.is_none() {
                    *trial = None;
                    return None;
                }
                let Some(kind) = counted else {
                    let transition = Transition::Closed {
                        suspended_for: now.saturating_duration_since(episode.since),
                        trials: episode.reopened + 1,
                    };
                    self.close();
                    return Some(transition);
                };
                let mut e = *episode;
                (e.failures, e.trials) = if e.kind == kind {
                    (e.failures.saturating_add(1), e.trials + 1)
                } else {
                    (1, 1)
                };
                e.kind = kind;
                e.reopened += 1;
                e.cool_down = (e.cool_down * 2).min(self.policy.max_cool_down());
                e.until = now + e.cool_down;
                self.state = State::Open(e);
                self.epoch += 1;
                Some(Transition::Reopened {
                    kind,
                    failures: e.failures,
                    trials: e.trials,
                    cool_down: e.cool_down,
                    until: e.until,
                })
            }
        }
    }

    /// The state at `now`, for `/health`. An open breaker whose cool-down has passed shows as
    /// half-open: the next call will be its trial.
    pub fn state(&self, now: Instant) -> BreakerState {
        let secs = |d: Duration| d.as_secs_f64().ceil() as u64;
        if !self.policy.enabled() {
            return BreakerState::Disabled;
        }
        match &self.state {
            State::Closed { streak } => BreakerState::Closed {
                kind: streak.map(|s| s.kind),
                failures: streak.map_or(0, |s| s.count.get()),
            },
            State::Open(e) if now < e.until => BreakerState::Open {
                kind: e.kind,
                failures: e.failures,
                open_for_s: secs(now.saturating_duration_since(e.since)),
                retry_at_in_s: secs(e.until - now),
            },
            State::Open(e) | State::HalfOpen { episode: e, .. } => BreakerState::HalfOpen {
                kind: e.kind,
                failures: e.failures,
                open_for_s: secs(now.saturating_duration_since(e.since)),
                trial_running: matches!(&self.state,
                    State::HalfOpen { trial: Some(t), .. } if now < t.deadline),
            },
        }
    }

    /// Whether `pass` would still be heard by [`Self::record`].
    #[cfg(test)]
    pub(super) fn is_current(&self, pass: &Pass) -> bool {
        pass.epoch == self.epoch
    }

    fn pass(&self, trial: bool) -> Pass {
        Pass {
            epoch: self.epoch,
            trial,
        }
    }

    fn start_trial(&mut self, episode: Episode, now: Instant) -> Pass {
        self.epoch += 1;
        self.state = State::HalfOpen {
            episode,
            trial: Some(Trial {
                deadline: now + self.policy.trial_expiry(),
            }),
        };
        self.pass(true)
    }

    fn close(&mut self) {
        if !matches!(self.state, State::Closed { .. }) {
            self.epoch += 1;
        }
        self.state = State::Closed { streak: None };
    }
}

fn refusal(e: &Episode, retry_at: Instant, trial_running: bool, now: Instant) -> Suspension {
    Suspension {
        kind: e.kind,
        failures: e.failures,
        trials: e.trials,
        since: e.since,
        retry_at,
        retry_in: retry_at - now,
        trial_running,
    }
}
