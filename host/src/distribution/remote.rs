//! Talking to registries and HTTPS servers: manifests, blobs, pushes. Every byte read is bounded
//! and every blob checked against the digest it was asked for; what the bytes mean is judged
//! elsewhere (`policy::oci`, `policy::trust`).

use futures_util::StreamExt as _;
use http::HeaderValue;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference as OciReference};

use toolhost_policy::config::Sources;
use toolhost_policy::oci::{Artifact, MANIFEST_MEDIA_TYPE, MAX_MANIFEST_BYTES};
use toolhost_policy::source::{Digest, OciRef, Reference};

use super::RemoteError;
use super::credentials::auth_for;
use super::store::MAX_BLOB_BYTES;

/// Docker's image manifest, which shares the OCI manifest's shape.
const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// A client for the registries of one configuration.
pub(crate) struct Remote {
    client: Client,
    sources: Sources,
    https: reqwest::Client,
}

impl Remote {
    /// A client that speaks plain HTTP only to the registries configured `insecure`.
    pub(crate) fn new(sources: &Sources) -> Result<Self, RemoteError> {
        // reqwest takes the process's default TLS provider: ours, ring (as for plugins' requests).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let insecure: Vec<String> = sources
            .registries
            .iter()
            .filter(|(_, s)| s.insecure)
            .map(|(host, _)| host.clone())
            .collect();
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(insecure),
            // Signatures and components are judged by toolhost, not picked by platform.
            platform_resolver: None,
            connect_timeout: Some(std::time::Duration::from_secs(15)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            user_agent: concat!("toolhost/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let client = Client::try_from(config).map_err(|e| RemoteError::Client(e.to_string()))?;
        let https = reqwest::Client::builder()
            .https_only(true)
            .connect_timeout(std::time::Duration::from_secs(15))
            .read_timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(|e| RemoteError::Client(e.to_string()))?;
        Ok(Self {
            client,
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
        let auth = self.auth(r)?;
        let reference = oci_reference(r);
        // Docker's schema 2 too: older cosign wrote signature manifests with it.
        let accepted = [
            MANIFEST_MEDIA_TYPE,
            DOCKER_MANIFEST_MEDIA_TYPE,
            toolhost_policy::oci::INDEX_MEDIA_TYPE,
        ];
        match self
            .client
            .pull_manifest_raw(&reference, &auth, &accepted)
            .await
        {
            Ok((bytes, _)) => {
                if bytes.len() > MAX_MANIFEST_BYTES {
                    return Err(RemoteError::TooLarge {
                        what: format!("the manifest of {r}"),
                        limit: MAX_MANIFEST_BYTES as u64,
                    });
                }
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
                Ok(Some((bytes.to_vec(), digest)))
            }
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(RemoteError::registry(r, e)),
        }
    }

    /// The blob `digest` of `r`'s repository, at most `size` bytes (as its manifest declares),
    /// checked against the digest.
    pub(crate) async fn blob(
        &self,
        r: &OciRef,
        digest: &Digest,
        size: u64,
    ) -> Result<Vec<u8>, RemoteError> {
        if size > MAX_BLOB_BYTES {
            return Err(RemoteError::TooLarge {
                what: format!("blob {digest} of {r}"),
                limit: MAX_BLOB_BYTES,
            });
        }
        let auth = self.auth(r)?;
        let reference = oci_reference(r);
        // Authenticates (and keeps the token) for this repository before the blob request.
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &auth)
            .await;
        let stream = self
            .client
            .pull_blob_stream(&reference, digest.as_str())
            .await
            .map_err(|e| RemoteError::registry(r, e))?;
        let what = || format!("blob {digest} of {r}");
        let bytes = match collect(stream.stream, size, what).await {
            // oci-client checks the digest as it reads, and says so in an I/O error.
            Err(RemoteError::Download { message, .. }) if message.starts_with("Invalid digest") => {
                return Err(RemoteError::Tampered {
                    what: what(),
                    message,
                });
            }
            other => other?,
        };
        digest.check(&bytes).map_err(|e| RemoteError::Tampered {
            what: what(),
            message: e.to_string(),
        })?;
        Ok(bytes)
    }

    /// Upload `artifact`'s blobs, then its manifest under `r`'s tag (or digest); returns the
    /// manifest's digest.
    pub(crate) async fn push(
        &self,
        r: &OciRef,
        artifact: &Artifact,
    ) -> Result<Digest, RemoteError> {
        let auth = self.auth(r)?;
        let reference = oci_reference(r);
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &auth)
            .await;
        let m = &artifact.manifest;
        let blobs = std::iter::once((&m.config.digest, &artifact.config))
            .chain(m.layers.iter().map(|l| &l.digest).zip(&artifact.layers));
        for (digest, bytes) in blobs {
            self.client
                .push_blob(&reference, bytes.clone(), digest.as_str())
                .await
                .map_err(|e| RemoteError::registry(r, e))?;
        }
        let bytes = m.to_bytes();
        let digest = Digest::of(&bytes);
        self.client
            .push_manifest_raw(
                &reference,
                bytes,
                HeaderValue::from_static(MANIFEST_MEDIA_TYPE),
            )
            .await
            .map_err(|e| RemoteError::registry(r, e))?;
        Ok(digest)
    }

    /// The body of an `https://` source, at most the largest plugin.
    pub(crate) async fn download(&self, url: &str) -> Result<Vec<u8>, RemoteError> {
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
            return Err(failed(format!("HTTP {}", response.status())));
        }
        let stream = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(std::io::Error::other));
        collect(stream, MAX_BLOB_BYTES, || url.to_owned()).await
    }
}

/// Read `stream` whole, refusing more than `limit` bytes.
async fn collect<S>(
    mut stream: S,
    limit: u64,
    what: impl Fn() -> String,
) -> Result<Vec<u8>, RemoteError>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Unpin,
{
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| RemoteError::Download {
            url: what(),
            message: e.to_string(),
        })?;
        if out.len() as u64 + chunk.len() as u64 > limit {
            return Err(RemoteError::TooLarge {
                what: what(),
                limit,
            });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

fn oci_reference(r: &OciRef) -> OciReference {
    match &r.reference {
        Reference::Tag(tag) => {
            OciReference::with_tag(r.registry.clone(), r.repository.clone(), tag.clone())
        }
        Reference::Digest(d) => {
            OciReference::with_digest(r.registry.clone(), r.repository.clone(), d.to_string())
        }
    }
}

fn not_found(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown
            )
        }),
        OciDistributionError::ServerError { code, .. } => *code == 404,
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        _ => false,
    }
}
