//! A caller's own breaker for a tool ([`Lowered`], [`Breakers::own`]): a failure under a limit the
//! caller's `[[callers]]` profile lowered below the tool's own (`timeout-ms`, `fuel`, `memory-mb`)
//! says something about that caller's budget, not about the tool. It counts in the caller's own
//! breaker only, so that one caller cannot suspend a tool for everyone; failures at the tool's own
//! limits keep counting in the tool's breaker, which every caller shares.
//!
//! Why not a breaker per tool and caller for every failure: a tool that hangs at the operator's
//! own limits would then hold a slot for its whole timeout N times per caller before every caller
//! had learnt it, and a daemon with many tenants would be probed by each of them. The shared
//! breaker keeps that protection for what the tool does at the limits the operator chose.

use std::time::Instant;

use toolhost_call::call::ErrorKind;

use super::{Admission, BreakerPolicy, Breakers, Health, Pass, Recorded, ToolHealth, Transition};
use crate::grants::{Caps, Limits};

/// Which of a tool's limits a caller's profile lowered for a call: the failures of those kinds
/// are the caller's own doing, as far as anyone can tell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lowered {
    timeout: bool,
    fuel: bool,
    memory: bool,
}

impl Lowered {
    /// The limits `caps` (the caller's profile) set below the tool's `limits`.
    pub fn new(limits: &Limits, caps: &Caps) -> Self {
        Self {
            timeout: caps.timeout.is_some_and(|t| t < limits.timeout),
            fuel: caps.fuel.is_some_and(|f| f < limits.fuel),
            memory: caps.memory_bytes.is_some_and(|m| m < limits.memory_bytes),
        }
    }

    /// Whether any limit is lowered: only then does the caller have a breaker of its own.
    pub fn any(self) -> bool {
        self.timeout || self.fuel || self.memory
    }

    /// Whether a failure of `kind` is that of a lowered limit: a timeout under a lower
    /// `timeout-ms`, running out of fuel under a lower `fuel`, the memory limit under a lower
    /// `memory-mb`.
    pub fn blames(self, kind: ErrorKind) -> bool {
        match kind {
            ErrorKind::Timeout => self.timeout,
            ErrorKind::OutOfFuel => self.fuel,
            ErrorKind::MemoryLimit => self.memory,
            _ => false,
        }
    }

    /// How a call's outcome (`None`: success) is told to the tool's breaker and to the caller's
    /// own: `(tool's, caller's)`. A failure of a lowered limit reaches the tool's breaker as
    /// `Cancelled`, which counts nothing and ends no streak (a trial slot it held is freed);
    /// any other end of the call reaches the caller's breaker as a success, since its limits did
    /// not end it, and outcomes that say nothing about the tool pass through unchanged.
    pub fn split(self, outcome: Option<ErrorKind>) -> (Option<ErrorKind>, Option<ErrorKind>) {
        match outcome {
            Some(kind) if self.blames(kind) => (Some(ErrorKind::Cancelled), Some(kind)),
            Some(kind) if kind.is_tool_fault() => (outcome, None),
            _ => (outcome, outcome),
        }
    }
}

/// Leave from both breakers to run one call: the tool's, and the caller's own when it has one.
#[derive(Debug)]
#[must_use = "report the call's outcome with `Breakers::report`"]
pub struct Passes {
    tool: Pass,
    own: Option<Pass>,
}

/// What [`Breakers::admit`] says about a call.
#[derive(Debug)]
#[must_use = "a refused call must not run, and an admitted one must be reported"]
pub enum Admitted {
    /// Run it; report the outcome with these passes.
    Run(Passes),
    /// Refused at once: the suspension and whose breaker refused it.
    Refuse(super::Suspension, Whose),
}

/// Whose breaker refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose {
    /// The tool's, which every caller shares.
    Tool,
    /// The caller's own: its lowered limits keep failing.
    Own,
}

/// What reporting a call produced: the changes of state of either breaker, for the audit line
/// (only the tool's go to metrics, whose labels are bounded by the catalogue), and the advice for
/// the model.
#[derive(Debug, Default, PartialEq, Eq)]
#[must_use = "transitions are audited, and advice belongs in the model's error result"]
pub struct Reported {
    /// The tool's breaker: as [`Recorded`].
    pub tool: Recorded,
    /// The caller's own breaker's change of state, if any.
    pub own: Option<Transition>,
}

