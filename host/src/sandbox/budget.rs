//! The daemon-wide budget of descriptors that calls hold: files and directories plugins open (and the
//! granted directories each call preopens), and outgoing connections. Each call is also capped on its
//! own (`run::MAX_HANDLES`), but 64 calls at 1,024 handles each would exhaust a process's open-files
//! limit, and then an unrelated call, or the daemon's own accept loop, would fail with "Too many open
//! files". With the budget, the call that asks for one descriptor too many fails alone, saying why.
//!
//! Every descriptor is a [`FileUnit`] taken from the [`FileBudget`] and returned when dropped, so a
//! unit cannot leak: it lives exactly as long as the descriptor's table entry, the call's store, or the
//! connection that holds it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Descriptors kept for the daemon itself before calls get a share: stdio, the audit log, the compile
/// cache, plugin files being loaded, the folder watcher, the runtime's own, name resolution.
const RESERVED: u64 = 128;
/// The smallest budget, whatever the limit: a daemon that cannot let calls open anything is useless.
const MINIMUM: usize = 16;

/// Descriptors all calls together may hold.
#[derive(Debug)]
pub(crate) struct FileBudget {
    limit: usize,
    used: AtomicUsize,
}

/// One descriptor's share of the budget, given back when dropped.
#[derive(Debug)]
pub(crate) struct FileUnit(Arc<FileBudget>);

/// Why a call could not open another file, directory or connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "toolhost's open-file budget is exhausted: all calls together may hold {limit} files, directories \
     and connections (derived from the daemon's open-files limit, or `[engine] open-files`), and this \
     call asked for one more while holding {held}; other calls are unaffected, try again when fewer run"
)]
pub(crate) struct BudgetExhausted {
    /// The daemon-wide limit.
    pub(crate) limit: usize,
    /// What the refused call held at the time.
    pub(crate) held: usize,
}

impl FileBudget {
    /// A budget of `limit` descriptors.
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// The budget for this process: half of what its open-files limit leaves after the daemon's own
    /// reserve (the other half is for HTTP connections), lowered to `configured` if that is smaller.
    pub(crate) fn for_process(configured: Option<usize>) -> Arc<Self> {
        let derived = derive(open_files_limit());
        let limit = configured.map_or(derived, |c| c.min(derived));
        tracing::debug!(
            limit,
            derived,
            "descriptor budget for calls (files, directories, connections)"
        );
        Self::new(limit)
    }

    /// The daemon-wide limit.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Descriptors held now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Take one unit, or say the budget is spent (`held`: what the asking call holds, for the message).
    pub(crate) fn take(self: &Arc<Self>, held: usize) -> Result<FileUnit, BudgetExhausted> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used < self.limit).then_some(used + 1)
            })
            .map(|_| FileUnit(self.clone()))
            .map_err(|_| BudgetExhausted {
                limit: self.limit,
                held,
            })
    }
}

impl Drop for FileUnit {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The budget a soft open-files limit of `soft` allows.
fn derive(soft: u64) -> usize {
    let share = soft.saturating_sub(RESERVED) / 2;
    usize::try_from(share).unwrap_or(usize::MAX).max(MINIMUM)
}

/// The soft open-files limit in force (`main` has already raised it to the hard limit).
fn open_files_limit() -> u64 {
    #[cfg(unix)]
    match rlimit::getrlimit(rlimit::Resource::NOFILE) {
        Ok((soft, _)) => return soft,
        Err(e) => tracing::warn!("cannot read the open-files limit ({e}); assuming 1024"),
    }
    1024
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gives_calls_half_of_what_the_daemon_does_not_keep() {
        assert_eq!(derive(1024), 448);
        assert_eq!(derive(1 << 20), ((1 << 20) - 128) / 2);
        assert_eq!(derive(100), MINIMUM);
    }

    #[test]
    fn refuses_past_the_limit_and_takes_back_what_is_dropped() {
        let budget = FileBudget::new(2);
        let a = budget.take(0).unwrap();
        let b = budget.take(1).unwrap();
        assert_eq!(
            budget.take(2).unwrap_err(),
            BudgetExhausted { limit: 2, held: 2 }
        );
        assert_eq!(budget.used(), 2);
        drop(a);
        let c = budget.take(1).unwrap();
        drop((b, c));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_configured_budget_never_exceeds_the_process_limit() {
        let derived = derive(open_files_limit());
        assert_eq!(FileBudget::for_process(Some(10)).limit(), 10.min(derived));
        assert_eq!(FileBudget::for_process(Some(usize::MAX)).limit(), derived);
    }
}
