//! What a capability is: the [`Capability`] trait and its three phases, what each phase is given,
//! and the error that names the capability that failed. Owns no capability itself.
//!
//! As in Spin's `Factor`, a capability is linked once per linker ([`Capability::link`]), bound once
//! per plugin when the plugin is loaded ([`Capability::bind`]: its grants read and checked, so a bad
//! setting fails the load and names the capability), and prepared once per call
//! ([`Capability::prepare`]: the bound settings plus the call's inputs become the piece of the
//! store's state it owns for that call). The capabilities are a fixed set, composed without dynamic
//! dispatch by the store's state (`super::state`); a capability is generic over the store's data,
//! which reaches it through a view trait the capability defines, so no capability knows the others.
//!
//! Host services reach a capability the same way: as a trait object the sandbox defines, carried
//! by the call's [`CallIo`] and handed to `prepare` in [`CallInputs`]. Progress does so today (a
//! `ProgressSink`, consumed by `super::reporting`) and so do nested tool calls (a
//! [`NestedCalls`], consumed by `super::calling`): one field of [`CallIo`] whose trait the
//! capability's module defines.

use std::sync::Arc;

use wasmtime::component::Linker;

use tokio_util::sync::CancellationToken;

use super::output::CappedOutput;
use super::report::NestedCalls;
use super::secrets::Secrets;
use toolhost_call::call::ProgressSink;
use toolhost_gate::gate::PathGuard;
use toolhost_gate::grants::{Caps, Grants};

/// What one call brings beyond its tool and input: its own limits and the host services it lends
/// the plugin. Each field is consumed by the capability that needs it.
pub struct CallIo<'a> {
    /// The paths this tool's calls may never touch (the files capability).
    pub files: Arc<PathGuard>,
    /// Where the plugin's progress reports go, if anywhere (the reporting capability).
    pub progress: Option<ProgressSink>,
    /// Cancelled by the caller to stop the call.
    pub cancel: &'a CancellationToken,
    /// Lower limits for this call (a caller's profile).
    pub caps: Caps,
    /// Who runs the tool calls the plugin makes (the calling capability), when it may make any.
    pub tools: Option<Arc<dyn NestedCalls>>,
    /// The caller's own credentials for this call (headers only; redacted like the plugin's
    /// secrets). Empty for most calls.
    pub credentials: Vec<toolhost_gate::network::SecretGrant>,
}

/// A capability a plugin may be given: its three phases. `S` is the store's data, which gives the
/// capability's host functions their view of its per-call piece.
pub(crate) trait Capability<S> {
    /// Its name in errors and logs.
    const NAME: &'static str;
    /// What every call of one plugin shares, bound at load.
    type Bound: Send + Sync + 'static;
    /// Its piece of one call's store state.
    type PerCall: Send + 'static;

    /// Add its host interfaces to a linker; once per linker.
    fn link(linker: &mut Linker<S>) -> wasmtime::Result<()>;

    /// Add what only WASI 0.3 plugins import (`async` functions, streams), to the linker of the
    /// engine that runs them, after [`Self::link`]; nothing by default.
    fn link_concurrent(_linker: &mut Linker<S>) -> wasmtime::Result<()> {
        Ok(())
    }

    /// Read and check a plugin's settings, once, when the plugin is loaded.
    fn bind(&self, plugin: &PluginSettings<'_>) -> Result<Self::Bound, CapabilityError>;

    /// Its piece of one call's state, from what was bound and what the call brings. On the per-call
    /// path: no more allocation than the piece itself needs.
    fn prepare(
        &self,
        bound: &Self::Bound,
        call: &CallInputs<'_>,
    ) -> Result<Self::PerCall, CapabilityError>;
}

/// What binding is given: one plugin's name and grants, and its secrets, bound before the
/// capabilities (they are shared: env, headers, redaction).
pub(crate) struct PluginSettings<'a> {
    /// The plugin's name, for messages.
    pub(crate) name: &'a Arc<str>,
    /// Its grants, as the config validated them.
    pub(crate) grants: &'a Grants,
    /// Its secrets, bound.
    pub(crate) secrets: &'a Arc<Secrets>,
}

/// What preparing is given: what the caller brought for the call, and what the sandbox set up for it.
pub(crate) struct CallInputs<'a> {
    /// The caller's part: path guard, host services (progress), cancellation, caps.
    pub(crate) io: &'a CallIo<'a>,
    /// Where the guest's stdout goes (capped).
    pub(crate) stdout: &'a CappedOutput,
    /// Where the guest's stderr goes (capped).
    pub(crate) stderr: &'a CappedOutput,
    /// Whether the call runs on a thread of its own, where blocking host calls may block.
    pub(crate) apart: bool,
    /// When the call's wall-clock limit passes.
    pub(crate) deadline: std::time::Instant,
    /// The plugin's secrets and the caller's credentials for this call.
    pub(crate) secrets: &'a Arc<Secrets>,
}

/// A capability that refused a plugin's settings (at load) or could not set up a call, by name.
#[derive(Debug, thiserror::Error)]
#[error("{capability}: {source}")]
pub struct CapabilityError {
    /// The capability's name (`files`, `network`, `secrets`, `reporting`).
    pub capability: &'static str,
    /// What went wrong.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl CapabilityError {
    /// `source`, as the capability `capability` reports it.
    pub(crate) fn new(
        capability: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self {
            capability,
            source: source.into(),
        }
    }
}
