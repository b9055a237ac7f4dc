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
mod rejection;
mod schemas;
mod sections;
mod watch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch as tokio_watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::distribution::Provenance;
use crate::sandbox::{Prepared, Sandbox};
pub(crate) use schemas::Schemas;
use toolhost_policy::config::{Config, PluginPolicy};
use toolhost_policy::gate::PathGuard;
use toolhost_policy::text::OneLine;
use toolhost_policy::tool::ToolSpec;
use toolhost_policy::wit::Skipped;

use self::candidates::scan;
pub use self::catalog::{Catalog, Loading, PluginStatus, Start};
use self::catalog::{build_catalog, same_tools};
pub use self::rejection::{DeclarationError, Rejection};
pub use self::sections::UnknownSection;
pub use self::watch::{Watching, watch};

/// Largest plugin file accepted.
pub(crate) const MAX_PLUGIN_BYTES: u64 = 512 << 20;

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
    config: Arc<Config>,
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
        let unknown = sections::unknown_sections(&config, &scan(&config.plugins_dir)?);
        if !unknown.is_empty() {
            return Err(RegistryError::UnknownSections(unknown));
        }
        let empty = Catalog {
            start: Start::Scanning,
            ..Catalog::default()
        };
        Ok(Self {
            sandbox,
            config,
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

    /// The configuration in force.
    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    /// Rescan the folder: load new and changed files, drop removed ones, keep unchanged ones as they are.
    /// Each plugin is published as soon as it is loaded (an earlier version serves until then).
    /// Returns whether the served tools changed.
    pub async fn reload(&self) -> Result<bool, RegistryError> {
        let mut loaded = self.loaded.lock().await;
        let first = self.catalog().start != Start::Done;
        let before = self.catalog();
        let candidates = match candidates::find(&self.sandbox, &self.config).await {
            Ok(c) => c,
            Err(e) => {
                if first {
                    self.publish(&loaded, &Round::default(), Start::Done);
                }
                return Err(e);
            }
        };
        let mut round = Round::default();
        let mut jobs = JoinSet::new();
        let cores = Arc::new(load::Cores::new(crate::system::cores()));
        let (compiling, mut compiles) = tokio::sync::mpsc::unbounded_channel::<(String, u64)>();
        let mut queue = Vec::new();
        for (name, candidate) in candidates {
            let (bytes, provenance) = match candidate.read {
                Ok(read) => read,
                Err(why) => {
                    reject(&loaded, &name, &candidate.file, &why);
                    round.rejected.insert(
                        name,
                        Rejected {
                            file: candidate.file,
                            why,
                        },
                    );
                    continue;
                }
            };
            let path = candidate.file;
            if let Some(old) = loaded
                .get(&name)
                .filter(|e| e.plugin.provenance == provenance && e.plugin.path == path)
            {
                round.next.insert(name, old.clone());
                continue;
            }
            // A plugin the cache has loads in milliseconds; the others compile, smallest first,
            // so that most tools serve soon.
            let size = bytes.as_ref().map_or(0, |b| b.len() as u64);
            let compiles = (!self.sandbox.is_cached(provenance.digest.hex())).then_some(size);
            round.pending.insert(
                name.clone(),
                Loading {
                    file: path.clone(),
                    compiling: compiles,
                    since: Instant::now(),
                },
            );
            queue.push((compiles.unwrap_or(0), name, path, bytes, provenance));
        }
        queue.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let turns = load::Turn::queue(queue.len());
        for ((_, name, path, bytes, provenance), turn) in queue.into_iter().zip(turns) {
            let policy = self.config.policy(&name).clone();
            let (sandbox, cores, compiling) =
                (self.sandbox.clone(), cores.clone(), compiling.clone());
            jobs.spawn(async move {
                let started = Instant::now();
                let announce = {
                    let name = name.clone();
                    move |size| {
                        let _ = compiling.send((name, size));
                    }
                };
                let r = load::load(
                    &sandbox, &name, &path, bytes, provenance, policy, &cores, turn, announce,
                )
                .await;
                (name, path, r, started.elapsed())
            });
        }
        drop(compiling);
        let stage = if first { Start::Loading } else { Start::Done };
        self.publish(&loaded, &round, stage);
        // Remember the files hashed just now, for the next reload or restart (off the runtime: it
        // writes a file, and only when something changed).
        let sandbox = self.sandbox.clone();
        let saved = tokio::task::spawn_blocking(move || sandbox.save_digests());
        loop {
            let joined = tokio::select! {
                Some((name, size)) = compiles.recv() => {
                    if let Some(l) = round.pending.get_mut(&name) {
                        tracing::info!(plugin = %OneLine(&name), file = %OneLine(&l.file.display().to_string()),
                            size = %megabytes(size), "compiling plugin");
                        if l.compiling.replace(size).is_none() {
                            self.publish(&loaded, &round, stage);
                        }
                    }
                    continue;
                }
                joined = jobs.join_next() => match joined {
                    Some(joined) => joined,
                    None => break,
                },
            };
            let Ok((name, path, result, took)) = joined else {
                tracing::error!("a plugin load task panicked");
                continue;
            };
            round.pending.remove(&name);
            match result {
                Ok(done) => {
                    let load_ms = took.as_millis() as u64;
                    let (tools, from_cache) = (done.tools.len(), done.from_cache);
                    tracing::info!(plugin = %OneLine(&name), tools, from_cache,
                        seconds = %format_args!("{:.1}", took.as_secs_f64()), "plugin loaded");
                    for s in &done.skipped {
                        tracing::info!(plugin = %OneLine(&name), function = %OneLine(&s.export),
                            "function not served: {}", OneLine(&s.reason));
                    }
                    warm_up(done.tools.clone());
                    round.next.insert(
                        name,
                        Entry {
                            plugin: done.plugin,
                            tools: done.tools,
                            from_cache,
                            load_ms,
                            skipped: done.skipped,
                        },
                    );
                }
                Err(why) => {
                    reject(&loaded, &name, &path, &why);
                    round.rejected.insert(name, Rejected { file: path, why });
                }
            }
            self.publish(&loaded, &round, stage);
        }
        if saved.await.is_err() {
            tracing::error!("saving the plugin files' hashes panicked");
        }
        let serving = self.publish(&loaded, &round, Start::Done);
        *loaded = serving;
        let after = self.catalog();
        Ok(!same_tools(&before, &after))
    }

    /// Publish what `round` has loaded so far over the `old` entries (which serve for plugins
    /// still loading or rejected), announcing a change of tools; returns the entries served.
    fn publish(
        &self,
        old: &BTreeMap<String, Entry>,
        round: &Round,
        start: Start,
    ) -> BTreeMap<String, Entry> {
        let mut serving = round.next.clone();
        for name in round.pending.keys().chain(round.rejected.keys()) {
            if let Some(e) = old.get(name) {
                serving.entry(name.clone()).or_insert_with(|| e.clone());
            }
        }
        let mut catalog = build_catalog(&serving, &round.rejected);
        catalog.loading = round.pending.clone();
        catalog.start = start;
        let catalog = Arc::new(catalog);
        let previous = self.current.send_replace(catalog.clone());
        // During the first load, a change is news only to a client that listed a partial set.
        let heard = previous.start == Start::Done
            || self.listed_early.load(std::sync::atomic::Ordering::SeqCst);
        if heard && !same_tools(&previous, &catalog) {
            self.changes.send_modify(|g| *g += 1);
        }
        serving
    }
}

/// Log a plugin's rejection; a broken new version does not take down a working old one, which
/// keeps serving.
fn reject(old: &BTreeMap<String, Entry>, name: &str, file: &Path, why: &Rejection) {
    tracing::error!(plugin = %OneLine(name), file = %OneLine(&file.display().to_string()),
        kept_previous = old.contains_key(name), "plugin rejected: {}", OneLine(&why.reason()));
}

/// What one reload has found so far.
#[derive(Default)]
struct Round {
    /// Loaded (or unchanged) plugins.
    next: BTreeMap<String, Entry>,
    /// Plugins that could not be loaded.
    rejected: BTreeMap<String, Rejected>,
    /// Plugins loading now.
    pending: BTreeMap<String, Loading>,
}

/// A size for a log line: `4.1 MB`.
fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// How long after a load the warm-up starts: long enough not to compete for the cores with a
/// start's first answers (the first schema compiled builds the draft's meta-schema validator,
/// about 2.5 ms of CPU), short enough that a client's first call rarely waits on a compile.
const WARM_UP_AFTER: std::time::Duration = std::time::Duration::from_millis(100);

/// Compile the schemas the cache vouched for, in the background: the listing did not wait for
/// them, and no first call should (one that comes first compiles its own tool's, once).
fn warm_up(tools: Vec<Arc<Tool>>) {
    let cold: Vec<Arc<Tool>> = tools
        .into_iter()
        .filter(|t| t.schemas.ready().is_none())
        .collect();
    if cold.is_empty() {
        return;
    }
    tokio::spawn(async move {
        tokio::time::sleep(WARM_UP_AFTER).await;
        tokio::task::spawn_blocking(move || {
            for tool in cold {
                if let Err(e) = tool.schemas.get(&tool.spec) {
                    tracing::error!(tool = %OneLine(&tool.spec.name), "a cached schema does not compile: {}", OneLine(e));
                }
            }
        });
    });
}
