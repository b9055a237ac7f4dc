//! Hot reload: watch the plugins folder and reload the registry when a `.wasm` file changes.

use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::Registry;

/// Changes closer together than this are handled by one reload (copying a file raises several events).
const DEBOUNCE: Duration = Duration::from_millis(200);

/// Watch the registry's plugins folder until `stop` is cancelled; returns an error if watching cannot start.
pub async fn watch(
    registry: Arc<Registry>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), notify::Error> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(e) = event
            && e.paths
                .iter()
                .any(|p| p.extension().is_some_and(|x| x == "wasm"))
        {
            let _ = tx.send(());
        }
    })?;
    watcher.watch(&registry.config().plugins_dir, RecursiveMode::NonRecursive)?;
    loop {
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            got = rx.recv() => if got.is_none() { return Ok(()) },
        }
        // Let a burst of events (a copy in progress) settle, then reload once.
        tokio::time::sleep(DEBOUNCE).await;
        while rx.try_recv().is_ok() {}
        match registry.reload().await {
            Ok(changed) => tracing::info!(changed, "plugins folder changed; reloaded"),
            Err(e) => tracing::error!("reload failed: {e}"),
        }
    }
}