impl Breakers {
    /// Admit a call of `tool` by `caller` (its key, e.g. issuer and subject) whose profile lowered
    /// `lowered`: the caller's own breaker first, when it lowered any limit, then the tool's.
    /// Transitions of either (the trial after a cool-down) come back for the audit line, the
    /// tool's first.
    pub fn admit(
        &mut self,
        tool: &str,
        policy: &BreakerPolicy,
        caller: Option<&str>,
        lowered: Lowered,
        now: Instant,
    ) -> (Admitted, [Option<(Whose, Transition)>; 2]) {
        let mut own = None;
        let mut own_transition = None;
        if let Some(caller) = caller.filter(|_| lowered.any()) {
            let health = self.own(tool, caller, policy);
            let (admission, transition) = health.admit(now);
            own_transition = transition.map(|t| (Whose::Own, t));
            match admission {
                Admission::Run(pass) | Admission::Trial(pass) => own = Some(pass),
                Admission::Refuse(s) => {
                    return (Admitted::Refuse(s, Whose::Own), [None, own_transition]);
                }
            }
        }
        let (admission, transition) = self.tool(tool, policy).admit(now);
        let tool_transition = transition.map(|t| (Whose::Tool, t));
        match admission {
            Admission::Run(pass) | Admission::Trial(pass) => (
                Admitted::Run(Passes { tool: pass, own }),
                [tool_transition, own_transition],
            ),
            Admission::Refuse(s) => {
                // The caller's own pass goes back undecided: the call never ran.
                if let (Some(pass), Some(caller)) = (own, caller)
                    && let Some(health) = self.own_mut(tool, caller)
                {
                    let _ = health.record(tool, now, pass, Some(ErrorKind::Cancelled));
                }
                (
                    Admitted::Refuse(s, Whose::Tool),
                    [tool_transition, own_transition],
                )
            }
        }
    }

    /// Report how the call admitted with `passes` ended (`outcome`: `None` for success), split by
    /// [`Lowered::split`] between the tool's breaker and the caller's own.
    pub fn report(
        &mut self,
        tool: &str,
        caller: Option<&str>,
        lowered: Lowered,
        passes: Passes,
        outcome: Option<ErrorKind>,
        now: Instant,
    ) -> Reported {
        let (to_tool, to_own) = lowered.split(outcome);
        let mut reported = Reported::default();
        if let (Some(pass), Some(caller)) = (passes.own, caller)
            && let Some(health) = self.own_mut(tool, caller)
        {
            let own = health.record(tool, now, pass, to_own);
            reported.own = own.transition;
            reported.tool.advice = own.advice;
        }
        if let Some(health) = self.get_mut(tool) {
            let recorded = health.record(tool, now, passes.tool, to_tool);
            reported.tool.transition = recorded.transition;
            reported.tool.advice = reported.tool.advice.or(recorded.advice);
        }
        reported
    }

    /// Whether `tool` would be refused for `caller` now, without taking a trial slot: by the
    /// caller's own breaker (when it lowered a limit) or the tool's.
    pub fn refusal(
        &self,
        tool: &str,
        caller: Option<&str>,
        lowered: Lowered,
        now: Instant,
    ) -> Option<(super::Suspension, Whose)> {
        let own = caller
            .filter(|_| lowered.any())
            .and_then(|c| self.own_get(tool, c))
            .and_then(|h| h.breaker().refusal(now))
            .map(|s| (s, Whose::Own));
        own.or_else(|| {
            self.get(tool)
                .and_then(|h| h.breaker().refusal(now))
                .map(|s| (s, Whose::Tool))
        })
    }

    /// Every called tool's health at `now` as `caller` sees it: the tool's breaker, and the
    /// caller's own beside it (`own`) where it has one.
    pub fn health_for(
        &self,
        caller: Option<&str>,
        now: Instant,
    ) -> std::collections::BTreeMap<String, Health> {
        let mut all = self.health(now);
        if let Some(caller) = caller {
            for (name, health) in &mut all {
                if let Some(own) = self.own_get(name, caller) {
                    health.own = Some(Box::new(own.health(now)));
                }
            }
        }
        all
    }

    /// The caller's own [`ToolHealth`] for `tool`, created on first use; `policy` put in force.
    fn own(&mut self, tool: &str, caller: &str, policy: &BreakerPolicy) -> &mut ToolHealth {
        let key = (tool.to_owned(), caller.to_owned());
        let health = self
            .callers
            .entry(key)
            .or_insert_with(|| ToolHealth::new(policy.clone()));
        health.put_policy(policy);
        health
    }

    fn own_get(&self, tool: &str, caller: &str) -> Option<&ToolHealth> {
        self.callers.get(&(tool.to_owned(), caller.to_owned()))
    }

