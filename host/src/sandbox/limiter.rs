//! The per-call memory limiter: caps the guest's linear memory and tables, and remembers the peak
//! so the audit log can report it.

use wasmtime::{ResourceLimiter, Result};

/// Caps the guest's linear memory and remembers the peak, so the audit log can report it.
pub(crate) struct MemoryLimiter {
    limit: usize,
    used: usize,
    pub(crate) peak: usize,
    pub(crate) hit: bool,
}

impl MemoryLimiter {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            used: 0,
            peak: 0,
            hit: false,
        }
    }
}

/// The error a refused memory grow traps with, so the caller can tell it from other traps.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {limit} bytes reached (wanted {wanted})")]
pub(crate) struct MemoryLimitHit {
    pub(crate) limit: usize,
    pub(crate) wanted: usize,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> Result<bool> {
        let wanted = self.used - current.min(self.used) + desired;
        if wanted > self.limit {
            self.hit = true;
            return Err(MemoryLimitHit {
                limit: self.limit,
                wanted,
            }
            .into());
        }
        self.used = wanted;
        self.peak = self.peak.max(wanted);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> Result<bool> {
        // Tables cost host memory too; a million elements is far beyond what real plugins use.
        Ok(desired <= 1_000_000)
    }

    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        16
    }
}
