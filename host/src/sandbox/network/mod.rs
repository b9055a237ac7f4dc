//! Outgoing HTTP (`wasi:http` 0.2 outgoing-handler) for plugins granted network, and named secrets.
//!
//! Three phases, as in Spin's factors: link once (`add_to_linker`: `wasi:http` for every plugin,
//! since many toolchains import it by default; raw `wasi:sockets` is linked for no one), validate
//! once, at config load (`toolhost_policy::config` parses `Destination` patterns and reads
//! secrets: a bad one is a config error), bind once per plugin at load (`Binding`: the grant, the
//! secret headers, the redactor), prepare per call (`prepare`: `NetworkHooks` with the binding and
//! a request counter, enforced in `hooks`: without a grant every request is refused there, naming
//! the plugin).
//! The policy pieces (destinations, address classes, grants, secrets) live in the pure
//! `toolhost_policy::network`; here `plan` applies them to one request (pure: no I/O), `transport`
//! resolves, connects and speaks TLS and HTTP, `body` caps the bodies while they flow, `refusal` says
//! why a request did not go and what the guest receives for it, and `hooks` is the entry that ties
//! them together for each request.

mod body;
mod hooks;
mod plan;
mod refusal;
mod transport;

use std::sync::Arc;

use wasmtime::component::Linker;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

pub(crate) use self::hooks::{Binding, NetworkHooks};
pub use self::refusal::NetError;
use toolhost_policy::network::Redactor;

use super::budget::FileBudget;
use super::state::State;

/// Add `wasi:http/types` and `wasi:http/outgoing-handler` (nothing else) to a linker that already has
/// the base WASI interfaces.
pub(crate) fn add_to_linker(l: &mut Linker<State>) -> wasmtime::Result<()> {
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(l)
}

impl WasiHttpView for State {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.net,
        }
    }
}

/// A call's report with the plugin's secrets replaced in everything the guest produced: content,
/// structured output, its error messages, trap messages (which quote stderr), stdout and stderr.
pub(crate) fn redact_report(
    report: super::RunReport<Result<super::GuestOutput, super::GuestError>>,
    r: &Redactor,
) -> super::RunReport<Result<super::GuestOutput, super::GuestError>> {
    use super::{GuestError, GuestOutput, RunError};
    if r.is_empty() {
        return report;
    }
    let result = match report.result {
        Ok(Ok(out)) => Ok(Ok(GuestOutput {
            content: r.redact(out.content),
            structured: r.redact_opt(out.structured),
        })),
        Ok(Err(GuestError::InvalidInput(m))) => Ok(Err(GuestError::InvalidInput(r.redact(m)))),
        Ok(Err(GuestError::Failed(m))) => Ok(Err(GuestError::Failed(r.redact(m)))),
        Err(RunError::Trap(m)) => Err(RunError::Trap(r.redact(m))),
        Err(other) => Err(other),
    };
    super::RunReport {
        result,
        stdout: r.redact(report.stdout),
        stderr: r.redact(report.stderr),
        network: report.network.into_iter().map(|n| r.redact(n)).collect(),
        ..report
    }
}

/// The wasi:http context and send-request hooks for one call of the plugin bound in `binding`,
/// each connection counted against `budget`.
pub(crate) fn prepare(
    binding: &Arc<Binding>,
    budget: &Arc<FileBudget>,
) -> (WasiHttpCtx, NetworkHooks) {
    let hooks = NetworkHooks::new(binding.clone()).with_budget(budget.clone());
    (WasiHttpCtx::new(), hooks)
}
