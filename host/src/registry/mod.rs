//! The plugin registry: scans the plugins folder, compiles each component (through the compile cache),
//! asks it to `describe` its tools, checks them, and publishes an immutable [`Catalog`].
//!
//! A broken plugin is rejected with a precise message and never stops the others. Reloading swaps in a
//! new catalog atomically; calls in flight keep the `Arc`s they already hold. When a changed file is
//! broken, the previous version keeps serving.
//!
//! Tool names are unique across plugins. When two plugins declare the same name, the plugin whose file
//! name sorts first keeps it and the other's tool is hidden, reported in [`PluginStatus::Loaded::hidden`]
//! and logged; give one of them a `prefix` in the config to serve both.

mod check;
mod load;
mod rejection;
mod schemas;
mod sections;
mod watch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use tokio::sync::watch as tokio_watch;
use tokio::task::JoinSet;

use crate::distribution::{self, Provenance};
use crate::sandbox::{Prepared, Sandbox};
pub(crate) use schemas::Schemas;
use toolhost_policy::config::{Config, PluginPolicy};
use toolhost_policy::gate::PathGuard;
use toolhost_policy::text::OneLine;
use toolhost_policy::tool::ToolSpec;
use toolhost_policy::wit::Skipped;

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

/// How loading one plugin file went.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PluginStatus {
    /// Serving.
    Loaded {
        /// The file.
        file: PathBuf,
        /// Tools served, by exposed name.
        tools: Vec<String>,
        /// Tools not served because another plugin claimed the name first: (tool, that plugin).
        hidden: Vec<(String, String)>,
        /// Whether compilation was skipped thanks to the cache.
        from_cache: bool,
        /// Load time (compile or cache load, instantiate, describe), in ms.
        load_ms: u64,
        /// Where the component came from.
        provenance: Provenance,
        /// Whether it is a generic component (its exported functions are its tools).
        generic: bool,
        /// A generic component's exported functions that are not tools, and why.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<Skipped>,
    },
    /// Not serving (or serving the previous version, if `kept_previous`).
    Rejected {
        /// The file.
        file: PathBuf,
        /// What is wrong, precisely.
        reason: String,
        /// Whether an earlier version of the plugin is still serving.
        kept_previous: bool,
    },
}

/// An immutable snapshot of what is served.
#[derive(Default)]
pub struct Catalog {
    /// Servable tools by exposed name, in a deterministic (sorted) order.
    pub tools: BTreeMap<String, Arc<Tool>>,
    /// Every plugin file seen, by plugin name.
    pub plugins: BTreeMap<String, PluginStatus>,
}

impl Catalog {
    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(name)
    }

    /// Every servable tool's spec, in name order.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|t| &t.spec)
    }
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
    current: RwLock<Arc<Catalog>>,
    /// Loaded plugins by name, so that reloads reuse unchanged ones and keep old versions of broken ones.
    loaded: tokio::sync::Mutex<BTreeMap<String, Entry>>,
    changes: tokio_watch::Sender<u64>,
}

impl Registry {
    /// Load every plugin in the configured folder.
    pub async fn open(sandbox: Arc<Sandbox>, config: Arc<Config>) -> Result<Self, RegistryError> {
        let registry = Self {
            sandbox,
            config,
            current: RwLock::new(Arc::new(Catalog::default())),
            loaded: tokio::sync::Mutex::new(BTreeMap::new()),
            changes: tokio_watch::channel(0).0,
        };
        let unknown =
            sections::unknown_sections(&registry.config, &scan(&registry.config.plugins_dir)?);
        if !unknown.is_empty() {
            return Err(RegistryError::UnknownSections(unknown));
        }
        registry.reload().await?;
        Ok(registry)
    }

