//! `toolhost pull`: every configured source resolved to digests, its signatures judged against
//! `[trust]` before anything is kept, its blobs fetched into the store, and `toolhost.lock` written.
//! A locked plugin is fetched by its locked digest, never by its tag, unless `--update`: a moved
//! tag is reported, not followed.

use std::io::Write as _;
use std::path::Path;

use toolhost_config::config::{Config, PluginSource, Sources};
use toolhost_trust::lock::{Locked, LockedBundle, LockedSignature, Lockfile};
use toolhost_trust::oci::{MAX_BUNDLES, Manifest, bundle_referrers, referrers_tag};
use toolhost_trust::source::{Digest, OciRef, Reference};
use toolhost_trust::trust::{Evidence, MAX_PAYLOAD_BYTES, SignatureStatus, Subject, signature_tag};

use super::remote::Remote;
use super::resolve::read_lock;
use super::{Provenance, SourceError, Store, StoreError};

/// Signatures judged per artifact, at most.
pub(super) const MAX_SIGNATURES: usize = 16;

/// One plugin pulled.
#[derive(Debug)]
pub struct Pulled {
    /// The plugin.
    pub name: String,
    /// What it resolved to.
    pub provenance: Provenance,
    /// Whether any bytes were downloaded (else the store had them all).
    pub fetched: bool,
    /// The digest its tag points to now, when that is not the locked one.
    pub moved: Option<Digest>,
}

/// What `pull` did.
#[derive(Debug, Default)]
pub struct PullReport {
    /// Plugins pulled (or already up to date).
    pub pulled: Vec<Pulled>,
    /// Plugins that could not be pulled, with why; their lock entries are kept as they were.
    pub failed: Vec<(String, SourceError)>,
    /// Whether the lockfile changed.
    pub lock_changed: bool,
}

/// Pull the sources of `only` (every plugin with a source, when empty); `update` re-resolves tags.
/// `next` hears of each plugin as its pull begins: its name, how many were pulled before it, and
/// how many there are.
pub async fn pull(
    config: &Config,
    only: &[String],
    update: bool,
    mut next: impl FnMut(&str, usize, usize),
) -> Result<PullReport, SourceError> {
    let sources = &config.sources;
    let old = read_lock(&sources.lock_path)?;
    let mut lock = old.clone();
    let remote = Remote::new(sources)?;
    let store = Store::new(&sources.store_dir);
    let mut report = PullReport::default();
    let wanted: Vec<_> = config
        .plugins
        .iter()
        .filter(|(name, p)| !p.disabled && (only.is_empty() || only.contains(name)))
        .filter_map(|(name, p)| p.source.as_ref().map(|s| (name, s)))
        .collect();
    for (done, (name, source)) in wanted.iter().copied().enumerate() {
        next(name, done, wanted.len());
        let locked = lock.get(name, &source.to_string()).filter(|_| !update);
        match pull_one(&remote, &store, sources, source, locked).await {
            Ok((entry, pulled)) => {
                lock.plugins.insert(name.clone(), entry);
                report.pulled.push(Pulled {
                    name: name.clone(),
                    ..pulled
                });
            }
            Err(e) => report.failed.push((name.clone(), e)),
        }
    }
    if only.is_empty() {
        // Entries of plugins no longer sourced (or removed) go.
        lock.plugins
            .retain(|name, _| config.plugins.get(name).is_some_and(|p| p.source.is_some()));
    }
    report.lock_changed = lock != old;
    if report.lock_changed {
        write_lock(&sources.lock_path, &lock)?;
    }
    Ok(report)
}

async fn pull_one(
    remote: &Remote,
    store: &Store,
    sources: &Sources,
    source: &PluginSource,
    locked: Option<&Locked>,
) -> Result<(Locked, Pulled), SourceError> {
    match source {
        PluginSource::Https { url, digest } => {
            let fetched = !store.has(digest);
            if fetched {
                let spooled = remote.download(url, store).await?;
                if spooled.digest != *digest {
                    return Err(SourceError::PinMismatch {
                        url: url.clone(),
                        got: spooled.digest,
                        pinned: digest.clone(),
                    });
                }
                store.keep(spooled.file, digest)?;
            }
            let entry = Locked {
                source: url.clone(),
                manifest: None,
                component: digest.clone(),
                signature: None,
                bundle: None,
            };
            let provenance = Provenance {
                source: url.clone(),
                digest: digest.clone(),
                manifest: None,
                signature: None,
            };
            Ok((entry, pulled(provenance, fetched, None)))
        }
        PluginSource::Oci(r) => pull_oci(remote, store, sources, r, locked).await,
    }
}

