//! Plugins from registries: `toolhost pull` resolves every configured source to digests, checks
//! signatures against `[trust]`, keeps the blobs in a content-addressed [`Store`] and writes
//! `toolhost.lock`; the registry then loads sourced plugins offline with [`resolve`], which checks
//! every digest and signature again on every load. `toolhost push` and `toolhost sign` publish.
//!
//! A pulled component is untrusted code like any other: its grants and limits come from the config,
//! never from the artifact.

mod api;
mod bounded;
mod credentials;
mod publish;
mod pull;
mod remote;
mod resolve;
mod store;
mod upload;

pub use self::publish::{push, sign};
pub use self::pull::{PullReport, Pulled, pull};
pub use self::resolve::{Provenance, Resolved, read_lock, resolve};
pub use self::store::{Store, StoreError};

use toolhost_trust::lock::LockError;
use toolhost_trust::oci::ManifestError;
use toolhost_trust::source::Digest;
use toolhost_trust::trust::TrustError;

/// Why a registry or server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The HTTP client could not be built.
    #[error("cannot start the registry client: {0}")]
    Client(String),
    /// Credentials were configured but cannot be read.
    #[error("credentials for {registry}: {message}")]
    Credentials {
        /// The registry.
        registry: String,
        /// What is wrong.
        message: String,
    },
    /// The registry refused or failed.
    #[error("{what}: {message}")]
    Registry {
        /// The reference.
        what: String,
        /// The registry's error.
        message: String,
    },
    /// More bytes than any plugin.
    #[error("{what} is larger than {limit} bytes")]
    TooLarge {
        /// The blob or manifest.
        what: String,
        /// The limit.
        limit: u64,
    },
    /// A manifest fetched by digest has another digest.
    #[error("the registry served {what} with digest {got}")]
    Mismatch {
        /// The reference.
        what: String,
        /// The digest of what was served.
        got: Digest,
    },
    /// A blob's bytes are not the ones its digest names: tampered with, or corrupted.
    #[error("{what} was tampered with or corrupted: {message}")]
    Tampered {
        /// The blob.
        what: String,
        /// The digest check's message.
        message: String,
    },
    /// An `https://` download failed.
    #[error("download {url}: {message}")]
    Download {
        /// The URL.
        url: String,
        /// What failed.
        message: String,
    },
}

/// Why one plugin's source could not be pulled or loaded.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The registry or server failed.
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// Nothing at that reference.
    #[error("{0}: no such artifact in the registry")]
    NotFound(String),
    /// The manifest is not a component artifact.
    #[error("{what}: {source}")]
    Manifest {
        /// The reference.
        what: String,
        /// What is wrong with it.
        source: ManifestError,
    },
    /// The signatures do not satisfy `[trust]`.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The store failed, or holds a corrupt blob.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The lockfile cannot be read.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// Not in the lockfile (or locked from another source).
    #[error("{source_ref} is not in toolhost.lock: run `toolhost pull`")]
    NotLocked {
        /// The source as configured.
        source_ref: String,
    },
    /// The lockfile contradicts itself or the config (edited by hand).
    #[error("toolhost.lock: {0}: run `toolhost pull --update`")]
    Inconsistent(String),
    /// A file to publish cannot be used.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// An `https://` source served other bytes than its pinned digest.
    #[error(
        "{url} served {got}, but the config pins {pinned}: the file changed, or the pin is wrong"
    )]
    PinMismatch {
        /// The URL.
        url: String,
        /// The digest served.
        got: Digest,
        /// The digest configured.
        pinned: Digest,
    },
}

/// Now, in Unix seconds: what signatures and transparency-log entries are judged against (an
/// entry dated later is refused).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
