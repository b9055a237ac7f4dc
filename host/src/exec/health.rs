//! Tools that learn from failure: every tool's circuit breaker and recent outcomes (the policy's
//! [`Breakers`]) behind one lock, at the monotonic clock's time. The pipeline admits a call after
//! its gate and reports how it ended; what changed goes to the call's audit line, `/health` and
//! `/metrics`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::audit::{AuditRecord, BreakerNote};
use crate::registry::Tool;
use crate::stats::Exposition;
use toolhost_call::call::{CallOutcome, ErrorKind};
use toolhost_gate::breaker::{
    Admitted as BreakerAdmission, BreakerPolicy, Breakers, Health, Lowered, Passes, Reported,
    Suspension, Transition, Whose,
};

/// The monotonic clock's time; the tests move theirs on rather than wait out a cool-down.
#[cfg(not(test))]
fn now() -> Instant {
    Instant::now()
}
#[cfg(test)]
use self::tests::now;

/// Every tool's breaker and statistics, and how often each changed state.
#[derive(Debug, Default)]
pub struct ToolsHealth {
    inner: Arc<Mutex<Inner>>,
}

/// Who calls, as the breakers tell callers apart: the caller's key (issuer and subject) and the
/// limits its profile lowered below the tool's own. Failures of those limits count in the
/// caller's own breaker, never in the tool's, which every caller shares.
#[derive(Debug, Clone, Default)]
pub(super) struct Asker {
    /// The caller's key, when authenticated.
    pub(super) key: Option<String>,
    /// What its profile lowered.
    pub(super) lowered: Lowered,
}

/// A call the breakers let run: given back with the outcome ([`Admitted::finish`]). Dropped
/// unreported (the call's future dropped, a panic), it reports the call as cancelled, which frees a
/// trial without deciding it, so that no lost call can hold a tool suspended.
pub(super) struct Admitted {
    inner: Arc<Mutex<Inner>>,
    tool: String,
    asker: Asker,
    passes: Option<Passes>,
}