fn pulled(provenance: Provenance, fetched: bool, moved: Option<Digest>) -> Pulled {
    Pulled {
        name: String::new(),
        provenance,
        fetched,
        moved,
    }
}

async fn pull_oci(
    remote: &Remote,
    store: &Store,
    sources: &Sources,
    r: &OciRef,
    locked: Option<&Locked>,
) -> Result<(Locked, Pulled), SourceError> {
    let mut fetched = false;
    // The manifest: the locked digest when there is one (and what the tag says now, to report a
    // move), else whatever the reference resolves to.
    let pinned = locked.and_then(|l| l.manifest.clone());
    let moved = match (&pinned, &r.reference) {
        (Some(pinned), Reference::Tag(_)) => match remote.manifest(r).await {
            Ok(Some((_, now))) if now != *pinned => Some(now),
            _ => None,
        },
        _ => None,
    };
    let (manifest_bytes, manifest_digest) = match pinned.as_ref().map(|d| (store.read(d), d)) {
        Some((Ok(bytes), d)) => (bytes, d.clone()),
        _ => {
            let at = match &pinned {
                Some(d) => OciRef {
                    reference: Reference::Digest(d.clone()),
                    ..r.clone()
                },
                None => r.clone(),
            };
            fetched = true;
            remote
                .manifest(&at)
                .await?
                .ok_or_else(|| SourceError::NotFound(at.to_string()))?
        }
    };
    let manifest = Manifest::parse(&manifest_bytes).map_err(|source| SourceError::Manifest {
        what: r.to_string(),
        source,
    })?;
    let layer = manifest
        .component()
        .map_err(|source| SourceError::Manifest {
            what: r.to_string(),
            source,
        })?
        .clone();

    // Signatures, judged before the component is fetched or kept.
    let repository = r.repository_name();
    let requirement = sources.trust.requirement(&repository);
    let mut legacy: Vec<(Vec<u8>, String)> = Vec::new();
    let mut bundles: Vec<Vec<u8>> = Vec::new();
    let kept_signature = locked
        .and_then(|l| l.signature.as_ref())
        .filter(|s| store.has(&s.payload));
    let kept_bundle = locked
        .and_then(|l| l.bundle.as_ref())
        .filter(|b| store.has(&b.digest));
    if let Some(s) = kept_signature.filter(|_| !requirement.keys.is_empty()) {
        legacy.push((store.read(&s.payload)?, s.value.clone()));
    }
    if let Some(b) = kept_bundle.filter(|_| requirement.root.is_some()) {
        bundles.push(store.read(&b.digest)?);
    }
    if legacy.is_empty() && bundles.is_empty() {
        if !requirement.keys.is_empty() {
            fetched = true;
            legacy = fetch_signatures(remote, r, &manifest_digest).await?;
        }
        if requirement.root.is_some() {
            fetched = true;
            bundles = fetch_bundles(remote, r, &manifest_digest).await?;
        }
    }
    let subject = Subject {
        digest: manifest_digest.as_str(),
        repository: &repository,
    };
    let evidence = legacy
        .iter()
        .map(|(p, s)| Evidence::Legacy {
            payload: p,
            signature: s,
        })
        .chain(bundles.iter().map(|b| Evidence::Bundle(b)));
    let (status, chosen) = requirement.judge(subject, evidence, super::unix_now())?;
    let (mut signature, mut bundle) = (None, None);
    match chosen {
        Some(i) if i < legacy.len() => {
            let (payload, value) = &legacy[i];
            signature = Some(LockedSignature {
                payload: store.put(payload)?,
                value: value.clone(),
            });
        }
        Some(i) => {
            if let SignatureStatus::Sigstore(by) = &status {
                bundle = Some(LockedBundle {
                    digest: store.put(&bundles[i - legacy.len()])?,
                    signer: by.signer.clone(),
                    issuer: by.issuer.clone(),
                });
            }
        }
        None => {}
    }

    if !store.has(&layer.digest) {
        fetched = true;
        remote
            .blob_into(r, &layer.digest, layer.size, store)
            .await?;
    }
    store.put(&manifest_bytes)?;
    let entry = Locked {
        source: r.to_string(),
        manifest: Some(manifest_digest.clone()),
        component: layer.digest.clone(),
        signature,
        bundle,
    };
    let provenance = Provenance {
        source: r.to_string(),
        digest: layer.digest,
        manifest: Some(manifest_digest),
        signature: Some(status),
    };
    Ok((entry, pulled(provenance, fetched, moved)))
}

