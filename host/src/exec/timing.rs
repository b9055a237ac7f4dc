//! Where the time of one call goes, stage by stage: what `toolhost`'s benchmark reports, measured on the
//! real call path (a few `Instant::now()` reads per call, tens of nanoseconds in all).

use std::time::{Duration, Instant};

/// How long each stage of one call took (see [`Pipeline::call_timed`](super::Pipeline::call_timed)).
/// Stages a call did not reach stay zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StageTimes {
    /// A call id and the audit record's start, which hashes the input.
    pub begin: Duration,
    /// Finding the tool in the catalog.
    pub find: Duration,
    /// Input bounds, schema validation and coercion.
    pub validate: Duration,
    /// The permission decision.
    pub gate: Duration,
    /// Waiting for an approver's answer, when the gate asked.
    pub approval: Duration,
    /// A slot, the input as text, then a fresh store, WASI context and instance.
    pub instantiate: Duration,
    /// Of `instantiate`, wasmtime's instantiation alone (what any fresh instance per call costs).
    pub instance: Duration,
    /// The guest's own `call`, its host calls included: the only part that is the tool's work.
    pub guest: Duration,
    /// Throwing the store away and collecting what the guest printed.
    pub teardown: Duration,
    /// Of `teardown`, dropping the store: wasmtime's slot reset and the WASI context.
    pub store_drop: Duration,
    /// Turning the guest's answer into an outcome: output schema, truncation, messages.
    pub shape: Duration,
    /// Finishing and writing the audit record, and the statistics.
    pub record: Duration,
    /// The whole call.
    pub total: Duration,
}

impl StageTimes {
    /// Everything but the guest's own work: what the host adds to a call.
    pub fn overhead(&self) -> Duration {
        self.total.saturating_sub(self.guest)
    }

    /// The stages as a trace shows them, in order: each span's name and the time it took.
    pub(crate) fn spans(&self) -> [(&'static str, Duration); 8] {
        [
            ("begin", self.begin + self.find),
            ("validate", self.validate),
            ("gate", self.gate),
            ("approval", self.approval),
            ("instantiate", self.instantiate),
            ("guest", self.guest + self.teardown),
            ("shape", self.shape),
            ("audit", self.record),
        ]
    }
}

/// What the sandbox measured of one call (see `RunReport`).
pub(crate) struct SandboxTimes {
    pub(crate) instantiate: Duration,
    pub(crate) instance: Duration,
    pub(crate) ran: Duration,
    pub(crate) store_drop: Duration,
}

/// The stages a [`Stopwatch`] can charge time to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stage {
    Begin,
    Find,
    Validate,
    Gate,
    Approval,
    Instantiate,
    Shape,
    Record,
}

/// Charges the time since the previous mark to a stage.
pub(crate) struct Stopwatch {
    started: Instant,
    last: Instant,
    times: StageTimes,
}

impl Stopwatch {
    pub(crate) fn start() -> Self {
        let now = Instant::now();
        Self {
            started: now,
            last: now,
            times: StageTimes::default(),
        }
    }

    fn split(&mut self) -> Duration {
        let now = Instant::now();
        let d = now - self.last;
        self.last = now;
        d
    }

    /// Charge the time since the last mark to `stage`.
    pub(crate) fn mark(&mut self, stage: Stage) {
        let d = self.split();
        let t = &mut self.times;
        *match stage {
            Stage::Begin => &mut t.begin,
            Stage::Find => &mut t.find,
            Stage::Validate => &mut t.validate,
            Stage::Gate => &mut t.gate,
            Stage::Approval => &mut t.approval,
            Stage::Instantiate => &mut t.instantiate,
            Stage::Shape => &mut t.shape,
            Stage::Record => &mut t.record,
        } += d;
    }

    /// Charge the sandbox call that just returned, as the sandbox measured it: instantiation (and
    /// wasmtime's part of it), the guest's run, and the rest of the wall time since the last mark
    /// as teardown (of which the store's drop).
    pub(crate) fn sandbox(&mut self, sandbox: SandboxTimes) {
        let wall = self.split();
        self.times.instantiate += sandbox.instantiate;
        self.times.instance += sandbox.instance;
        self.times.guest += sandbox.ran.saturating_sub(sandbox.instantiate);
        self.times.teardown += wall.saturating_sub(sandbox.ran);
        self.times.store_drop += sandbox.store_drop;
    }

    /// The time since the start.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Stop: the stages, with the total.
    pub(crate) fn finish(mut self) -> StageTimes {
        self.times.total = self.started.elapsed();
        self.times
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_each_split_to_its_stage_and_sums_to_at_most_the_total() {
        let mut w = Stopwatch::start();
        std::thread::sleep(Duration::from_millis(2));
        w.mark(Stage::Find);
        w.sandbox(SandboxTimes {
            instantiate: Duration::from_millis(1),
            instance: Duration::ZERO,
            ran: Duration::from_millis(3),
            store_drop: Duration::ZERO,
        });
        w.mark(Stage::Record);
        let t = w.finish();
        assert!(t.find >= Duration::from_millis(2), "{t:?}");
        assert_eq!(
            (t.instantiate, t.guest),
            (Duration::from_millis(1), Duration::from_millis(2))
        );
        let sum = t.begin
            + t.find
            + t.validate
            + t.gate
            + t.approval
            + t.instantiate
            + t.guest
            + t.teardown
            + t.shape
            + t.record;
        assert!(sum <= t.total + Duration::from_millis(3), "{t:?}");
        assert_eq!(t.overhead(), t.total - t.guest);
    }
}
