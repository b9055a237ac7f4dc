//! The plugin registry: scans the plugins folder, compiles each component (through the compile cache),
//! asks it to `describe` its tools, checks them, and publishes an immutable [`Catalog`].
//!
//! A broken plugin is rejected with a precise message and never stops the others. Reloading swaps in a
//! new catalog atomically; calls in flight keep the `Arc`s they already hold. When a changed file is
//! broken, the previous version keeps serving.
//!
//! A daemon does not wait for its plugins: [`Registry::new`] serves an empty catalog at once and
//! [`Registry::reload`] publishes a new one each time a plugin is ready, so a plugin the compile
//! cache knows serves within milliseconds and one that compiles joins when it is done (a
//! `tools/list_changed` follows). [`Catalog::loading`] says what is still loading, and
//! [`Registry::loaded`] lets a call to a tool that may be among them wait for it.
//!
//! Tool names are unique across plugins. When two plugins declare the same name, the plugin whose file
//! name sorts first keeps it and the other's tool is hidden, reported in [`PluginStatus::Loaded::hidden`]
//! and logged; give one of them a `prefix` in the config to serve both.

mod candidates;
mod catalog;
mod check;
mod load;
mod reconfigure;
mod rejection;
mod reload;
mod schemas;
mod sections;
mod watch;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch as tokio_watch;
use tokio_util::sync::CancellationToken;

use crate::distribution::Provenance;
use crate::sandbox::{Prepared, Sandbox};
pub(crate) use schemas::Schemas;
use toolhost_call::tool::ToolSpec;
use toolhost_call::wit::Skipped;
use toolhost_config::config::{Config, PluginPolicy};
use toolhost_gate::gate::PathGuard;

use self::candidates::scan;
pub use self::catalog::{Catalog, Loading, PluginStatus, Start};
pub use self::reconfigure::{PolicyError, Reconfigured};
pub use self::rejection::{DeclarationError, Rejection};
pub use self::sections::UnknownSection;
pub use self::watch::{Watching, watch};

pub(crate) use toolhost_trust::source::MAX_PLUGIN_BYTES;

/// One loaded plugin: compiled, described, with its resolved policy.
pub struct LoadedPlugin {
    /// Plugin name: the file stem, or its `[plugins.NAME]` with a `source`.
    pub name: String,
    /// The file it was read from (for a sourced plugin, its blob in the store).
    pub path: PathBuf,
    /// Its source, digest and signature status.
    pub provenance: Provenance,
    /// Grants, limits and rules.
    pub policy: PluginPolicy,
    /// The compiled component, bound to the plugin's grants and limits.
    pub(crate) prepared: Prepared,
}

impl LoadedPlugin {
    /// Whether its compiled code is in memory: a plugin listed from the compile cache's record of
    /// it loads its code on its first call.
    pub fn code_loaded(&self) -> bool {
        self.prepared.plugin.is_loaded()
    }

    /// The compiled component bound to its grants and limits, as [`Sandbox::call`](crate::sandbox::Sandbox::call)
    /// takes it: for running a plugin without the pipeline (the benchmark's floor).
    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }
}

/// One servable tool.
pub struct Tool {
    /// The spec as clients see it (the name includes the plugin's prefix).
    pub spec: ToolSpec,
    /// The name the plugin itself knows the tool by.
    pub guest_name: String,
    /// The plugin that provides it.
    pub plugin: Arc<LoadedPlugin>,
    /// Its input and output schemas, compiled.
    pub(crate) schemas: Schemas,
    /// The paths this tool's calls may never touch, enforced by the sandbox's filesystem.
    pub(crate) files: Arc<PathGuard>,
}

/// Why the registry could not start.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The plugins folder cannot be read.
    #[error("cannot read plugins folder {path}: {source}")]
    Folder {
        /// The folder.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// At start, `[plugins.NAME]` sections that name no plugin (a typo, most likely): a bad
    /// configuration, as much as an unknown key.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    UnknownSections(Vec<UnknownSection>),
}

/// The plugins folder is readable and every `[plugins.NAME]` of `config` names a plugin in it (or
/// has a `source`, or is marked `arrives-later`): what start requires of the folder and the
/// sections, and `toolhost grant` of a section it writes.
pub fn check_sections(config: &Config) -> Result<(), RegistryError> {
    let unknown = sections::unknown_sections(config, &scan(&config.plugins_dir)?);
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(RegistryError::UnknownSections(unknown))
    }
}