/// The signatures cosign stored for `digest` in `r`'s repository: each payload and its signature.
async fn fetch_signatures(
    remote: &Remote,
    r: &OciRef,
    digest: &Digest,
) -> Result<Vec<(Vec<u8>, String)>, SourceError> {
    let Some(tag) = signature_tag(digest.as_str()) else {
        return Ok(Vec::new());
    };
    let at = OciRef {
        reference: Reference::Tag(tag),
        ..r.clone()
    };
    let Some((bytes, _)) = remote.manifest(&at).await? else {
        return Ok(Vec::new());
    };
    let manifest = Manifest::parse(&bytes).map_err(|source| SourceError::Manifest {
        what: at.to_string(),
        source,
    })?;
    let mut out = Vec::new();
    // A registry may list any number: the newest few are judged (signers append).
    let all: Vec<_> = manifest.signatures().collect();
    for &(layer, signature) in &all[all.len().saturating_sub(MAX_SIGNATURES)..] {
        if layer.size > MAX_PAYLOAD_BYTES as u64 {
            continue;
        }
        let payload = remote.blob(r, &layer.digest, layer.size).await?;
        out.push((payload, signature.to_owned()));
    }
    Ok(out)
}

/// The Sigstore bundles attached to `digest` in `r`'s repository: listed by the referrers API, or
/// where the registry has none, by the referrers tag scheme's index.
async fn fetch_bundles(
    remote: &Remote,
    r: &OciRef,
    digest: &Digest,
) -> Result<Vec<Vec<u8>>, SourceError> {
    let index = match remote.referrers(r, digest).await? {
        Some(index) => index,
        None => {
            let Some(tag) = referrers_tag(digest.as_str()) else {
                return Ok(Vec::new());
            };
            let at = OciRef {
                reference: Reference::Tag(tag),
                ..r.clone()
            };
            match remote.manifest(&at).await? {
                Some((bytes, _)) => bytes,
                None => return Ok(Vec::new()),
            }
        }
    };
    // At most MAX_BUNDLES in all, each blob once: a referrer may list the same layer any number of
    // times. One that cannot be fetched is passed over (the others may still vouch).
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    'referrers: for referrer in bundle_referrers(&index) {
        let at = OciRef {
            reference: Reference::Digest(referrer.digest.clone()),
            ..r.clone()
        };
        let bytes = match remote.manifest(&at).await {
            Ok(Some((bytes, _))) => bytes,
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(referrer = %referrer.digest, "a bundle's referrer was not fetched: {e}");
                continue;
            }
        };
        let Ok(manifest) = Manifest::parse(&bytes) else {
            continue;
        };
        for layer in manifest.bundles() {
            if out.len() >= MAX_BUNDLES {
                break 'referrers;
            }
            if !seen.insert(layer.digest.clone()) {
                continue;
            }
            match remote.blob(r, &layer.digest, layer.size).await {
                Ok(bundle) => out.push(bundle),
                Err(e) => {
                    tracing::warn!(bundle = %layer.digest, "a bundle was not fetched: {e}");
                }
            }
        }
    }
    Ok(out)
}

/// Replace the lockfile at once: written beside it, then renamed.
fn write_lock(path: &Path, lock: &Lockfile) -> Result<(), SourceError> {
    let io = |source: std::io::Error| StoreError::Io {
        path: path.display().to_string(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    tmp.write_all(lock.to_text().as_bytes()).map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}
