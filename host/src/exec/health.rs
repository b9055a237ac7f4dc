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
use toolhost_policy::breaker::{
    Admission, BreakerPolicy, Breakers, Health, Pass, Recorded, Suspension, Transition,
};
use toolhost_policy::call::{CallOutcome, ErrorKind};

/// Every tool's breaker and statistics, and how often each changed state.
#[derive(Debug, Default)]
pub struct ToolsHealth {
    inner: Arc<Mutex<Inner>>,
}

/// A call its tool's breaker let run: given back with the outcome ([`Admitted::finish`]). Dropped
/// unreported (the call's future dropped, a panic), it reports the call as cancelled, which frees a
/// trial without deciding it, so that no lost call can hold a tool suspended.
pub(super) struct Admitted {
    inner: Arc<Mutex<Inner>>,
    tool: String,
    pass: Option<Pass>,
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
        let Some(pass) = self.pass.take() else {
            return;
        };
        let recorded = report(&self.inner, &self.tool, pass, kind);
        if let Some(t) = &recorded.transition {
            record.breaker.push(BreakerNote::from_transition(t));
        }
        if let Some(advice) = recorded.advice {
            outcome.content.push_str("\n\n");
            outcome.content.push_str(&advice);
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if let Some(pass) = self.pass.take() {
            let _ = report(&self.inner, &self.tool, pass, Some(ErrorKind::Cancelled));
        }
    }
}

fn lock(inner: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    // A panic while holding the lock leaves counters, never a broken invariant: go on.
    inner.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reports the outcome of the call admitted with `pass` to `tool`'s breaker and statistics.
fn report(inner: &Mutex<Inner>, tool: &str, pass: Pass, kind: Option<ErrorKind>) -> Recorded {
    let mut inner = lock(inner);
    // Admitted calls have an entry: `admit` made it.
    let recorded = inner
        .breakers
        .get_mut(tool)
        .map(|h| h.record(tool, Instant::now(), pass, kind))
        .unwrap_or_default();
    inner.count(tool, recorded.transition.as_ref());
    recorded
}

#[derive(Debug, Default)]
struct Inner {
    breakers: Breakers,
    /// Transitions so far, by tool and transition name, for `/metrics`.
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
fn refused(suspension: &Suspension, tool: &str, record: &mut AuditRecord) -> (ErrorKind, String) {
    record.breaker.push(BreakerNote::refused(suspension));
    (ErrorKind::Suspended, suspension.message(tool))
}

/// The policy for `tool`: its plugin's, for the name the plugin gives it.
fn policy(tool: &Tool) -> &BreakerPolicy {
    tool.plugin.policy.breaker_for(&tool.guest_name)
}

impl ToolsHealth {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Whether `tool` is suspended now, without taking the trial: checked before a person is asked
    /// to approve a call that would be refused anyway. The refusal is noted on `record`.
    pub(super) fn refusal(
        &self,
        tool: &Tool,
        record: &mut AuditRecord,
    ) -> Option<(ErrorKind, String)> {
        let suspension = self
            .lock()
            .breakers
            .get(&tool.spec.name)
            .and_then(|h| h.breaker().refusal(Instant::now()))?;
        Some(refused(&suspension, &tool.spec.name, record))
    }

    /// Admits a call of `tool`, noting on `record` a change of the breaker (the trial after a
    /// cool-down); or refuses it, noting why, with the answer for the model.
    pub(super) fn admit(
        &self,
        tool: &Tool,
        record: &mut AuditRecord,
    ) -> Result<Admitted, (ErrorKind, String)> {
        let mut inner = self.lock();
        let health = inner.breakers.tool(&tool.spec.name, policy(tool));
        let (admission, transition) = health.admit(Instant::now());
        inner.count(&tool.spec.name, transition.as_ref());
        record
            .breaker
            .extend(transition.as_ref().map(BreakerNote::from_transition));
        match admission {
            Admission::Run(pass) | Admission::Trial(pass) => Ok(Admitted {
                inner: self.inner.clone(),
                tool: tool.spec.name.clone(),
                pass: Some(pass),
            }),
            Admission::Refuse(suspension) => Err(refused(&suspension, &tool.spec.name, record)),
        }
    }

    /// Every called tool's breaker and recent outcomes, for `/health`: those `sees` lets through.
    pub fn health(&self, mut sees: impl FnMut(&str) -> bool) -> BTreeMap<String, Health> {
        let mut all = self.lock().breakers.health(Instant::now());
        all.retain(|name, _| sees(name));
        all
    }

    /// `toolhost_tool_breaker_state` (1 for each called tool's current state) and
    /// `toolhost_tool_breaker_transitions_total`, for `/metrics`.
    pub fn write_prometheus(&self, out: &mut Exposition) {
        let (health, transitions) = {
            let inner = self.lock();
            (
                inner.breakers.health(Instant::now()),
                inner.transitions.clone(),
            )
        };
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
