//! Hot reload: watch the plugins folder and reload the registry when a `.wasm` file changes, and
//! `toolhost.lock` when a plugin has a `source` (a `toolhost pull` while serving takes effect).
//!
//! Only events that can change what a file holds count (created, written, renamed, removed): a reload
//! reads every plugin file, so reacting to reads would make the watcher wake itself forever, and any
//! client that merely opens a plugin would keep an idle daemon busy.

use std::sync::Arc;
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, MetadataKind, ModifyKind};
use notify::{Event, EventKind, RecursiveMode, Watcher};

use super::Registry;

/// A reload waits until the folder has been quiet this long (copying a file raises several events).
const DEBOUNCE: Duration = Duration::from_millis(200);
/// ... but no longer than this after the first change, so that a file written slowly still shows up.
const MAX_DELAY: Duration = Duration::from_secs(2);

/// The registry's plugins folder, watched from the moment this returns: set it up before the
/// daemon says it serves, or a plugin dropped in right after that is missed until the next change.
pub struct Watching {
    registry: Arc<Registry>,
    changed: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// Dropping it stops the events.
    _watcher: notify::RecommendedWatcher,
}

/// Start watching the registry's plugins folder (and `toolhost.lock` when a plugin has a source).
pub fn watch(registry: Arc<Registry>) -> Result<Watching, notify::Error> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let config = registry.config();
    let sourced = config.plugins.values().any(|p| p.source.is_some());
    let lock = sourced.then(|| config.sources.lock_path.clone());
    let lock_name = lock
        .as_ref()
        .and_then(|l| l.file_name())
        .map(|n| n.to_os_string());
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
        if let Ok(e) = event
            && changes_a_plugin(&e, lock_name.as_deref())
        {
            let _ = tx.send(());
        }
    })?;
    watcher.watch(&config.plugins_dir, RecursiveMode::NonRecursive)?;
    if let Some(lock) = &lock {
        // The lock's folder, since `pull` replaces the file by renaming another onto it.
        let dir = match lock.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
    }
    Ok(Watching {
        registry,
        changed: rx,
        _watcher: watcher,
    })
}

impl Watching {
    /// Reload on every settled change until `stop` is cancelled.
    pub async fn run(mut self, stop: tokio_util::sync::CancellationToken) {
        let (registry, rx) = (&self.registry, &mut self.changed);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                got = rx.recv() => if got.is_none() { return },
            }
            // Let a burst of events (a copy in progress) settle, then reload once.
            let latest = tokio::time::Instant::now() + MAX_DELAY;
            loop {
                let quiet = tokio::time::sleep(DEBOUNCE);
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = quiet => break,
                    () = tokio::time::sleep_until(latest) => break,
                    got = rx.recv() => if got.is_none() { return },
                }
            }
            match registry.reload().await {
                Ok(changed) => tracing::info!(changed, "plugins folder changed; reloaded"),
                Err(e) => tracing::error!("reload failed: {e}"),
            }
        }
    }
}

/// Whether `event` may have changed a plugin: a `.wasm` file (or the lockfile, named `lock`)
/// created, written, renamed or removed. Opening, reading and closing a file unwritten, and metadata
/// other than the write time, do not.
fn changes_a_plugin(event: &Event, lock: Option<&std::ffi::OsStr>) -> bool {
    let content = match event.kind {
        EventKind::Create(_) | EventKind::Remove(_) => true,
        EventKind::Modify(
            ModifyKind::Data(_)
            | ModifyKind::Name(_)
            | ModifyKind::Any
            | ModifyKind::Metadata(MetadataKind::WriteTime),
        ) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Modify(_) | EventKind::Any | EventKind::Other => false,
    };
    content
        && event.paths.iter().any(|p| {
            p.extension().is_some_and(|x| x == "wasm") || (lock.is_some() && p.file_name() == lock)
        })
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
