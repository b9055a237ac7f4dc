//! Memory given back once the daemon goes quiet. What a burst of concurrent calls allocated and
//! freed stays in glibc's per-thread arenas: only the top of a heap is returned on its own, so a
//! daemon that once served 32 calls at once kept about a MiB more for the rest of its life.
//! `malloc_trim` returns every free page to the kernel. It runs once per quiet spell, when no call
//! has run for [`QUIET`], and never while one runs; a busy daemon pays nothing but a timer a second.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long no call may have run before the free memory is given back.
const QUIET: Duration = Duration::from_secs(1);

/// The calls' slots, and when they were last all free.
pub(crate) struct Slots {
    slots: Arc<Semaphore>,
    max: usize,
    /// [`QUIET`], but in tests.
    quiet: Duration,
    /// Calls that ended: a pending trim that sees this move waits for another quiet spell.
    ended: AtomicU64,
    /// Whether a trim is waiting for the daemon to stay quiet.
    pending: AtomicBool,
}

/// A running call's slot; given back when dropped.
pub(crate) struct Slot {
    slots: Arc<Slots>,
    permit: Option<OwnedSemaphorePermit>,
}

impl Slots {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Self::quiet_for(max, QUIET)
    }

    fn quiet_for(max: usize, quiet: Duration) -> Arc<Self> {
        Arc::new(Self {
            slots: Arc::new(Semaphore::new(max)),
            max,
            quiet,
            ended: AtomicU64::new(0),
            pending: AtomicBool::new(false),
        })
    }

    /// A slot, unless `max` calls are running.
    pub(crate) fn try_take(self: &Arc<Self>) -> Option<Slot> {
        let permit = self.slots.clone().try_acquire_owned().ok()?;
        Some(Slot {
            slots: self.clone(),
            permit: Some(permit),
        })
    }

    /// The most calls that may run at once.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    pub(crate) fn running(&self) -> usize {
        self.max - self.slots.available_permits()
    }

    fn ended(self: &Arc<Self>) {
        self.ended.fetch_add(1, Ordering::Relaxed);
        if self.running() > 0 || self.pending.swap(true, Ordering::AcqRel) {
            return;
        }
        // Outside a runtime (a library user's synchronous drop), nothing is given back.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(self.clone().trim_when_quiet());
        } else {
            self.pending.store(false, Ordering::Release);
        }
    }

    async fn trim_when_quiet(self: Arc<Self>) {
        loop {
            let seen = self.ended.load(Ordering::Relaxed);
            tokio::time::sleep(self.quiet).await;
            if self.ended.load(Ordering::Relaxed) != seen || self.running() > 0 {
                continue;
            }
            self.pending.store(false, Ordering::Release);
            // A call that ended between the check and the store saw a trim pending and left it to
            // this one: wait for quiet again, unless another trim took over.
            if self.ended.load(Ordering::Relaxed) == seen {
                break;
            }
            if self.pending.swap(true, Ordering::AcqRel) {
                return;
            }
        }
        // A few hundred microseconds walking the arenas: off the runtime's threads.
        drop(tokio::task::spawn_blocking(trim));
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        drop(self.permit.take());
        self.slots.ended();
    }
}

/// Give the heap's free pages back to the kernel.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    #[allow(
        unsafe_code,
        reason = "malloc_trim only walks glibc's own free lists, under their locks"
    )]
    // SAFETY: no preconditions; any thread may call it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators give memory back on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: Duration = Duration::from_millis(500);

    #[tokio::test]
    async fn trims_once_per_quiet_spell_and_never_while_a_call_runs() {
        let slots = Slots::quiet_for(2, Q);
        let a = slots.try_take().unwrap();
        let b = slots.try_take().unwrap();
        assert!(slots.try_take().is_none(), "two slots only");
        assert_eq!(slots.running(), 2);
        drop(a);
        assert!(
            !slots.pending.load(Ordering::Acquire),
            "a call still runs: nothing scheduled"
        );
        drop(b);
        assert!(slots.pending.load(Ordering::Acquire));
        // A call within the quiet second postpones the trim.
        tokio::time::sleep(Q / 2).await;
        drop(slots.try_take().unwrap());
        // The trim's first look, at Q, saw that call: it waits until 2Q.
        tokio::time::sleep(Q * 4 / 5).await;
        assert!(
            slots.pending.load(Ordering::Acquire),
            "the spell started again"
        );
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while slots.pending.load(Ordering::Acquire) {
            assert!(tokio::time::Instant::now() < deadline, "never trimmed");
            tokio::time::sleep(Q / 10).await;
        }
        assert_eq!(slots.running(), 0);
    }
}
