//! `toolhost push` and `toolhost sign`: a component published as the CNCF wasm artifact, and a
//! cosign signature added beside it (in cosign's layout, so `cosign verify` reads ours and we read
//! cosign's).

use std::path::Path;

use toolhost_config::config::Sources;
use toolhost_trust::oci::{Artifact, Manifest};
use toolhost_trust::source::{Digest, OciRef, Reference};
use toolhost_trust::trust::{MAX_PAYLOAD_BYTES, SigningKey, Subject, payload, signature_tag};

use super::SourceError;
use super::pull::MAX_SIGNATURES;
use super::remote::Remote;
use super::store::MAX_BLOB_BYTES;

/// The preamble of a WebAssembly component (a core module's differs in its layer field).
const COMPONENT_PREAMBLE: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// Publish the component in `file` at `target`; returns the manifest's digest.
pub async fn push(sources: &Sources, file: &Path, target: &OciRef) -> Result<Digest, SourceError> {
    let bad = |message: String| SourceError::File {
        path: file.display().to_string(),
        message,
    };
    let len = std::fs::metadata(file)
        .map_err(|e| bad(e.to_string()))?
        .len();
    if len > MAX_BLOB_BYTES {
        return Err(bad(format!("{len} bytes; the limit is {MAX_BLOB_BYTES}")));
    }
    let bytes = std::fs::read(file).map_err(|e| bad(e.to_string()))?;
    if !bytes.starts_with(&COMPONENT_PREAMBLE) {
        return Err(bad(
            "not a WebAssembly component (a core module must be wrapped first: `wasm-tools component new`)"
                .into(),
        ));
    }
    let title = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "component.wasm".into());
    let remote = Remote::new(sources)?;
    Ok(remote
        .push(target, &Artifact::component(bytes, &title))
        .await?)
}

/// Sign the artifact at `target` with `key`, keeping the signatures already there; returns the
/// manifest digest signed.
pub async fn sign(
    sources: &Sources,
    target: &OciRef,
    key: &SigningKey,
) -> Result<Digest, SourceError> {
    let remote = Remote::new(sources)?;
    let (bytes, digest) = remote
        .manifest(target)
        .await?
        .ok_or_else(|| SourceError::NotFound(target.to_string()))?;
    // Only component artifacts are signed here: a signature vouches for what toolhost would load.
    Manifest::parse(&bytes)
        .and_then(|m| m.component().map(|_| ()))
        .map_err(|source| SourceError::Manifest {
            what: target.to_string(),
            source,
        })?;
    let repository = target.repository_name();
    let signed = payload(Subject {
        digest: digest.as_str(),
        repository: &repository,
    });
    let signature = key.sign(&signed);
    let tag = signature_tag(digest.as_str()).unwrap_or_default();
    let at = OciRef {
        reference: Reference::Tag(tag),
        ..target.clone()
    };
    let mut signatures = Vec::new();
    if let Some((existing, _)) = remote.manifest(&at).await? {
        let existing = Manifest::parse(&existing).map_err(|source| SourceError::Manifest {
            what: at.to_string(),
            source,
        })?;
        // The newest ones, leaving room for this one within what `pull` judges.
        let all: Vec<_> = existing.signatures().collect();
        for &(layer, value) in &all[all.len().saturating_sub(MAX_SIGNATURES - 1)..] {
            if layer.size <= MAX_PAYLOAD_BYTES as u64 {
                let payload = remote.blob(target, &layer.digest, layer.size).await?;
                if payload != signed {
                    signatures.push((payload, value.to_owned()));
                }
            }
        }
    }
    signatures.push((signed, signature));
    remote.push(&at, &Artifact::signatures(signatures)).await?;
    Ok(digest)
}