    fn own_mut(&mut self, tool: &str, caller: &str) -> Option<&mut ToolHealth> {
        self.callers.get_mut(&(tool.to_owned(), caller.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use toolhost_call::call::ErrorKind::{Cancelled, Denied, OutOfFuel, Timeout, Trap};

    fn lowered_timeout() -> Lowered {
        let limits = Limits::default();
        Lowered::new(
            &limits,
            &Caps {
                timeout: Some(Duration::from_millis(100)),
                ..Caps::default()
            },
        )
    }

    /// Admit and report one call; `None` when refused, with whose breaker refused it.
    fn call(
        b: &mut Breakers,
        caller: &str,
        lowered: Lowered,
        outcome: Option<ErrorKind>,
    ) -> Result<Reported, Whose> {
        let policy = BreakerPolicy::default();
        let now = Instant::now();
        match b.admit("t", &policy, Some(caller), lowered, now).0 {
            Admitted::Run(passes) => Ok(b.report("t", Some(caller), lowered, passes, outcome, now)),
            Admitted::Refuse(_, whose) => Err(whose),
        }
    }

    #[test]
    fn only_lowered_limits_are_blamed_on_the_caller() {
        let limits = Limits::default();
        assert!(!Lowered::new(&limits, &Caps::default()).any());
        let same = Caps {
            timeout: Some(limits.timeout),
            fuel: Some(limits.fuel * 2),
            memory_bytes: Some(limits.memory_bytes),
        };
        assert!(
            !Lowered::new(&limits, &same).any(),
            "equal or higher is not lower"
        );
        let l = lowered_timeout();
        assert!(l.any() && l.blames(Timeout) && !l.blames(OutOfFuel) && !l.blames(Trap));
        assert_eq!(l.split(Some(Timeout)), (Some(Cancelled), Some(Timeout)));
        assert_eq!(l.split(Some(Trap)), (Some(Trap), None));
        assert_eq!(l.split(None), (None, None));
        assert_eq!(l.split(Some(Denied)), (Some(Denied), Some(Denied)));
    }

    #[test]
    fn a_callers_lowered_limit_suspends_that_caller_alone() {
        let mut b = Breakers::default();
        let low = lowered_timeout();
        for _ in 0..2 {
            assert_eq!(call(&mut b, "alice", low, Some(Timeout)).unwrap().own, None);
        }
        let third = call(&mut b, "alice", low, Some(Timeout)).unwrap();
        assert!(matches!(third.own, Some(Transition::Opened { .. })));
        assert_eq!(third.tool.transition, None);
        assert!(
            third.tool.advice.is_some(),
            "the caller is told it keeps failing"
        );
        assert_eq!(call(&mut b, "alice", low, None).unwrap_err(), Whose::Own);
        // Bob, at the tool's own limits, and another caller with the same low limits, still run.
        let _ = call(&mut b, "bob", Lowered::default(), None).unwrap();
        let _ = call(&mut b, "carol", low, None).unwrap();
        let now = Instant::now();
        let alice = b.health_for(Some("alice"), now);
        assert_eq!(alice["t"].breaker.as_str(), "closed");
        assert_eq!(alice["t"].own.as_ref().unwrap().breaker.as_str(), "open");
        assert_eq!(alice["t"].recent.failures, 0, "not the tool's failures");
        assert!(b.health_for(Some("bob"), now)["t"].own.is_none());
        assert!(b.refusal("t", Some("alice"), low, now).is_some());
        assert!(
            b.refusal("t", Some("bob"), Lowered::default(), now)
                .is_none()
        );
    }

    #[test]
    fn failures_at_the_tools_own_limits_suspend_it_for_everyone() {
        let mut b = Breakers::default();
        let low_fuel = Lowered::new(
            &Limits::default(),
            &Caps {
                fuel: Some(1),
                ..Caps::default()
            },
        );
        // Alice lowered fuel, not the timeout: her timeouts are the tool's.
        for _ in 0..3 {
            let _ = call(&mut b, "alice", low_fuel, Some(Timeout)).unwrap();
        }
        assert_eq!(
            call(&mut b, "bob", Lowered::default(), None).unwrap_err(),
            Whose::Tool
        );
        assert_eq!(
            call(&mut b, "alice", low_fuel, None).unwrap_err(),
            Whose::Tool
        );
        // Her own breaker's pass went back undecided: it is still closed, with no streak.
        let health = b.health_for(Some("alice"), Instant::now());
        assert_eq!(health["t"].own.as_ref().unwrap().breaker.as_str(), "closed");
    }
}
