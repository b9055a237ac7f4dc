//! Hot reload: watch the plugins folder and reload the registry when a `.wasm` file changes, and
//! `toolhost.lock` when a plugin has a `source` (a `toolhost pull` while serving takes effect);
//! watch the policy file and apply its plugin policies when it changes (`toolhost grant`).
//!
//! Only events that can change what a file holds count (created, written, renamed, removed): a reload
//! reads every plugin file, so reacting to reads would make the watcher wake itself forever, and any
//! client that merely opens a plugin would keep an idle daemon busy.

use std::sync::Arc;
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, MetadataKind, ModifyKind};
use notify::{Event, EventKind, RecursiveMode, Watcher};

use toolhost_call::text::OneLine;
use toolhost_config::config::Rebind;

use super::Registry;

/// A reload waits until the folder has been quiet this long (copying a file raises several events).
const DEBOUNCE: Duration = Duration::from_millis(200);
/// ... but no longer than this after the first change, so that a file written slowly still shows up.
const MAX_DELAY: Duration = Duration::from_secs(2);

/// The registry's plugins folder, watched from the moment this returns: set it up before the
/// daemon says it serves, or a plugin dropped in right after that is missed until the next change.
pub struct Watching {
    registry: Arc<Registry>,
    changed: tokio::sync::mpsc::UnboundedReceiver<Change>,
    /// Dropping it stops the events.
    _watcher: notify::RecommendedWatcher,
}

/// What an event may have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// A plugin file or the lockfile.
    Plugins,
    /// The policy file.
    Policy,
}

/// Start watching the registry's plugins folder (and `toolhost.lock` when a plugin has a source)
/// and its policy file.
pub fn watch(registry: Arc<Registry>) -> Result<Watching, notify::Error> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let config = registry.config();
    let sourced = config.plugins.values().any(|p| p.source.is_some());
    let lock = sourced.then(|| config.sources.lock_path.clone());
    let lock_name = lock
        .as_ref()
        .and_then(|l| l.file_name())
        .map(|n| n.to_os_string());
    let policy = config.policy_file();
    let policy_name = policy
        .as_ref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_os_string());
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
        let Ok(e) = event else { return };
        if changes_a_plugin(&e, lock_name.as_deref()) {
            let _ = tx.send(Change::Plugins);
        }
        if policy_name.is_some() && changes_a_file(&e, policy_name.as_deref()) {
            let _ = tx.send(Change::Policy);
        }
    })?;
    watcher.watch(&config.plugins_dir, RecursiveMode::NonRecursive)?;
    // The folders of the lock and the policy file, since `pull` and `grant` replace them by
    // renaming another file onto them.
    let mut watched = vec![config.plugins_dir.clone()];
    for file in lock.iter().chain(policy.iter()) {
        let dir = match file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        if !watched.iter().any(|w| same_folder(w, &dir)) {
            watcher.watch(&dir, RecursiveMode::NonRecursive)?;
            watched.push(dir);
        }
    }
    Ok(Watching {
        registry,
        changed: rx,
        _watcher: watcher,
    })
}

/// Whether `a` and `b` are the same folder (watching one twice would report each event twice).
fn same_folder(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

impl Watching {
    /// Reload on every settled change until `stop` is cancelled.
    pub async fn run(mut self, stop: tokio_util::sync::CancellationToken) {
        let (registry, rx) = (&self.registry, &mut self.changed);
        loop {
            let mut policy = tokio::select! {
                () = stop.cancelled() => return,
                got = rx.recv() => match got {
                    Some(change) => change == Change::Policy,
                    None => return,
                },
            };
            // Let a burst of events (a copy in progress) settle, then reload once.
            let latest = tokio::time::Instant::now() + MAX_DELAY;
            loop {
                let quiet = tokio::time::sleep(DEBOUNCE);
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = quiet => break,
                    () = tokio::time::sleep_until(latest) => break,
                    got = rx.recv() => match got {
                        Some(change) => policy |= change == Change::Policy,
                        None => return,
                    },
                }
            }
            if policy {
                apply_policy(registry).await;
            } else {
                match registry.reload().await {
                    Ok(changed) => tracing::info!(changed, "plugins folder changed; reloaded"),
                    Err(e) => tracing::error!("reload failed: {e}"),
                }
            }
        }
    }
}

