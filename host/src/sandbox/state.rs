//! Per-call store data: the WASI context, the memory limiter, and where host calls report to.

use std::sync::atomic::{AtomicU64, Ordering};

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Result};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::WasiHttpCtx;

use super::bindings::toolhost::plugin::host::{Host, LogLevel};
use super::files::{Files, GuardedView};
use super::network::NetworkHooks;
use toolhost_policy::call::{Progress, ProgressSink};

/// Longest log or progress message a guest may send per host call; the rest is cut.
const MAX_MESSAGE_BYTES: usize = 4096;
/// Log lines a guest may write per call; later ones are counted and dropped.
const MAX_LOG_LINES: u64 = 1000;

/// Everything one store owns. Dropped with the store after every call.
pub(crate) struct State {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) progress: Option<ProgressSink>,
    pub(crate) plugin: std::sync::Arc<str>,
    pub(crate) log_lines: u64,
    pub(crate) progress_reports: AtomicU64,
    /// wasi:http state; only reachable by plugins linked with `wasi:http` (those granted network).
    pub(crate) http: WasiHttpCtx,
    /// The send-request hook with the plugin's grant, and the redactor for its secrets.
    pub(crate) net: NetworkHooks,
    /// The paths this call may not touch, and the guarded filesystem's own state.
    pub(crate) files: Files,
}

impl State {
    /// `wasi:filesystem/types` for this store, behind the call's path guard.
    pub(crate) fn guarded_fs(&mut self) -> GuardedView<'_> {
        GuardedView::new(
            &mut self.wasi,
            &mut self.table,
            &mut self.files,
            &self.plugin,
        )
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wasmtime_wasi_io::IoView for State {
    fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }
}

fn clip(mut s: String) -> String {
    if toolhost_policy::text::truncate_at_boundary(&mut s, MAX_MESSAGE_BYTES) {
        s.push('…');
    }
    s
}

impl super::bindings::toolhost::plugin::types::Host for State {}

impl Host for State {
    fn progress(&mut self, done: u64, total: Option<u64>, message: String) {
        self.progress_reports.fetch_add(1, Ordering::Relaxed);
        if let Some(sink) = &self.progress {
            sink(Progress {
                done,
                total,
                message: clip(self.net.redactor().redact(message)),
            });
        }
    }

    fn log(&mut self, level: LogLevel, message: String) {
        self.log_lines += 1;
        if self.log_lines > MAX_LOG_LINES {
            return;
        }
        // One call, one log line, whatever the guest wrote: newlines and controls are escaped.
        let message = toolhost_policy::text::one_line(&clip(self.net.redactor().redact(message)))
            .into_owned();
        let plugin = toolhost_policy::text::one_line(&self.plugin);
        let plugin = plugin.as_ref();
        match level {
            LogLevel::Trace => tracing::trace!(plugin, "{message}"),
            LogLevel::Debug => tracing::debug!(plugin, "{message}"),
            LogLevel::Info => tracing::info!(plugin, "{message}"),
            LogLevel::Warn => tracing::warn!(plugin, "{message}"),
            LogLevel::Error => tracing::error!(plugin, "{message}"),
        }
    }
}

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
