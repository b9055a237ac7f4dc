//! Talking to registries and HTTPS servers: manifests, blobs, pushes. Every byte read is bounded
//! ([`super::bounded`]: a `Content-Length` over the limit is refused up front, a longer body cut
//! off at the limit; blobs stream to disk) and every blob checked against the digest it was asked
//! for; what the bytes mean is judged
//! elsewhere (`toolhost_trust::oci`, `toolhost_trust::trust`).

use toolhost_config::config::Sources;
use toolhost_trust::oci::{Artifact, MANIFEST_MEDIA_TYPE, MAX_MANIFEST_BYTES};
use toolhost_trust::source::{Digest, OciRef, Reference};

use super::api::{Api, Target};
use super::bounded;
use super::credentials::{RegistryAuth, auth_for};
use super::store::MAX_BLOB_BYTES;
use super::upload;
use super::{RemoteError, SourceError, Store};

/// Docker's image manifest, which shares the OCI manifest's shape.
const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// A client for the registries of one configuration.
pub(crate) struct Remote {
    api: Api,
    sources: Sources,
    https: reqwest::Client,
}

impl Remote {
    /// A client that speaks plain HTTP only to the registries configured `insecure`.
    pub(crate) fn new(sources: &Sources) -> Result<Self, RemoteError> {
        // reqwest takes the process's default TLS provider: ours, ring (as for plugins' requests).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let https = reqwest::Client::builder()
            .https_only(true)
            .connect_timeout(std::time::Duration::from_secs(15))
            .read_timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(|e| RemoteError::Client(e.to_string()))?;
        Ok(Self {
            api: Api::new()?,
            sources: sources.clone(),
            https,
        })
    }

    fn auth(&self, r: &OciRef) -> Result<RegistryAuth, RemoteError> {
        auth_for(&r.registry, &self.sources.registry(&r.registry))
    }

    /// The manifest `r` names, with its digest; `None` when the registry has none there.
    pub(crate) async fn manifest(
        &self,
        r: &OciRef,
    ) -> Result<Option<(Vec<u8>, Digest)>, RemoteError> {
        // Docker's schema 2 too: older cosign wrote signature manifests with it.
        let accepted = [
            MANIFEST_MEDIA_TYPE,
            DOCKER_MANIFEST_MEDIA_TYPE,
            toolhost_trust::oci::INDEX_MEDIA_TYPE,
        ]
        .join(", ");
        let path = match &r.reference {
            Reference::Tag(tag) => format!("manifests/{tag}"),
            Reference::Digest(d) => format!("manifests/{d}"),
        };
        let what = || format!("the manifest of {r}");
        let response = self.get(r, path, &accepted, &what).await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let bytes = bounded::read(response, MAX_MANIFEST_BYTES as u64, &what).await?;
        // Our own digest of the exact bytes: what is signed and locked.
        let digest = Digest::of(&bytes);
        if let Reference::Digest(wanted) = &r.reference
            && *wanted != digest
        {
            return Err(RemoteError::Mismatch {
                what: r.to_string(),
                got: digest,
            });
        }
        Ok(Some((bytes, digest)))
    }

    /// The referrers of manifest `digest` in `r`'s repository, as the registry's referrers API lists
    /// them (an image index); `None` when the registry has no such API.
    pub(crate) async fn referrers(
        &self,
        r: &OciRef,
        digest: &Digest,
    ) -> Result<Option<Vec<u8>>, RemoteError> {
        let what = || format!("the referrers of {digest} in {r}");
        let accept = toolhost_trust::oci::INDEX_MEDIA_TYPE;
        let response = self
            .get(r, format!("referrers/{digest}"), accept, &what)
            .await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Ok(Some(
            bounded::read(response, MAX_MANIFEST_BYTES as u64, &what).await?,
        ))
    }

    /// The blob `digest` of `r`'s repository, at most `size` bytes (as its manifest declares),
    /// checked against the digest; in memory, so for small blobs only (signature payloads).
    pub(crate) async fn blob(
        &self,
        r: &OciRef,
        digest: &Digest,
        size: u64,
    ) -> Result<Vec<u8>, RemoteError> {
        let what = || format!("blob {digest} of {r}");
        let response = self.blob_response(r, digest, size, &what).await?;
        let bytes = bounded::read(response, size, &what).await?;
        digest.check(&bytes).map_err(|e| RemoteError::Tampered {
            what: what(),
            message: e.to_string(),
        })?;
        Ok(bytes)
    }

