//! The calling capability: the contract's `toolhost:plugin/tools` interface, through which a plugin
//! granted `call-tools` calls other tools of its host. The sandbox knows no pipeline: the caller
//! lends the call a [`NestedCalls`] service ([`CallIo::tools`](super::CallIo::tools)) that runs
//! each nested call the whole way, as the same caller; this module checks the grant, bounds what
//! crosses, and stops every nested call when the calling call's store goes away.
//!
//! Deny by default: without a grant the plugin's `list` is empty and every `call` is refused
//! naming the setting; with one, only the tools its patterns name are listed or called.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::{CancellationToken, DropGuard};
use wasmtime::component::{HasData, Linker};

use super::bindings::toolhost::plugin::tools::{CallFailure, Host};
use super::bindings::toolhost::plugin::types::{ToolHints, ToolOutput, ToolSpec};
use super::capability::{CallInputs, Capability, CapabilityError, PluginSettings};
use super::report::{GuestSpec, NestedCalls};
use toolhost_gate::gate::ToolPattern;

/// The store data's view of this capability.
pub(crate) trait CallingView: Send {
    /// The call's nested-call piece.
    fn calling(&mut self) -> &mut Calls;
}

/// The calling capability. Linked for every plugin; binds the plugin's `call-tools` patterns.
pub(crate) struct Calling;

/// One call's piece: what it may call, through whom, until when.
pub(crate) struct Calls {
    granted: Arc<[ToolPattern]>,
    /// The service, lent only to calls that may use it.
    lent: Option<Lent>,
    by: Instant,
    plugin: Arc<str>,
}

/// The nested-call service as one call holds it.
struct Lent {
    service: Arc<dyn NestedCalls>,
    /// Cancelled when the caller cancels, and when this call's store drops (its deadline, its
    /// end): nested calls never outlive the call that made them.
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
}

/// [`HasData`] for linking `toolhost:plugin/tools` to a [`Calls`].
struct ToolsInterface;

impl HasData for ToolsInterface {
    type Data<'a> = &'a mut Calls;
}

impl<S: CallingView + 'static> Capability<S> for Calling {
    const NAME: &'static str = "calling";
    type Bound = (Arc<[ToolPattern]>, Arc<str>);
    type PerCall = Calls;

    fn link(linker: &mut Linker<S>) -> wasmtime::Result<()> {
        super::bindings::toolhost::plugin::tools::add_to_linker::<S, ToolsInterface>(
            linker,
            S::calling,
        )
    }

    fn bind(&self, plugin: &PluginSettings<'_>) -> Result<Self::Bound, CapabilityError> {
        Ok((plugin.grants.calls.clone().into(), plugin.name.clone()))
    }

    fn prepare(
        &self,
        (granted, plugin): &Self::Bound,
        call: &CallInputs<'_>,
    ) -> Result<Calls, CapabilityError> {
        // A call of a plugin without a grant costs nothing more than the empty piece.
        let lent = call
            .io
            .tools
            .as_ref()
            .filter(|_| !granted.is_empty())
            .map(|service| {
                let stop = call.io.cancel.child_token();
                Lent {
                    service: service.clone(),
                    _stop_on_drop: stop.clone().drop_guard(),
                    stop,
                }
            });
        Ok(Calls {
            granted: granted.clone(),
            lent,
            by: call.deadline,
            plugin: plugin.clone(),
        })
    }
}

impl Calls {
    fn grants(&self, tool: &str) -> bool {
        self.granted.iter().any(|p| p.matches(tool))
    }
}

impl Host for &mut Calls {
    fn list(&mut self) -> Vec<ToolSpec> {
        let Some(lent) = &self.lent else {
            return Vec::new();
        };
        lent.service
            .tools()
            .into_iter()
            .filter(|s| self.grants(&s.name))
            .map(to_wit)
            .collect()
    }

    async fn call(&mut self, name: String, input: String) -> Result<ToolOutput, CallFailure> {
        let refuse = |message: String| CallFailure {
            kind: "denied".into(),
            message,
        };
        let mut shown = toolhost_call::text::one_line(&name).into_owned();
        toolhost_call::text::truncate_at_boundary(&mut shown, 80);
        // Only a name a tool can have is matched at all: a glob's `*` would take a newline.
        if !toolhost_call::tool::is_valid_name(&name) || !self.grants(&name) {
            return Err(refuse(format!(
                "Permission denied: plugin '{}' may not call tool '{shown}'; the operator grants it \
                 with `call-tools = [\"{shown}\"]` in [plugins.{}] of toolhost.toml",
                self.plugin, self.plugin
            )));
        }
        let Some(lent) = &self.lent else {
            return Err(refuse(format!(
                "Permission denied: tool calls from inside a plugin are not available to this call of '{}'",
                self.plugin
            )));
        };
        let nested = lent
            .service
            .call(name, input, lent.stop.child_token(), self.by);
        match nested.await {
            Ok(out) => Ok(ToolOutput {
                content: out.content,
                structured: out.structured,
            }),
            Err(f) => Err(CallFailure {
                kind: f.kind,
                message: f.message,
            }),
        }
    }
}

fn to_wit(s: GuestSpec) -> ToolSpec {
    let mut hints = ToolHints::empty();
    for (on, flag) in [
        (s.hints.read_only, ToolHints::READ_ONLY),
        (s.hints.destructive, ToolHints::DESTRUCTIVE),
        (s.hints.idempotent, ToolHints::IDEMPOTENT),
        (s.hints.open_world, ToolHints::OPEN_WORLD),
    ] {
        if on {
            hints |= flag;
        }
    }
    ToolSpec {
        name: s.name,
        title: s.title,
        description: s.description,
        input_schema: s.input_schema,
        output_schema: s.output_schema,
        hints,
        permission_subject: s.permission_subject,
    }
}