    /// The current catalog; cheap (an `Arc` clone).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
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
    /// Returns whether the served tools changed.
    pub async fn reload(&self) -> Result<bool, RegistryError> {
        let mut loaded = self.loaded.lock().await;
        let mut next: BTreeMap<String, Entry> = BTreeMap::new();
        let mut rejected: BTreeMap<String, Rejected> = BTreeMap::new();
        let mut jobs = JoinSet::new();
        let candidates = self.candidates()?;
        // The CPU-bound parts of loading (compiling, checking schemas) run this many at once: more
        // would only add threads, which on a small machine cost more than they overlap.
        let cpus = Arc::new(tokio::sync::Semaphore::new(crate::system::cores().max(2)));
        for (name, candidate) in candidates {
            let policy = self.config.policy(&name).clone();
            let (bytes, provenance) = match candidate.read {
                Ok(read) => read,
                Err(why) => {
                    rejected.insert(
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
                next.insert(name, old.clone());
                continue;
            }
            let (sandbox, cpus) = (self.sandbox.clone(), cpus.clone());
            jobs.spawn(async move {
                let started = Instant::now();
                let r = load::load(&sandbox, &name, &path, bytes, provenance, policy, &cpus).await;
                (name, path, r, started.elapsed())
            });
        }
        // Remember the files hashed just now, for the next reload or restart (off the runtime: it
        // writes a file, and only when something changed).
        let sandbox = self.sandbox.clone();
        let saved = tokio::task::spawn_blocking(move || sandbox.save_digests());
        while let Some(joined) = jobs.join_next().await {
            let Ok((name, path, result, took)) = joined else {
                tracing::error!("a plugin load task panicked");
                continue;
            };
            match result {
                Ok(loaded) => {
                    let load_ms = took.as_millis() as u64;
                    let (tools, from_cache) = (loaded.tools.len(), loaded.from_cache);
                    tracing::info!(plugin = %OneLine(&name), tools, from_cache, load_ms, "plugin loaded");
                    for s in &loaded.skipped {
                        tracing::info!(plugin = %OneLine(&name), function = %OneLine(&s.export),
                            "function not served: {}", OneLine(&s.reason));
                    }
                    next.insert(
                        name,
                        Entry {
                            plugin: loaded.plugin,
                            tools: loaded.tools,
                            from_cache,
                            load_ms,
                            skipped: loaded.skipped,
                        },
                    );
                }
                Err(why) => {
                    rejected.insert(name, Rejected { file: path, why });
                }
            }
        }
        if saved.await.is_err() {
            tracing::error!("saving the plugin files' hashes panicked");
        }
        // A broken new version must not take down a working old one.
        for (name, r) in &rejected {
            let kept = loaded.get(name);
            tracing::error!(plugin = %OneLine(name), file = %OneLine(&r.file.display().to_string()),
                kept_previous = kept.is_some(), "plugin rejected: {}", OneLine(&r.why.reason()));
            if let Some(old) = kept {
                next.insert(name.clone(), old.clone());
            }
        }
        let catalog = build_catalog(&next, &rejected);
        warm_up(&catalog);
        let old = self.catalog();
        let changed = old.tools.len() != catalog.tools.len()
            || old
                .tools
                .iter()
                .zip(&catalog.tools)
                .any(|((a, x), (b, y))| a != b || !Arc::ptr_eq(x, y));
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(catalog);
        *loaded = next;
        if changed {
            self.changes.send_modify(|g| *g += 1);
        }
        Ok(changed)
    }
}

/// How long after a load the warm-up starts: long enough not to compete for the cores with a
/// start's first answers (the first schema compiled builds the draft's meta-schema validator,
/// about 2.5 ms of CPU), short enough that a client's first call rarely waits on a compile.
const WARM_UP_AFTER: std::time::Duration = std::time::Duration::from_millis(100);

/// Compile the schemas the cache vouched for, in the background: the listing did not wait for
/// them, and no first call should (one that comes first compiles its own tool's, once).
fn warm_up(catalog: &Catalog) {
    let cold: Vec<Arc<Tool>> = catalog
        .tools
        .values()
        .filter(|t| t.schemas.ready().is_none())
        .cloned()
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

/// A plugin to load: where it is, and its bytes with their provenance (or why they cannot be had).
struct Candidate {
    file: PathBuf,
    /// The bytes (unless their digest was known without reading them) and where they are from.
    read: Result<(Option<Vec<u8>>, Provenance), Rejection>,
}

impl Registry {
    /// Every enabled plugin: the folder's files, then the configured sources (a source wins over a
    /// file of the same name, which is ignored with a warning).
    fn candidates(&self) -> Result<BTreeMap<String, Candidate>, RegistryError> {
        let mut out = BTreeMap::new();
        let files = scan(&self.config.plugins_dir)?;
        // At start these stopped the daemon (`open`); a file removed since is worth a warning only.
        for unknown in sections::unknown_sections(&self.config, &files) {
            tracing::warn!("{unknown}; its settings apply to nothing until the file returns");
        }
        let sourced = |name: &str| {
            self.config
                .plugins
                .get(name)
                .is_some_and(|p| p.source.is_some())
        };
        for (name, path) in files {
            if self.config.policy(&name).disabled {
                continue;
            }
            if sourced(&name) {
                tracing::warn!(plugin = %OneLine(&name), file = %OneLine(&path.display().to_string()),
                    "file ignored: the config gives this plugin a `source`");
                continue;
            }
            let read = load::read_plugin(&self.sandbox, &path).map(|(bytes, digest)| {
                let provenance = Provenance {
                    source: path.display().to_string(),
                    digest,
                    manifest: None,
                    signature: None,
                };
                (bytes, provenance)
            });
            out.insert(name, Candidate { file: path, read });
        }
        let sources = &self.config.sources;
        let mut lock = None;
        for (name, policy) in &self.config.plugins {
            let Some(source) = policy.source.as_ref().filter(|_| !policy.disabled) else {
                continue;
            };
            // Read once per reload, so that every plugin sees the same lock.
            let lock = lock.get_or_insert_with(|| {
                distribution::read_lock(&sources.lock_path).map_err(|e| e.to_string())
            });
            let read = match lock {
                Ok(lock) => distribution::resolve(sources, lock, name, source)
                    .map(|r| (Some(r.bytes), r.provenance))
                    .map_err(Rejection::from),
                Err(e) => Err(Rejection::Lock(e.clone())),
            };
            let file = match &read {
                Ok((_, p)) => distribution::Store::new(&sources.store_dir).path(&p.digest),
                Err(_) => PathBuf::from(source.to_string()),
            };
            out.insert(name.clone(), Candidate { file, read });
        }
        Ok(out)
    }
}

/// Build the served catalog; plugins are visited in name order, so the first to claim a name keeps it.
fn build_catalog(
    entries: &BTreeMap<String, Entry>,
    rejected: &BTreeMap<String, Rejected>,
) -> Catalog {
    let mut catalog = Catalog::default();
    for (name, e) in entries {
        let mut served = Vec::new();
        let mut hidden = Vec::new();
        for t in &e.tools {
            match catalog.tools.get(&t.spec.name) {
                Some(owner) => {
                    tracing::warn!(tool = %t.spec.name, plugin = %OneLine(name), owner = %OneLine(&owner.plugin.name),
                        "tool hidden: another plugin already provides it; set a `prefix` for one of them");
                    hidden.push((t.spec.name.clone(), owner.plugin.name.clone()));
                }
                None => {
                    served.push(t.spec.name.clone());
                    catalog.tools.insert(t.spec.name.clone(), t.clone());
                }
            }
        }
        catalog.plugins.insert(
            name.clone(),
            PluginStatus::Loaded {
                file: e.plugin.path.clone(),
                tools: served,
                hidden,
                from_cache: e.from_cache,
                load_ms: e.load_ms,
                provenance: e.plugin.provenance.clone(),
                generic: e.plugin.prepared.plugin.generic().is_some(),
                skipped: e.skipped.clone(),
            },
        );
    }
    for (name, r) in rejected {
        catalog.plugins.insert(
            name.clone(),
            PluginStatus::Rejected {
                file: r.file.clone(),
                reason: r.why.reason(),
                kept_previous: entries.contains_key(name),
            },
        );
    }
    catalog
}

/// The `*.wasm` files of the folder, by plugin name (the file stem).
fn scan(dir: &Path) -> Result<BTreeMap<String, PathBuf>, RegistryError> {
    let folder_error = |source| RegistryError::Folder {
        path: dir.display().to_string(),
        source,
    };
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(folder_error)? {
        let path = entry.map_err(folder_error)?.path();
        if path.extension().is_some_and(|e| e == "wasm")
            && path.is_file()
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            out.insert(stem.to_string(), path.clone());
        }
    }
    Ok(out)
}
