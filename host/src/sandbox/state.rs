//! The fixed set of capabilities ([`Capabilities`]) and what they make together: the linker's
//! interfaces, a plugin's bindings ([`Bound`]), and one call's store data ([`State`]), which gives
//! each capability its view. The one place that knows every capability; a new one is a field in each
//! of these three and its view below.

use std::sync::Arc;

use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::budget::FileBudget;
use super::calling::{Calling, CallingView, Calls};
use super::capability::{CallInputs, Capability, CapabilityError, PluginSettings};
use super::files::{Files, FilesAndEnv, FilesBinding, FilesView, GuardedView};
use super::limiter::MemoryLimiter;
use super::network::{Binding, Network, NetworkHooks};
use super::reporting::{Reporter, Reporting, ReportingView, Reports};
use super::secrets::Secrets;
use toolhost_gate::grants::Grants;

/// Every capability a plugin may be given, each with what it holds for the whole daemon.
pub(crate) struct Capabilities {
    files: FilesAndEnv,
    network: Network,
    reporting: Reporting,
    calling: Calling,
}

/// One plugin's bindings, made at load and shared by all of its calls.
pub(crate) struct Bound {
    /// Its secrets, shared by the capabilities that use them.
    pub(crate) secrets: Arc<Secrets>,
    pub(crate) files: FilesBinding,
    network: Arc<Binding>,
    reporting: (),
    calling: <Calling as Capability<State>>::Bound,
}

/// Everything one store owns: each capability's piece of the call, the resource table they share,
/// and the memory limiter. Dropped with the store after every call.
pub(crate) struct State {
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    /// The plugin's name, for the capabilities' log lines.
    plugin: Arc<str>,
    /// Files and env: the WASI context, and the guarded filesystem's state.
    wasi: WasiCtx,
    files: Files,
    /// Network: wasi:http state, and the send-request hooks with the plugin's grant.
    http: WasiHttpCtx,
    pub(crate) net: NetworkHooks,
    /// Reporting: where log lines and progress go.
    reporter: Reporter,
    calls: Calls,
}

impl Capabilities {
    /// The capabilities, counting descriptors against the daemon-wide `budget`.
    pub(crate) fn new(budget: &Arc<FileBudget>) -> Self {
        Self {
            files: FilesAndEnv::new(budget.clone()),
            network: Network::new(budget.clone()),
            reporting: Reporting,
            calling: Calling,
        }
    }

    /// Link exactly the interfaces a plugin may import: each capability's. Raw sockets are
    /// deliberately absent; `wasi:http` is linked for every plugin (many toolchains import it by
    /// default), and a plugin without a network grant gets every request refused when it is sent.
    /// `concurrent`: the linker is the concurrent engine's, which also runs WASI 0.3 plugins.
    pub(crate) fn link(
        linker: &mut Linker<State>,
        concurrent: bool,
    ) -> Result<(), CapabilityError> {
        link::<FilesAndEnv>(linker, concurrent)?;
        link::<Reporting>(linker, concurrent)?;
        link::<Network>(linker, concurrent)?;
        link::<Calling>(linker, concurrent)?;
        Ok(())
    }

    /// Bind the plugin `name` to its grants, once, at load: a setting a capability cannot use fails
    /// here, naming the capability.
    pub(crate) fn bind(&self, name: &Arc<str>, grants: &Grants) -> Result<Bound, CapabilityError> {
        let secrets = Secrets::bind(&grants.secrets)
            .map(Arc::new)
            .map_err(|e| CapabilityError::new("secrets", e))?;
        let plugin = PluginSettings {
            name,
            grants,
            secrets: &secrets,
        };
        Ok(Bound {
            files: Capability::<State>::bind(&self.files, &plugin)?,
            network: Capability::<State>::bind(&self.network, &plugin)?,
            reporting: Capability::<State>::bind(&self.reporting, &plugin)?,
            calling: Capability::<State>::bind(&self.calling, &plugin)?,
            secrets,
        })
    }

    /// One call's store data: each capability prepared from its binding and the call's inputs.
    pub(crate) fn prepare(
        &self,
        plugin: &Arc<str>,
        bound: &Bound,
        call: &CallInputs<'_>,
        limiter: MemoryLimiter,
    ) -> Result<State, CapabilityError> {
        let (wasi, files) = Capability::<State>::prepare(&self.files, &bound.files, call)?;
        let (http, net) = Capability::<State>::prepare(&self.network, &bound.network, call)?;
        let reporter = Capability::<State>::prepare(&self.reporting, &bound.reporting, call)?;
        let calls = Capability::<State>::prepare(&self.calling, &bound.calling, call)?;
        Ok(State {
            table: ResourceTable::new(),
            limiter,
            plugin: plugin.clone(),
            wasi,
            files,
            http,
            net,
            reporter,
            calls,
        })
    }
}

impl State {
    /// Why the call's file operations were refused (paths no grant covers), taken.
    pub(crate) fn take_file_notes(&mut self) -> Vec<String> {
        self.files.take_notes()
    }
}

/// Link capability `C` (and its WASI 0.3 part when `concurrent`); an error names it.
fn link<C: Capability<State>>(
    linker: &mut Linker<State>,
    concurrent: bool,
) -> Result<(), CapabilityError> {
    C::link(linker)
        .and_then(|()| match concurrent {
            true => C::link_concurrent(linker),
            false => Ok(()),
        })
        .map_err(|e| CapabilityError::new(C::NAME, format!("cannot link: {e:#}")))
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

impl FilesView for State {
    fn guarded_fs(&mut self) -> GuardedView<'_> {
        GuardedView::new(
            &mut self.wasi,
            &mut self.table,
            &mut self.files,
            &self.plugin,
        )
    }
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

impl ReportingView for State {
    fn reporting(&mut self) -> Reports<'_> {
        Reports {
            reporter: &mut self.reporter,
            plugin: &self.plugin,
        }
    }
}

impl CallingView for State {
    fn calling(&mut self) -> &mut Calls {
        &mut self.calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_gate::network::{Destination, Secret, SecretGrant, SecretHeader};

    fn with_header(name: &str) -> Grants {
        Grants {
            secrets: vec![SecretGrant {
                name: "token".into(),
                value: Secret::new("0123456789"),
                env: Some("TOKEN".into()),
                header: Some(SecretHeader {
                    name: name.into(),
                    value: Secret::new("Bearer 0123456789"),
                    destinations: vec![Destination::parse("https://api.example.com").unwrap()],
                }),
            }],
            ..Grants::default()
        }
    }

    #[test]
    fn a_secret_header_that_is_not_http_fails_the_bind_naming_secrets() {
        let capabilities = Capabilities::new(&FileBudget::new(8));
        let e = capabilities
            .bind(&"p".into(), &with_header("bad header"))
            .err()
            .unwrap();
        assert_eq!(e.capability, "secrets");
        assert!(e.to_string().starts_with("secrets: secret 'token'"), "{e}");
        assert!(!e.to_string().contains("0123456789"), "{e}");
    }

    #[test]
    fn binds_secrets_once_for_every_capability() {
        let capabilities = Capabilities::new(&FileBudget::new(8));
        let bound = capabilities
            .bind(&"p".into(), &with_header("authorization"))
            .unwrap();
        assert_eq!(bound.secrets.headers().len(), 1);
        assert_eq!(
            bound.secrets.env().collect::<Vec<_>>(),
            [("TOKEN", "0123456789")]
        );
        assert!(!bound.files.has_dirs());
    }
}
