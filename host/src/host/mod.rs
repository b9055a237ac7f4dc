//! The one value that owns a daemon: [`Host`], wired from a [`Config`] in one place. It owns the
//! config, the sandbox, the services every call shares (the plugin registry, the audit log,
//! admission, stats, live calls, questions, health, quotas), the pipeline over them, the
//! state store (ready, or pending while its server is unreachable), telemetry's exporters, and the
//! shutdown of what runs in the background (the store's heartbeat and its retry loop).
//!
//! The CLI's commands, the daemon, the end-to-end tests and the benchmarks all open a `Host` here,
//! so a host is built the same way everywhere. It decides nothing about calls (the pipeline does)
//! and knows no wire format (the server does); [`Host::serve`] hands the daemon to the server.

mod store;

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::audit::{AuditError, AuditLog};
use crate::exec::{Pipeline, Services};
use crate::registry::{Registry, RegistryError};
use crate::sandbox::{Inspection, Sandbox, SandboxError};
use crate::server::{ServeError, ServeOptions, Server};
use crate::state::StateError;
use crate::tasks::Tasks;
use crate::telemetry::{Telemetry, TelemetryError};
use toolhost_config::config::{Config, EngineOptions};

use self::store::{Background, TaskStore};

/// How long [`Host::shutdown`] waits for the background work (a heartbeat mid-write) to stop.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// Why a host could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The engine could not be configured.
    #[error(transparent)]
    Engine(#[from] SandboxError),
    /// The audit log could not be opened.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// The plugins folder could not be loaded.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// Telemetry is enabled but its exporters cannot start (a bad endpoint or `OTEL_*` value).
    #[error(transparent)]
    Telemetry(#[from] TelemetryError),
    /// The state store cannot be used and waiting will not help: the embedded file cannot be
    /// opened, or the database was migrated by a newer toolhost. (A PostgreSQL server that is
    /// down is not an error: the host waits for it.)
    #[error(transparent)]
    State(#[from] StateError),
}

/// One daemon's parts, wired from one config. Open it with [`Host::open`] (calls only: `call`,
/// `batch`, tests, benchmarks) or [`Host::open_daemon`] (also the state store and telemetry:
/// `serve`); run it with [`Host::serve`]; end it with [`Host::shutdown`]. Dropping a host stops its
/// background work without flushing telemetry.
pub struct Host {
    config: Arc<Config>,
    sandbox: Arc<Sandbox>,
    /// What the pipeline and the front ends share.
    services: Arc<Services>,
    pipeline: Arc<Pipeline>,
    /// The daemon's tasks; `None` for a host that runs calls only.
    store: Option<TaskStore>,
    /// The exporters, when telemetry is on. The spans and instruments the pipeline and the server
    /// record into stay behind OpenTelemetry's process-wide providers (the hot path reaches them
    /// without a handle); the host owns when export starts and when it is flushed.
    telemetry: Option<Telemetry>,
    /// Cancelled at shutdown (or drop): the heartbeat and the store's retry loop stop.
    stop: CancellationToken,
    /// The background work `stop` ends, awaited (briefly) at shutdown.
    background: Background,
}

impl Host {
    /// `config`'s plugins alone, for commands that neither run nor record a call (`list`): no
    /// audit log is opened, no pipeline built.
    pub async fn open_registry(config: Config) -> Result<Registry, HostError> {
        let sandbox = Sandbox::new(&config.engine_options())?;
        Ok(Registry::open(Arc::new(sandbox), Arc::new(config)).await?)
    }

    /// `config`'s plugins, not loaded yet: [`Registry::reload`] loads them (`list` shows the
    /// progress meanwhile). The plugins folder must be readable, and every `[plugins.NAME]` name
    /// a plugin.
    pub fn unloaded_registry(config: Config) -> Result<Registry, HostError> {
        let sandbox = Sandbox::new(&config.engine_options())?;
        Ok(Registry::new(Arc::new(sandbox), Arc::new(config))?)
    }

    /// What a component imports and exports, and whether it fits the contract, judged by an
    /// engine of its own with default options: `toolhost inspect` looks at the file alone, not at
    /// a host's config. The outer error is the engine's; the inner one says why the file is not a
    /// component at all.
    pub fn inspect(component: &[u8]) -> Result<Result<Inspection, SandboxError>, HostError> {
        let sandbox = Sandbox::new(&EngineOptions::default())?;
        Ok(sandbox.inspect(component))
    }

    /// A host that runs calls: the pipeline over `config`'s plugins, recording to its audit log
    /// (unless disabled), running at most `max_calls` calls at once. No state store, no telemetry:
    /// what `toolhost call` and `toolhost batch` run, and what in-process tests drive.
    pub async fn open(config: Config, max_calls: usize) -> Result<Self, HostError> {
        let (config, sandbox, services) =
            open_services(Arc::new(config), max_calls, Plugins::Now).await?;
        Ok(Self {
            config,
            sandbox,
            pipeline: Pipeline::new(services.clone()),
            services,
            store: None,
            telemetry: None,
            stop: CancellationToken::new(),
            background: Arc::default(),
        })
    }

    /// The daemon `toolhost serve` runs: [`Host::open`] with `server.max-concurrent-calls`, plus
    /// the state store's tasks (beating their heartbeat until [`Host::shutdown`]) and telemetry
    /// export when enabled. A PostgreSQL store that is down is waited for in the background
    /// (`/ready` answers 503 meanwhile); an unusable one is an error ([`HostError::State`]).
    pub async fn open_daemon(config: Config) -> Result<Self, HostError> {
        let config = Arc::new(config);
        let stop = CancellationToken::new();
        // Until the host exists, an error stops the heartbeat of a store opened meanwhile.
        let opening = stop.clone().drop_guard();
        let background = Background::default();
        // The state store opens while the plugins load. Polled first on purpose: it hands its file
        // to the blocking pool at once, where the engine, built next on this thread, would have
        // held it back by as long as the build takes.
        let (tasks, opened) = tokio::join!(
            store::open_tasks(&config, &stop, &background),
            open_services(
                config.clone(),
                config.server.max_concurrent_calls,
                Plugins::Later
            )
        );
        let (config, sandbox, services) = opened?;
        // The daemon answers at once; each plugin serves as soon as it is loaded.
        let registry = services.registry.clone();
        tokio::spawn(async move {
            if let Err(e) = registry.reload().await {
                tracing::error!("loading the plugins failed: {e}");
            }
        });
        let telemetry = crate::telemetry::start(&config.telemetry)?;
        let mut host = Self {
            config,
            sandbox,
            pipeline: Pipeline::new(services.clone()),
            services,
            store: None,
            telemetry,
            stop,
            background,
        };
        match TaskStore::new(tasks, &host.config, &host.stop, &host.background) {
            Ok(store) => {
                store.share(&host.services, &host.stop, &host.background);
                host.store = Some(store);
            }
            Err(e) => {
                host.flush_telemetry();
                return Err(e.into());
            }
        }
        opening.disarm();
        Ok(host)
    }

    /// The validated config this host was opened from.
    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    /// The engine every plugin of this host is compiled and run by.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    /// The plugins, as loaded now (hot reload swaps its catalog, not the registry).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.services.registry
    }

    /// Where every call is recorded.
    pub fn audit(&self) -> &AuditLog {
        &self.services.audit
    }

    /// What every call and front end of this host shares.
    pub fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// Runs the calls: the one way in for every front end.
    pub fn pipeline(&self) -> &Arc<Pipeline> {
        &self.pipeline
    }

    /// The daemon's tasks, once the state store is open; `None` before that, and always for a host
    /// opened with [`Host::open`].
    pub fn tasks(&self) -> Option<Arc<Tasks>> {
        self.store.as_ref().and_then(TaskStore::ready)
    }

    /// The server state over this host's pipeline, limited as `[server]` says, with the tasks
    /// attached now or as soon as the store is reachable. [`Host::serve`] runs one; tests take its
    /// routes or an MCP handler.
    pub fn server(&self) -> Server {
        let server = Server::new(self.pipeline.clone(), self.config.server.clone());
        if let Some(store) = &self.store {
            store.attach(&server, &self.stop, &self.background);
        }
        server
    }

    /// Run the daemon until a signal (or, on stdio alone, until the client closes stdin); calls in
    /// flight are drained before this returns. Then [`Host::shutdown`].
    pub async fn serve(&self, options: ServeOptions) -> Result<(), ServeError> {
        if options.hot_reload {
            self.watch();
        }
        crate::server::serve(self.server(), options).await
    }

    /// Reload plugins when the plugins folder changes, and their policies when the policy file
    /// does, until the host shuts down. Watching starts before this returns: a plugin dropped in
    /// right after the daemon says it serves is seen.
    pub fn watch(&self) {
        match crate::registry::watch(self.services.registry.clone()) {
            Ok(watching) => {
                let handle = tokio::spawn(watching.run(self.stop.child_token()));
                self.background
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(handle);
            }
            Err(e) => tracing::warn!("hot reload is off: cannot watch the plugins folder: {e}"),
        }
    }

    /// Stop the background work (the heartbeat, a store still being waited for) and flush
    /// telemetry: the spans and metrics of the last calls go out before the process does.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        let handles = std::mem::take(
            &mut *self
                .background
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let stopped = futures_util::future::join_all(handles);
        if tokio::time::timeout(STOP_WAIT, stopped).await.is_err() {
            tracing::warn!("the state store's heartbeat did not stop in time");
        }
        self.flush_telemetry();
    }

    /// Export what telemetry has pending and stop it (at most once).
    fn flush_telemetry(&mut self) {
        if let Some(t) = self.telemetry.take() {
            t.shutdown();
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// When a host's plugins load.
enum Plugins {
    /// Before the host opens: `call`, `batch` and tests see every plugin from the start.
    Now,
    /// After: the daemon answers at once and serves each plugin when it is ready.
    Later,
}

/// The sandbox, and the services (registry and audit log among them) `config` describes.
async fn open_services(
    config: Arc<Config>,
    max_calls: usize,
    plugins: Plugins,
) -> Result<(Arc<Config>, Arc<Sandbox>, Arc<Services>), HostError> {
    let audit = match &config.audit_path {
        Some(path) => AuditLog::open(path, config.audit.clone())?,
        None => AuditLog::disabled(),
    };
    let sandbox = Arc::new(Sandbox::new(&config.engine_options())?);
    let registry = match plugins {
        Plugins::Now => Registry::open(sandbox.clone(), config.clone()).await?,
        Plugins::Later => Registry::new(sandbox.clone(), config.clone())?,
    };
    let services = Services::new(config.clone(), Arc::new(registry), audit, max_calls);
    Ok((config, sandbox, services))
}

#[cfg(test)]
mod tests;
