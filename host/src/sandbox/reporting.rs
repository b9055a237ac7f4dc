//! The reporting capability: the contract's `toolhost:plugin/host` interface, through which a
//! plugin logs and reports progress (0.1), or streams its updates (0.2, [`super::updates`]). Log
//! lines go to the daemon's log; progress goes to the host service the caller lent the call
//! ([`CallIo::progress`](super::CallIo::progress)), if any. Both are cut, kept to one line and
//! redacted of the plugin's secrets; neither can fail the call.

use std::sync::Arc;

use wasmtime::component::{Access, HasData, Linker, StreamReader};

use super::bindings::toolhost::plugin::host::{Host, LogLevel};
use super::bindings::v2;
use super::capability::{CallInputs, Capability, CapabilityError, PluginSettings};
use super::secrets::Secrets;
use super::updates::UpdatesConsumer;
use toolhost_call::call::{Progress, ProgressSink};

/// Longest log or progress message a guest may send per host call; the rest is cut.
const MAX_MESSAGE_BYTES: usize = 4096;
/// Log lines a guest may write per call; later ones are counted and dropped.
const MAX_LOG_LINES: u64 = 1000;

/// The store data's view of this capability.
pub(crate) trait ReportingView: Send {
    /// The call's reporter and the plugin's name, borrowed for one host call.
    fn reporting(&mut self) -> Reports<'_>;
}

/// The reporting capability. Linked for every plugin; binds nothing (each call brings the secrets
/// to redact).
pub(crate) struct Reporting;

/// One call's reporting: where progress goes, the secrets to redact, the log lines written so far.
pub(crate) struct Reporter {
    progress: Option<ProgressSink>,
    secrets: Arc<Secrets>,
    log_lines: u64,
    /// Whether the call has handed over its stream of updates (0.2: one per call).
    streaming: bool,
}

/// What one `toolhost:plugin/host` call sees: the call's reporter and the plugin's name.
pub(crate) struct Reports<'a> {
    /// The call's reporter.
    pub(crate) reporter: &'a mut Reporter,
    /// The plugin's name, for log lines.
    pub(crate) plugin: &'a str,
}

/// [`HasData`] for linking the contract's host interfaces to a [`Reports`].
struct HostInterface;

impl HasData for HostInterface {
    type Data<'a> = Reports<'a>;
}

impl<S: ReportingView + 'static> Capability<S> for Reporting {
    const NAME: &'static str = "reporting";
    type Bound = ();
    type PerCall = Reporter;

    /// Link the contract's imports: `toolhost:plugin/host` (and its `types`).
    fn link(linker: &mut Linker<S>) -> wasmtime::Result<()> {
        use super::bindings::toolhost::plugin::{host, types};
        types::add_to_linker::<S, HostInterface>(linker, S::reporting)?;
        host::add_to_linker::<S, HostInterface>(linker, S::reporting)
    }

    /// And `toolhost:plugin/host@0.2.0`, for WASI 0.3 plugins.
    fn link_concurrent(linker: &mut Linker<S>) -> wasmtime::Result<()> {
        use v2::toolhost::plugin::{host, types};
        types::add_to_linker::<S, HostInterface>(linker, S::reporting)?;
        host::add_to_linker::<S, HostInterface>(linker, S::reporting)
    }

    fn bind(&self, _plugin: &PluginSettings<'_>) -> Result<(), CapabilityError> {
        Ok(())
    }

    fn prepare(&self, _bound: &(), call: &CallInputs<'_>) -> Result<Reporter, CapabilityError> {
        Ok(Reporter {
            progress: call.io.progress.clone(),
            secrets: call.secrets.clone(),
            log_lines: 0,
            streaming: false,
        })
    }
}

fn clip(mut s: String) -> String {
    if toolhost_call::text::truncate_at_boundary(&mut s, MAX_MESSAGE_BYTES) {
        s.push('…');
    }
    s
}

impl super::bindings::toolhost::plugin::types::Host for Reports<'_> {}

impl Host for Reports<'_> {
    fn progress(&mut self, done: u64, total: Option<u64>, message: String) {
        let r = &*self.reporter;
        if let Some(sink) = &r.progress {
            sink(Progress {
                done,
                total,
                message: clip(r.secrets.redactor().redact(message)),
            });
        }
    }

    fn log(&mut self, level: LogLevel, message: String) {
        self.log_line(level, message);
    }
}

impl v2::toolhost::plugin::types::Host for Reports<'_> {}

impl v2::toolhost::plugin::host::Host for Reports<'_> {
    fn log(&mut self, level: v2::toolhost::plugin::host::LogLevel, message: String) {
        use v2::toolhost::plugin::host::LogLevel as V2;
        let level = match level {
            V2::Trace => LogLevel::Trace,
            V2::Debug => LogLevel::Debug,
            V2::Info => LogLevel::Info,
            V2::Warn => LogLevel::Warn,
            V2::Error => LogLevel::Error,
        };
        self.log_line(level, message);
    }
}

impl<S: ReportingView + 'static> v2::toolhost::plugin::host::HostWithStore<S> for HostInterface {
    /// Read the call's updates into its progress sink; a second stream is closed at once.
    fn updates(
        mut store: Access<'_, S, Self>,
        mut updates: StreamReader<v2::toolhost::plugin::types::Update>,
    ) {
        let reports = store.get();
        let r = &mut *reports.reporter;
        if std::mem::replace(&mut r.streaming, true) {
            let _ = updates.close(&mut store);
            return;
        }
        let consumer = UpdatesConsumer::new(r.progress.clone(), r.secrets.clone());
        // Fails only for a stream already closed, which the guest cannot hand over.
        let _ = updates.pipe(&mut store, consumer);
    }
}

impl Reports<'_> {
    /// One log line of the plugin's, cut, escaped and redacted; past [`MAX_LOG_LINES`] dropped.
    fn log_line(&mut self, level: LogLevel, message: String) {
        let r = &mut *self.reporter;
        r.log_lines += 1;
        if r.log_lines > MAX_LOG_LINES {
            return;
        }
        // One call, one log line, whatever the guest wrote: newlines and controls are escaped.
        let message =
            toolhost_call::text::one_line(&clip(r.secrets.redactor().redact(message))).into_owned();
        let plugin = toolhost_call::text::one_line(self.plugin);
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
