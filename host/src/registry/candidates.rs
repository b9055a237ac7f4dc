//! What a reload loads: the plugins folder's files and the configured sources, each with its
//! bytes and provenance, or why they cannot be had.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::{RegistryError, Rejection, load};
use crate::distribution::{self, Provenance};
use crate::sandbox::Sandbox;
use toolhost_call::text::OneLine;
use toolhost_config::config::Config;

/// A plugin to load: where it is, and its bytes with their provenance (or why they cannot be had).
pub(super) struct Candidate {
    pub(super) file: PathBuf,
    /// The bytes (unless their digest was known without reading them) and where they are from.
    pub(super) read: Result<(Option<Vec<u8>>, Provenance), Rejection>,
}

/// [`candidates`] off the async runtime: it reads and hashes every changed plugin file.
pub(super) async fn find(
    sandbox: &Arc<Sandbox>,
    config: &Arc<Config>,
) -> Result<BTreeMap<String, Candidate>, RegistryError> {
    let (sandbox, config) = (sandbox.clone(), config.clone());
    tokio::task::spawn_blocking(move || candidates(&sandbox, &config))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// Every enabled plugin: the folder's files, then the configured sources (a source wins over a
/// file of the same name, which is ignored with a warning).
fn candidates(
    sandbox: &Sandbox,
    config: &Config,
) -> Result<BTreeMap<String, Candidate>, RegistryError> {
    let mut out = BTreeMap::new();
    let sourced = |name: &str| config.plugins.get(name).is_some_and(|p| p.source.is_some());
    let files = scan(&config.plugins_dir)?;
    // At start these stopped the daemon (`Registry::new`); a file removed since is worth a warning.
    for unknown in super::sections::unknown_sections(config, &files) {
        tracing::warn!("{unknown}; its settings apply to nothing until the file returns");
    }
    for (name, path) in files {
        if config.policy(&name).disabled {
            continue;
        }
        if sourced(&name) {
            tracing::warn!(plugin = %OneLine(&name), file = %OneLine(&path.display().to_string()),
                    "file ignored: the config gives this plugin a `source`");
            continue;
        }
        let read = load::read_plugin(sandbox, &path).map(|(bytes, digest)| {
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
    let sources = &config.sources;
    let mut lock = None;
    for (name, policy) in &config.plugins {
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

/// The `*.wasm` files of the folder, by plugin name (the file stem).
pub(super) fn scan(dir: &Path) -> Result<BTreeMap<String, PathBuf>, RegistryError> {
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