    /// The blob `digest` of `r`'s repository, at most `size` bytes, streamed into `store` as it
    /// arrives and kept there only when its bytes are the ones `digest` names.
    pub(crate) async fn blob_into(
        &self,
        r: &OciRef,
        digest: &Digest,
        size: u64,
        store: &Store,
    ) -> Result<(), SourceError> {
        let what = || format!("blob {digest} of {r}");
        let response = self.blob_response(r, digest, size, &what).await?;
        let spooled = bounded::spool(response, size, &what, &store.incoming()).await?;
        if spooled.digest != *digest {
            return Err(RemoteError::Tampered {
                what: what(),
                message: format!("its bytes have digest {}", spooled.digest),
            }
            .into());
        }
        store.keep(spooled.file, digest)?;
        Ok(())
    }

    /// The answer to a GET of blob `digest`, refused before any request when the manifest declares
    /// it larger than any plugin.
    async fn blob_response(
        &self,
        r: &OciRef,
        digest: &Digest,
        size: u64,
        what: &dyn Fn() -> String,
    ) -> Result<reqwest::Response, RemoteError> {
        if size > MAX_BLOB_BYTES {
            return Err(RemoteError::TooLarge {
                what: what(),
                limit: MAX_BLOB_BYTES,
            });
        }
        let response = self.get(r, format!("blobs/{digest}"), "", what).await?;
        if !response.status().is_success() {
            return Err(RemoteError::Registry {
                what: what(),
                message: bounded::error_text(response).await,
            });
        }
        Ok(response)
    }

    /// A GET of `path` in `r`'s repository, as the registry's settings say (scheme, credentials).
    async fn get(
        &self,
        r: &OciRef,
        path: String,
        accept: &str,
        what: &dyn Fn() -> String,
    ) -> Result<reqwest::Response, RemoteError> {
        let auth = self.auth(r)?;
        let target = self.target(r, path);
        let response = self.api.get(&target, accept, &auth, what).await?;
        let status = response.status();
        if status.is_success() || status == reqwest::StatusCode::NOT_FOUND {
            return Ok(response);
        }
        Err(RemoteError::Registry {
            what: what(),
            message: bounded::error_text(response).await,
        })
    }

    /// `path` in `r`'s repository, over HTTP only when the registry is configured `insecure`.
    fn target<'a>(&self, r: &'a OciRef, path: String) -> Target<'a> {
        let insecure = self.sources.registry(&r.registry).insecure;
        Target {
            scheme: if insecure { "http" } else { "https" },
            registry: api_host(&r.registry),
            repository: &r.repository,
            path,
        }
    }

    /// Upload `artifact`'s blobs, then its manifest under `r`'s tag (or digest); returns the
    /// manifest's digest.
    pub(crate) async fn push(
        &self,
        r: &OciRef,
        artifact: &Artifact,
    ) -> Result<Digest, RemoteError> {
        let auth = self.auth(r)?;
        let repo = self.target(r, String::new());
        let m = &artifact.manifest;
        let blobs = std::iter::once((&m.config.digest, &artifact.config))
            .chain(m.layers.iter().map(|l| &l.digest).zip(&artifact.layers));
        for (digest, bytes) in blobs {
            upload::blob(&self.api, &repo, &auth, digest, bytes.clone().into()).await?;
        }
        let bytes = m.to_bytes();
        let digest = Digest::of(&bytes);
        let reference = match &r.reference {
            Reference::Tag(tag) => tag.clone(),
            Reference::Digest(d) => d.to_string(),
        };
        upload::manifest(&self.api, &repo, &auth, &reference, bytes.into()).await?;
        Ok(digest)
    }

    /// The body of an `https://` source, at most the largest plugin, streamed into `store`'s
    /// incoming folder as it arrives (not kept yet: the caller compares its digest with the pin).
    pub(crate) async fn download(
        &self,
        url: &str,
        store: &Store,
    ) -> Result<bounded::Spooled, RemoteError> {
        let failed = |message: String| RemoteError::Download {
            url: url.to_owned(),
            message,
        };
        let response = self
            .https
            .get(url)
            .send()
            .await
            .map_err(|e| failed(e.to_string()))?;
        if !response.status().is_success() {
            return Err(failed(bounded::error_text(response).await));
        }
        bounded::spool(
            response,
            MAX_BLOB_BYTES,
            &|| url.to_owned(),
            &store.incoming(),
        )
        .await
    }
}

/// The host that serves a registry's API: Docker Hub's is not `docker.io` itself.
fn api_host(registry: &str) -> &str {
    match registry {
        "docker.io" => "index.docker.io",
        other => other,
    }
}
