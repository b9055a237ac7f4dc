//! Loading a sourced plugin offline: the lockfile says which digests, the store holds the bytes,
//! and every link is checked again on every load (manifest digest, the component it names, the
//! component's bytes, the signature against the keys trusted now). Nothing here touches the network.

use std::path::Path;

use serde::Serialize;

use toolhost_config::config::{PluginSource, Sources};
use toolhost_trust::lock::{Locked, Lockfile};
use toolhost_trust::oci::Manifest;
use toolhost_trust::source::{Digest, OciRef, Reference};
use toolhost_trust::trust::{Evidence, SignatureStatus, Subject};

use super::{SourceError, Store, StoreError};

/// Where a loaded plugin's bytes came from, for `list` and the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Provenance {
    /// The source as configured, or the file it was read from.
    pub source: String,
    /// The component's digest.
    pub digest: Digest,
    /// The manifest's digest (OCI sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Digest>,
    /// What its signatures showed (OCI sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<SignatureStatus>,
}

/// A sourced plugin's component, checked, with where it came from.
pub struct Resolved {
    /// The component's bytes.
    pub bytes: Vec<u8>,
    /// Where they came from.
    pub provenance: Provenance,
}

/// The lockfile at `path`; an empty one when there is none yet.
pub fn read_lock(path: &Path) -> Result<Lockfile, SourceError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Lockfile::parse(&text)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Lockfile::new()),
        Err(source) => Err(StoreError::Io {
            path: path.display().to_string(),
            source,
        }
        .into()),
    }
}

/// Plugin `name`'s component from `source`, as locked in `lock` and kept in the store.
pub fn resolve(
    sources: &Sources,
    lock: &Lockfile,
    name: &str,
    source: &PluginSource,
) -> Result<Resolved, SourceError> {
    let store = Store::new(&sources.store_dir);
    match source {
        PluginSource::Https { url, digest } => Ok(Resolved {
            bytes: store.read(digest)?,
            provenance: Provenance {
                source: url.clone(),
                digest: digest.clone(),
                manifest: None,
                signature: None,
            },
        }),
        PluginSource::Oci(r) => {
            let locked =
                lock.get(name, &source.to_string())
                    .ok_or_else(|| SourceError::NotLocked {
                        source_ref: source.to_string(),
                    })?;
            resolve_oci(sources, &store, r, locked)
        }
    }
}

fn resolve_oci(
    sources: &Sources,
    store: &Store,
    r: &OciRef,
    locked: &Locked,
) -> Result<Resolved, SourceError> {
    let manifest_digest = locked
        .manifest
        .as_ref()
        .ok_or_else(|| SourceError::Inconsistent(format!("{r} has no manifest digest")))?;
    if let Reference::Digest(pinned) = &r.reference
        && pinned != manifest_digest
    {
        return Err(SourceError::Inconsistent(format!(
            "{r} is locked at {manifest_digest}"
        )));
    }
    let manifest_bytes = store.read(manifest_digest)?;
    let manifest = Manifest::parse(&manifest_bytes).map_err(|source| SourceError::Manifest {
        what: r.to_string(),
        source,
    })?;
    let layer = manifest
        .component()
        .map_err(|source| SourceError::Manifest {
            what: r.to_string(),
            source,
        })?;
    if layer.digest != locked.component {
        return Err(SourceError::Inconsistent(format!(
            "{r}'s manifest names component {}, the lock {}",
            layer.digest, locked.component
        )));
    }
    let repository = r.repository_name();
    let subject = Subject {
        digest: manifest_digest.as_str(),
        repository: &repository,
    };
    let payload = match &locked.signature {
        Some(s) => Some((store.read(&s.payload)?, s.value.as_str())),
        None => None,
    };
    let bundle = match &locked.bundle {
        Some(b) => Some(store.read(&b.digest)?),
        None => None,
    };
    let evidence = payload
        .iter()
        .map(|(p, v)| Evidence::Legacy {
            payload: p,
            signature: v,
        })
        .chain(bundle.iter().map(|b| Evidence::Bundle(b)));
    let (status, _) =
        sources
            .trust
            .requirement(&repository)
            .judge(subject, evidence, super::unix_now())?;
    Ok(Resolved {
        bytes: store.read(&locked.component)?,
        provenance: Provenance {
            source: r.to_string(),
            digest: locked.component.clone(),
            manifest: Some(manifest_digest.clone()),
            signature: Some(status),
        },
    })
}