/// Apply a changed policy file, saying what it changed (or why it was refused) in the log.
async fn apply_policy(registry: &Registry) {
    let file = registry.config().policy_file().unwrap_or_default();
    let file = file.display();
    match registry.reconfigure().await {
        Ok(done) if done.changes.is_empty() => {
            tracing::debug!(%file, "policy file written; nothing changed");
        }
        Ok(done) => {
            let plugins = match &done.changes.rebind {
                Rebind::Every => "every plugin".to_string(),
                Rebind::Only(names) if names.is_empty() => "none".to_string(),
                Rebind::Only(names) => names.iter().cloned().collect::<Vec<_>>().join(", "),
            };
            tracing::info!(%file, plugins = %OneLine(&plugins), tools_changed = done.tools_changed,
                "policy file changed; plugin policies applied");
            if !done.changes.restart.is_empty() {
                tracing::warn!(%file, sections = %OneLine(&done.changes.restart.join(", ")),
                    "policy file changed settings that apply only at the next start");
            }
        }
        Err(e) => {
            tracing::error!(%file, "policy file changed but not applied (the policy in force stays): {}",
            OneLine(&e.to_string()))
        }
    }
}

/// Whether `event` may have changed a plugin: a `.wasm` file (or the lockfile, named `lock`)
/// created, written, renamed or removed. Opening, reading and closing a file unwritten, and metadata
/// other than the write time, do not.
fn changes_a_plugin(event: &Event, lock: Option<&std::ffi::OsStr>) -> bool {
    changes_content(event)
        && event.paths.iter().any(|p| {
            p.extension().is_some_and(|x| x == "wasm") || (lock.is_some() && p.file_name() == lock)
        })
}

/// Whether `event` may have changed the file named `name` (in a watched folder).
fn changes_a_file(event: &Event, name: Option<&std::ffi::OsStr>) -> bool {
    changes_content(event) && event.paths.iter().any(|p| p.file_name() == name)
}

/// Whether `event` may have changed what a file holds.
fn changes_content(event: &Event) -> bool {
    match event.kind {
        EventKind::Create(_) | EventKind::Remove(_) => true,
        EventKind::Modify(
            ModifyKind::Data(_)
            | ModifyKind::Name(_)
            | ModifyKind::Any
            | ModifyKind::Metadata(MetadataKind::WriteTime),
        ) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Modify(_) | EventKind::Any | EventKind::Other => false,
    }
}

#[cfg(test)]
mod tests {
    use notify::event::{CreateKind, DataChange, RemoveKind, RenameMode};

    use super::*;

    fn on(kind: EventKind, file: &str) -> Event {
        Event::new(kind).add_path(format!("/plugins/{file}").into())
    }

    #[test]
    fn writes_renames_and_removals_of_plugins_reload() {
        for kind in [
            EventKind::Create(CreateKind::File),
            EventKind::Remove(RemoveKind::File),
            EventKind::Modify(ModifyKind::Data(DataChange::Any)),
            EventKind::Modify(ModifyKind::Name(RenameMode::To)),
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
        ] {
            assert!(changes_a_plugin(&on(kind, "fs.wasm"), None), "{kind:?}");
            let lock = Some(std::ffi::OsStr::new("toolhost.lock"));
            assert!(
                changes_a_plugin(&on(kind, "toolhost.lock"), lock),
                "{kind:?}"
            );
            assert!(
                !changes_a_plugin(&on(kind, "toolhost.lock"), None),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn reads_and_metadata_changes_do_not_reload() {
        for kind in [
            EventKind::Access(AccessKind::Open(AccessMode::Any)),
            EventKind::Access(AccessKind::Read),
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)),
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)),
            EventKind::Other,
        ] {
            assert!(!changes_a_plugin(&on(kind, "fs.wasm"), None), "{kind:?}");
        }
    }

    #[test]
    fn files_other_than_plugins_do_not_reload() {
        let kind = EventKind::Create(CreateKind::File);
        assert!(!changes_a_plugin(&on(kind, "notes.txt"), None));
    }
}
