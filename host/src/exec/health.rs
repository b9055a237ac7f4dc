//! Tools that learn from failure: every tool's circuit breaker and recent outcomes (the policy's
//! [`Breakers`]) behind one lock, at the monotonic clock's time. The pipeline admits a call after
//! its gate and reports how it ended; what changed goes to the call's audit line, `/health` and
//! `/metrics`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::audit::BreakerNote;
use crate::registry::Tool;
use crate::stats::Exposition;
use toolhost_policy::breaker::{
    Admission, BreakerPolicy, Breakers, Health, Pass, Recorded, Suspension, Transition,
};
use toolhost_policy::call::ErrorKind;

/// Every tool's breaker and statistics, and how often each changed state.
#[derive(Debug, Default)]
pub struct ToolsHealth {
    inner: Mutex<Inner>,
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

/// The policy for `tool`: its plugin's, for the name the plugin gives it.
fn policy(tool: &Tool) -> &BreakerPolicy {
    tool.plugin.policy.breaker_for(&tool.guest_name)
}

impl ToolsHealth {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves counters, never a broken invariant: go on.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `tool` is suspended now, without taking the trial: checked before a person is asked
    /// to approve a call that would be refused anyway.
    pub(super) fn refusal(&self, tool: &Tool) -> Option<Suspension> {
        let inner = self.lock();
        inner
            .breakers
            .get(&tool.spec.name)
            .and_then(|h| h.breaker().refusal(Instant::now()))
    }

    /// Admits a call of `tool`: its pass (to give back with the outcome) and the note for its
    /// audit line when the admission changed the breaker (the trial after a cool-down); or why it
    /// is refused.
    pub(super) fn admit(&self, tool: &Tool) -> Result<(Pass, Option<BreakerNote>), Suspension> {
        let mut inner = self.lock();
        let health = inner.breakers.tool(&tool.spec.name, policy(tool));
        let (admission, transition) = health.admit(Instant::now());
        inner.count(&tool.spec.name, transition.as_ref());
        match admission {
            Admission::Run(pass) | Admission::Trial(pass) => {
                Ok((pass, transition.as_ref().map(BreakerNote::from_transition)))
            }
            Admission::Refuse(suspension) => Err(suspension),
        }
    }

    /// Reports how the call admitted with `pass` ended (`None`: success).
    pub(super) fn record(&self, tool: &str, pass: Pass, outcome: Option<ErrorKind>) -> Recorded {
        let mut inner = self.lock();
        // Admitted calls have an entry: `admit` made it.
        let recorded = inner
            .breakers
            .get_mut(tool)
            .map(|h| h.record(tool, Instant::now(), pass, outcome))
            .unwrap_or_default();
        inner.count(tool, recorded.transition.as_ref());
        recorded
    }

    /// Every called tool's breaker and recent outcomes, for `/health`.
    pub fn health(&self) -> BTreeMap<String, Health> {
        self.lock().breakers.health(Instant::now())
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