impl Admitted {
    /// Reports how the call ended (`kind`: `None` for success, as the sandbox and the tool said,
    /// before any front end's deadline), notes a change of state on `record`, and appends the
    /// failure statistics to `outcome` when the tool fails often.
    pub(super) fn finish(
        mut self,
        kind: Option<ErrorKind>,
        record: &mut AuditRecord,
        outcome: &mut CallOutcome,
    ) {
        let Some(passes) = self.passes.take() else {
            return;
        };
        let reported = report(&self.inner, &self.tool, &self.asker, passes, kind);
        if let Some(t) = &reported.tool.transition {
            record.breaker.push(BreakerNote::from_transition(t));
        }
        if let Some(t) = &reported.own {
            record
                .breaker
                .push(BreakerNote::from_transition(t).for_caller());
        }
        if let Some(advice) = reported.tool.advice {
            outcome.content.push_str("\n\n");
            outcome.content.push_str(&advice);
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if let Some(passes) = self.passes.take() {
            let _ = report(
                &self.inner,
                &self.tool,
                &self.asker,
                passes,
                Some(ErrorKind::Cancelled),
            );
        }
    }
}

fn lock(inner: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    // A panic while holding the lock leaves counters, never a broken invariant: go on.
    inner.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reports the outcome of the call admitted with `passes` to `tool`'s breakers and statistics.
fn report(
    inner: &Mutex<Inner>,
    tool: &str,
    asker: &Asker,
    passes: Passes,
    kind: Option<ErrorKind>,
) -> Reported {
    let mut inner = lock(inner);
    let key = asker.key.as_deref();
    let reported = inner
        .breakers
        .report(tool, key, asker.lowered, passes, kind, now());
    inner.count(tool, reported.tool.transition.as_ref());
    reported
}

#[derive(Debug, Default)]
struct Inner {
    breakers: Breakers,
    /// Transitions of the tools' breakers so far, by tool and transition name, for `/metrics`
    /// (callers' own breakers are left out: their labels would grow with the callers).
    transitions: BTreeMap<(String, &'static str), u64>,
}

impl Inner {
    fn count(&mut self, tool: &str, transition: Option<&Transition>) {
        if let Some(t) = transition {
            *self
                .transitions
                .entry((tool.to_owned(), t.as_str()))
                .or_default() += 1;
        }
    }
}

/// A refused call: its note, its kind and its answer.
fn refused(
    suspension: &Suspension,
    whose: Whose,
    tool: &str,
    record: &mut AuditRecord,
) -> (ErrorKind, String) {
    let note = BreakerNote::refused(suspension);
    record.breaker.push(match whose {
        Whose::Tool => note,
        Whose::Own => note.for_caller(),
    });
    (ErrorKind::Suspended, suspension.message_for(tool, whose))
}

/// The policy for `tool`: its plugin's, for the name the plugin gives it.
fn policy(tool: &Tool) -> &BreakerPolicy {
    tool.plugin.policy.breaker_for(&tool.guest_name)
}

impl ToolsHealth {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Whether `tool` is suspended now for `asker`, without taking the trial: checked before a
    /// person is asked to approve a call that would be refused anyway. The refusal is noted on
    /// `record`.
    pub(super) fn refusal(
        &self,
        tool: &str,
        asker: &Asker,
        record: &mut AuditRecord,
    ) -> Option<(ErrorKind, String)> {
        let (suspension, whose) =
            self.lock()
                .breakers
                .refusal(tool, asker.key.as_deref(), asker.lowered, now())?;
        Some(refused(&suspension, whose, tool, record))
    }

    /// Admits a call of `tool` by `asker`, noting on `record` a change of a breaker (the trial
    /// after a cool-down); or refuses it, noting why, with the answer for the model.
    pub(super) fn admit(
        &self,
        tool: &Tool,
        asker: Asker,
        record: &mut AuditRecord,
    ) -> Result<Admitted, (ErrorKind, String)> {
        self.admit_as(&tool.spec.name, policy(tool), asker, record)
    }

    /// [`Self::admit`] for the tool called `name`, under `policy`.
    fn admit_as(
        &self,
        name: &str,
        policy: &BreakerPolicy,
        asker: Asker,
        record: &mut AuditRecord,
    ) -> Result<Admitted, (ErrorKind, String)> {
        let mut inner = self.lock();
        let (admission, transitions) =
            inner
                .breakers
                .admit(name, policy, asker.key.as_deref(), asker.lowered, now());
        for (whose, t) in transitions.into_iter().flatten() {
            let note = BreakerNote::from_transition(&t);
            match whose {
                Whose::Tool => {
                    inner.count(name, Some(&t));
                    record.breaker.push(note);
                }
                Whose::Own => record.breaker.push(note.for_caller()),
            }
        }
        match admission {
            BreakerAdmission::Run(passes) => Ok(Admitted {
                inner: self.inner.clone(),
                tool: name.to_owned(),
                asker,
                passes: Some(passes),
            }),
            BreakerAdmission::Refuse(suspension, whose) => {
                Err(refused(&suspension, whose, name, record))
            }
        }
    }

    /// Every called tool's breaker and recent outcomes, for `/health`: those `sees` lets through,
    /// each with the breaker of the caller keyed `caller` beside it where it has one of its own.
    pub fn health(
        &self,
        caller: Option<&str>,
        mut sees: impl FnMut(&str) -> bool,
    ) -> BTreeMap<String, Health> {
        let mut all = self.lock().breakers.health_for(caller, now());
        all.retain(|name, _| sees(name));
        all
    }

    /// `toolhost_tool_breaker_state` (1 for each called tool's current state) and
    /// `toolhost_tool_breaker_transitions_total`, for `/metrics`.
    pub fn write_prometheus(&self, out: &mut Exposition) {
        self.write_prometheus_for(out, |_| true);
    }

    /// The same families for the tools `shows` lets through (a caller's view).
    pub fn write_prometheus_for(&self, out: &mut Exposition, shows: impl Fn(&str) -> bool) {
        let (mut health, mut transitions) = {
            let inner = self.lock();
            (inner.breakers.health(now()), inner.transitions.clone())
        };
        health.retain(|tool, _| shows(tool));
        transitions.retain(|(tool, _), _| shows(tool));
        out.family(
            "toolhost_tool_breaker_state",
            "gauge",
            "Each called tool's circuit breaker: 1 for its state (closed, open, half_open, disabled).",
        );
        for (tool, h) in &health {
            out.sample(
                "toolhost_tool_breaker_state",
                &[("tool", tool), ("state", h.breaker.as_str())],
                1,
            );
        }
        out.family(
            "toolhost_tool_breaker_transitions_total",
            "counter",
            "Circuit breaker changes of state, by tool: opened, half_opened, reopened, closed.",
        );
        for ((tool, transition), n) in &transitions {
            out.sample(
                "toolhost_tool_breaker_transitions_total",
                &[("tool", tool), ("transition", transition)],
                n,
            );
        }
    }
}

#[cfg(test)]
mod tests;
