//! The one place that wires a host from a [`Config`]: the engine, the plugin registry, the audit
//! log and the pipeline over them. The CLI commands, the daemon, the end-to-end tests and the
//! benchmarks all start here, so a host is built the same way everywhere.

use std::sync::{Arc, OnceLock};

use crate::audit::{AuditError, AuditLog};
use crate::exec::Pipeline;
use crate::registry::{Registry, RegistryError};
use crate::sandbox::{Sandbox, SandboxError};
use crate::state::StateError;
use crate::tasks::Tasks;
use toolhost_policy::config::Config;

/// Why a host could not be wired.
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
}

/// `config`'s plugins alone, for commands that neither run nor record a call (`list`).
pub async fn open_registry(config: Config) -> Result<Registry, HostError> {
    let sandbox = Sandbox::new(&config.engine_options())?;
    Ok(Registry::open(Arc::new(sandbox), Arc::new(config)).await?)
}

/// A pipeline over `config`'s plugins, recording to its audit log (unless disabled), running at
/// most `max_calls` calls at once.
pub async fn open(config: Config, max_calls: usize) -> Result<Pipeline, HostError> {
    let audit = match &config.audit_path {
        Some(path) => AuditLog::open(path, config.audit.clone())?,
        None => AuditLog::disabled(),
    };
    let registry = open_registry(config).await?;
    Ok(Pipeline::new(Arc::new(registry), audit, max_calls))
}

/// The daemon's tasks over the store `config` names (opened and migrated), beating its heartbeat
/// until the process ends. What a previous run left unfinished in an embedded store this daemon
/// has to itself is failed now.
pub async fn open_tasks(config: &Config) -> Result<Arc<Tasks>, StateError> {
    let store = crate::state::open(&config.state).await?;
    let tasks = Tasks::start(store, config.tasks).await?;
    tokio::spawn(
        tasks
            .clone()
            .keep(tokio_util::sync::CancellationToken::new()),
    );
    Ok(tasks)
}

/// The cores this process may use, asked of the system once: each answer reads
/// `/proc/self/cgroup` and the cgroup's CPU quota, which on the way to the first answer cost
/// more than what they size.
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}
