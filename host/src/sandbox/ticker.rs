//! The epoch ticker: advances the engine's epoch every [`TICK`] while a guest runs, and sleeps
//! parked while none does, so that an idle daemon is not woken 200 times a second for nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::Thread;
use std::time::Duration;

/// How often the epoch advances while guests run: the granularity of deadlines, cancellation and
/// yielding.
pub(crate) const TICK: Duration = Duration::from_millis(5);

/// The ticker's thread, stopped when this is dropped.
pub(crate) struct Ticker {
    shared: Arc<Shared>,
    thread: Thread,
}

#[derive(Default)]
struct Shared {
    /// Guests running now (each holds a [`Running`]).
    running: AtomicUsize,
    stop: AtomicBool,
}

impl Ticker {
    /// Starts the thread that calls `advance` (the engine's `increment_epoch`) every tick.
    pub(crate) fn start(advance: impl Fn() + Send + 'static) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let seen = shared.clone();
        let handle = std::thread::Builder::new()
            .name("toolhost-epoch".into())
            .spawn(move || {
                while !seen.stop.load(Ordering::Acquire) {
                    if seen.running.load(Ordering::Acquire) == 0 {
                        // Woken by the first guest to run (an unpark that comes before this
                        // park makes it return at once), or spuriously: either way, look again.
                        std::thread::park();
                        continue;
                    }
                    std::thread::sleep(TICK);
                    advance();
                }
            })?;
        Ok(Self {
            shared,
            thread: handle.thread().clone(),
        })
    }

    /// Keeps the epoch advancing until the returned guard is dropped: held while a store runs.
    pub(crate) fn running(&self) -> Running {
        if self.shared.running.fetch_add(1, Ordering::AcqRel) == 0 {
            self.thread.unpark();
        }
        Running(self.shared.clone())
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// A guest's claim on the ticker; see [`Ticker::running`]. It owns its share of the ticker's state,
/// so that it can go with a call to the call's own thread.
pub(crate) struct Running(Arc<Shared>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_while_a_guest_runs_and_never_while_none_does() {
        let ticks = Arc::new(AtomicUsize::new(0));
        let counted = ticks.clone();
        let ticker = Ticker::start(move || {
            counted.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        let count = || ticks.load(Ordering::Relaxed);
        std::thread::sleep(TICK * 6);
        assert_eq!(count(), 0, "ticked with nothing running");
        {
            let _a = ticker.running();
            let _b = ticker.running();
            let began = std::time::Instant::now();
            while count() < 3 {
                assert!(
                    began.elapsed() < Duration::from_secs(10),
                    "no ticks while running"
                );
                std::thread::sleep(TICK);
            }
        }
        // The tick under way when the last guest stopped may still land, and none after it:
        // however late this thread or the ticker's is scheduled, one more at most.
        let stopped = count();
        std::thread::sleep(TICK * 40);
        assert!(count() <= stopped + 1, "ticked after every guest stopped");
        let idle = count();
        // And it starts again for the next guest.
        let _c = ticker.running();
        let began = std::time::Instant::now();
        while count() == idle {
            assert!(began.elapsed() < Duration::from_secs(10), "did not wake up");
            std::thread::sleep(TICK);
        }
    }
}
