//! [`ToolHealth`]: one tool's breaker and failure statistics, fed by the same outcomes; and
//! [`Breakers`], every tool's, by the name clients call it by, and each caller's own (`own.rs`).
//! `&mut self` throughout: the host holds them behind its own lock.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use serde::Serialize;
use toolhost_call::call::ErrorKind;

use super::{
    Admission, Breaker, BreakerPolicy, BreakerState, FailureStats, Pass, RecentCalls, Transition,
};

/// One tool's breaker and recent outcomes.
#[derive(Debug, Clone)]
pub struct ToolHealth {
    breaker: Breaker,
    stats: FailureStats,
}

/// What recording an outcome produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[must_use = "a transition is audited, and advice belongs in the model's error result"]
pub struct Recorded {
    /// The breaker's change of state, if the outcome caused one.
    pub transition: Option<Transition>,
    /// For a failure the tool is to blame for, when the tool has been failing often
    /// ([`FailureStats::advice`]): a sentence to append to the error result.
    pub advice: Option<String>,
}

/// One tool's health at a moment, for `/health`:
/// `{"breaker":{"state":"closed","failures":0},"recent":{"calls":4,"failures":1,"kinds":{"trap":1}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Health {
    /// The breaker's state.
    pub breaker: BreakerState,
    /// The last calls' outcomes.
    pub recent: RecentCalls,
    /// The caller's own breaker and outcomes for this tool, when the caller asking has one
    /// (failures under the limits its profile lowered: [`Lowered`](super::Lowered)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own: Option<Box<Health>>,
}

impl ToolHealth {
    /// A closed breaker under `policy`, with no history.
    pub fn new(policy: BreakerPolicy) -> Self {
        Self {
            breaker: Breaker::new(policy),
            stats: FailureStats::default(),
        }
    }

    /// The breaker.
    pub fn breaker(&self) -> &Breaker {
        &self.breaker
    }

    /// The recent outcomes.
    pub fn stats(&self) -> &FailureStats {
        &self.stats
    }

    /// [`Breaker::admit`].
    pub fn admit(&mut self, now: Instant) -> (Admission, Option<Transition>) {
        self.breaker.admit(now)
    }

    /// Report how the call admitted with `pass` ended (`None`: success) to the breaker
    /// ([`Breaker::record`]) and the statistics, and say what follows; `tool` is the name the
    /// model called it by, for the advice.
    pub fn record(
        &mut self,
        tool: &str,
        now: Instant,
        pass: Pass,
        outcome: Option<ErrorKind>,
    ) -> Recorded {
        self.stats.record(outcome);
        Recorded {
            transition: self.breaker.record(now, pass, outcome),
            advice: outcome
                .is_some_and(ErrorKind::is_tool_fault)
                .then(|| self.stats.advice(tool))
                .flatten(),
        }
    }

    /// The breaker's state and the recent outcomes at `now`.
    pub fn health(&self, now: Instant) -> Health {
        Health {
            breaker: self.breaker.state(now),
            recent: self.stats.recent(),
            own: None,
        }
    }

    /// Put `policy` in force if it changed (a reloaded config), keeping the breaker's state.
    pub(super) fn put_policy(&mut self, policy: &BreakerPolicy) {
        if self.breaker.policy() != policy {
            self.breaker.set_policy(policy.clone());
        }
    }
}

/// Every tool's [`ToolHealth`], by the name clients call it by (its prefix included), so that a
/// tool's failures never suspend another.
#[derive(Debug, Clone, Default)]
pub struct Breakers {
    tools: HashMap<String, ToolHealth>,
    /// Each caller's own breaker, by tool and caller, for failures under the limits its profile
    /// lowered (`own.rs`): at most one per tool for each caller with lower limits.
    pub(super) callers: HashMap<(String, String), ToolHealth>,
}

impl Breakers {
    /// `tool`'s health, created on its first call; `policy` is put in force if it changed (a
    /// reloaded config), keeping the breaker's state. Pass the tool's policy from
    /// `toolhost_config::config::Config::breaker_for`.
    pub fn tool(&mut self, tool: &str, policy: &BreakerPolicy) -> &mut ToolHealth {
        // Look up first: the common case allocates nothing.
        if !self.tools.contains_key(tool) {
            self.tools
                .insert(tool.to_owned(), ToolHealth::new(policy.clone()));
        }
        let health = self.tools.get_mut(tool).expect("inserted above");
        health.put_policy(policy);
        health
    }

    /// `tool`'s health, if it has been called.
    pub fn get(&self, tool: &str) -> Option<&ToolHealth> {
        self.tools.get(tool)
    }

    /// `tool`'s health, if it has been called, to record an outcome.
    pub fn get_mut(&mut self, tool: &str) -> Option<&mut ToolHealth> {
        self.tools.get_mut(tool)
    }

    /// Forget the tools `keep` says no to: removed or replaced plugins (a replaced component
    /// starts with a closed breaker and no history).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.tools.retain(|name, _| keep(name));
        self.callers.retain(|(name, _), _| keep(name));
    }

    /// Every called tool's health at `now`, by name, for `/health` and `/metrics`.
    pub fn health(&self, now: Instant) -> BTreeMap<String, Health> {
        self.tools
            .iter()
            .map(|(name, h)| (name.clone(), h.health(now)))
            .collect()
    }
}