/// A loaded plugin with all the tools it declared (hidden ones too), kept between reloads.
#[derive(Clone)]
struct Entry {
    plugin: Arc<LoadedPlugin>,
    tools: Vec<Arc<Tool>>,
    from_cache: bool,
    load_ms: u64,
    skipped: Vec<Skipped>,
}

/// A file that could not be loaded.
struct Rejected {
    file: PathBuf,
    why: Rejection,
}

/// Loaded plugins, ready to serve; reloadable.
pub struct Registry {
    sandbox: Arc<Sandbox>,
    /// The configuration in force: replaced when the policy file changes ([`Self::reconfigure`]).
    config: std::sync::RwLock<Arc<Config>>,
    /// The catalog served now; waiters ([`Registry::loaded`]) watch it change.
    current: tokio_watch::Sender<Arc<Catalog>>,
    /// Loaded plugins by name, so that reloads reuse unchanged ones and keep old versions of broken ones.
    loaded: tokio::sync::Mutex<BTreeMap<String, Entry>>,
    changes: tokio_watch::Sender<u64>,
    /// Whether a listing during the first load answered before it ended: only then has anyone
    /// seen a partial set that a change must be announced against.
    listed_early: std::sync::atomic::AtomicBool,
}

impl Registry {
    /// Load every plugin in the configured folder; returns when all are loaded or rejected.
    pub async fn open(sandbox: Arc<Sandbox>, config: Arc<Config>) -> Result<Self, RegistryError> {
        let registry = Self::new(sandbox, config)?;
        registry.reload().await?;
        Ok(registry)
    }

    /// A registry that serves nothing yet, for a daemon that answers before its plugins are
    /// loaded: [`Self::reload`] loads them, publishing each as it is ready. The plugins folder
    /// must be readable now, so that a wrong `--plugins` still fails the start.
    pub fn new(sandbox: Arc<Sandbox>, config: Arc<Config>) -> Result<Self, RegistryError> {
        check_sections(&config)?;
        let empty = Catalog {
            start: Start::Scanning,
            ..Catalog::default()
        };
        Ok(Self {
            sandbox,
            config: std::sync::RwLock::new(config),
            current: tokio_watch::channel(Arc::new(empty)).0,
            loaded: tokio::sync::Mutex::new(BTreeMap::new()),
            changes: tokio_watch::channel(0).0,
            listed_early: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The current catalog; cheap (an `Arc` clone).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.current.borrow().clone()
    }

    /// The catalog once it serves `tool` or nothing that is loading could bring it, waiting for
    /// loads in progress for at most `bound` (or until `stop`): a call to a plugin that is still
    /// compiling runs when it is ready rather than failing as unknown.
    pub async fn loaded(
        &self,
        tool: &str,
        bound: Duration,
        stop: &CancellationToken,
    ) -> Arc<Catalog> {
        self.wait_until(Some(bound), stop, |c| {
            c.get(tool).is_some() || !c.is_loading()
        })
        .await
    }

    /// The catalog to list: during the first load, once it has ended or `bound` has passed (a
    /// restarted daemon lists every plugin the compile cache knows, and a first start the small
    /// ones); plugins that are still compiling join later, and `tools/list_changed` says when.
    pub async fn listing(&self, bound: Duration, stop: &CancellationToken) -> Arc<Catalog> {
        let catalog = self
            .wait_until(Some(bound), stop, |c| c.start == Start::Done)
            .await;
        if catalog.start == Start::Done {
            return catalog;
        }
        // Marked before the catalog is read again: a plugin published after the read is then
        // announced, and one published before it is in what this listing answers.
        self.listed_early
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.catalog()
    }

    /// The catalog once the first load has ended (or `stop` fired).
    pub async fn settled(&self, stop: &CancellationToken) -> Arc<Catalog> {
        self.wait_until(None, stop, |c| c.start == Start::Done)
            .await
    }

    /// The current catalog once `done` holds for it, or when `bound` passed or `stop` fired.
    async fn wait_until(
        &self,
        bound: Option<Duration>,
        stop: &CancellationToken,
        done: impl Fn(&Catalog) -> bool,
    ) -> Arc<Catalog> {
        let mut changes = self.current.subscribe();
        let deadline = bound.map(|b| tokio::time::Instant::now() + b);
        loop {
            let catalog = changes.borrow_and_update().clone();
            if done(&catalog) {
                return catalog;
            }
            let timeout = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return catalog },
                () = timeout => return self.catalog(),
                () = stop.cancelled() => return self.catalog(),
            }
        }
    }

    /// A receiver that changes whenever the set of tools changes.
    pub fn subscribe(&self) -> tokio_watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The sandbox plugins run in.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    /// The configuration in force (its plugin policies change with the policy file).
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}
