//! A reload: rescan the plugins folder, load what is new or changed (or whose policy changed),
//! publish each plugin as soon as it is ready, and keep what did not change.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio::task::JoinSet;
use toolhost_call::text::OneLine;
use toolhost_config::config::Rebind;

use super::catalog::{build_catalog, same_tools};
use super::{Entry, Loading, Registry, RegistryError, Rejected, Rejection, Start, Tool};
use super::{candidates, load};

impl Registry {
    /// Rescan the folder: load new and changed files, drop removed ones, keep unchanged ones as they are.
    /// Each plugin is published as soon as it is loaded (an earlier version serves until then).
    /// Returns whether the served tools changed.
    pub async fn reload(&self) -> Result<bool, RegistryError> {
        let mut loaded = self.loaded.lock().await;
        self.reload_locked(&mut loaded, &Rebind::Only(BTreeSet::new()))
            .await
    }

    /// [`Self::reload`] with the registry's plugins held, also loading again the plugins that
    /// `rebind` names (their policy changed): their old versions stop serving at once, and are
    /// not kept if the new load fails, so that a revoked grant is never used by a later call.
    pub(super) async fn reload_locked(
        &self,
        loaded: &mut BTreeMap<String, Entry>,
        rebind: &Rebind,
    ) -> Result<bool, RegistryError> {
        let config = self.config();
        let before = self.catalog();
        let first = before.start != Start::Done;
        let candidates = match candidates::find(&self.sandbox, &config).await {
            Ok(c) => c,
            Err(e) => {
                if first {
                    self.publish(loaded, &Round::default(), Start::Done);
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
            if rebind.includes(&name) {
                round.unbound.insert(name.clone());
            }
            let (bytes, provenance) = match candidate.read {
                Ok(read) => read,
                Err(why) => {
                    reject(loaded, &round, &name, &candidate.file, &why);
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
                .filter(|_| !round.unbound.contains(&name))
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
            let policy = config.policy(&name).clone();
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
        self.publish(loaded, &round, stage);
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
                            self.publish(loaded, &round, stage);
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
                    reject(loaded, &round, &name, &path, &why);
                    round.rejected.insert(name, Rejected { file: path, why });
                }
            }
            self.publish(loaded, &round, stage);
        }
        if saved.await.is_err() {
            tracing::error!("saving the plugin files' hashes panicked");
        }
        let serving = self.publish(loaded, &round, Start::Done);
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
        let kept = round.pending.keys().chain(round.rejected.keys());
        for name in kept.filter(|n| !round.unbound.contains(*n)) {
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
/// keeps serving (unless its policy changed).
fn reject(old: &BTreeMap<String, Entry>, round: &Round, name: &str, file: &Path, why: &Rejection) {
    let kept_previous = old.contains_key(name) && !round.unbound.contains(name);
    tracing::error!(plugin = %OneLine(name), file = %OneLine(&file.display().to_string()),
        kept_previous, "plugin rejected: {}", OneLine(&why.reason()));
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
    /// Plugins whose policy changed: their old versions no longer serve.
    unbound: BTreeSet<String>,
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
