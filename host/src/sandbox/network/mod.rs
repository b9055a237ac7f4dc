//! The network capability: outgoing HTTP (`wasi:http` 0.2 outgoing-handler) for plugins granted it.
//!
//! Its phases (`Network` implements `Capability`): link once (`wasi:http` for every plugin, since
//! many toolchains import it by default; raw `wasi:sockets` is linked for no one); validated at
//! config load (`toolhost_config::config` parses `Destination` patterns); bind once per plugin at
//! load (`Binding`: the grant); prepare per call (`NetworkHooks` with the binding, the call's
//! secrets for the headers the host adds, and a request counter, enforced in `hooks`: without a
//! grant every request is refused there, naming the plugin).
//! The policy pieces (destinations, address classes, grants) live in the pure
//! `toolhost_gate::network`; here `plan` applies them to one request (pure: no I/O), `transport`
//! resolves, connects and speaks TLS and HTTP, `body` caps the bodies while they flow, `refusal` says
//! why a request did not go and what the guest receives for it, and `hooks` is the entry that ties
//! them together for each request. Secrets are `super::secrets`'.

mod body;
mod hooks;
mod plan;
mod refusal;
mod transport;

use std::sync::Arc;

use wasmtime::component::Linker;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpView};

pub(crate) use self::hooks::{Binding, NetworkHooks};
pub use self::refusal::NetError;

use super::budget::FileBudget;
use super::capability::{CallInputs, Capability, CapabilityError, PluginSettings};

/// The network capability, with the daemon-wide descriptor budget each connection counts against.
pub(crate) struct Network {
    budget: Arc<FileBudget>,
}

impl Network {
    /// The capability, its connections counted against `budget`.
    pub(crate) fn new(budget: Arc<FileBudget>) -> Self {
        Self { budget }
    }
}

impl<S: WasiHttpView + 'static> Capability<S> for Network {
    const NAME: &'static str = "network";
    type Bound = Arc<Binding>;
    /// The wasi:http context and the send-request hooks of one call.
    type PerCall = (WasiHttpCtx, NetworkHooks);

    /// Add `wasi:http/types` and `wasi:http/outgoing-handler` (nothing else) to a linker that
    /// already has the base WASI interfaces.
    fn link(linker: &mut Linker<S>) -> wasmtime::Result<()> {
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
    }

    /// WASI 0.3's `wasi:http` client: it sends through the same hooks (`send_request`), so the
    /// same grant, allowlist, secrets and caps apply.
    fn link_concurrent(linker: &mut Linker<S>) -> wasmtime::Result<()> {
        wasmtime_wasi_http::p3::add_to_linker(linker)
    }

    fn bind(&self, plugin: &PluginSettings<'_>) -> Result<Self::Bound, CapabilityError> {
        Ok(Arc::new(Binding::new(
            plugin.name,
            plugin.grants.network.as_ref(),
        )))
    }

    fn prepare(
        &self,
        bound: &Self::Bound,
        call: &CallInputs<'_>,
    ) -> Result<Self::PerCall, CapabilityError> {
        let hooks =
            NetworkHooks::new(bound.clone(), call.secrets.clone()).with_budget(self.budget.clone());
        Ok((WasiHttpCtx::new(), hooks))
    }
}
