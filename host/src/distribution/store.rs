//! The content-addressed store of pulled blobs (`.toolhost/store/sha256/<hex>`): components,
//! manifests and signature payloads, each under the digest of its bytes. A blob is checked against
//! its name on every read, so a tampered or truncated file is refused, never loaded.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use toolhost_trust::source::{Digest, DigestError};

/// Largest blob kept: the largest plugin file the registry accepts.
pub(crate) const MAX_BLOB_BYTES: u64 = toolhost_trust::source::MAX_PLUGIN_BYTES;

/// Why a blob could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Not in the store: never pulled here, or removed.
    #[error("{digest} is not in the store {dir}: run `toolhost pull`")]
    Missing {
        /// The blob.
        digest: Digest,
        /// The store.
        dir: String,
    },
    /// In the store, but its bytes are not the ones named.
    #[error("the stored blob {0}: run `toolhost pull` to fetch it again")]
    Corrupt(#[source] DigestError),
    /// Larger than any plugin.
    #[error("the stored blob {digest} is {len} bytes; the limit is {MAX_BLOB_BYTES}")]
    TooLarge {
        /// The blob.
        digest: Digest,
        /// Its size.
        len: u64,
    },
    /// The file system refused.
    #[error("the store {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// The store in one folder.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store in `dir` (created on first write).
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
        }
    }

    /// Where `digest` is kept.
    pub fn path(&self, digest: &Digest) -> PathBuf {
        self.dir.join("sha256").join(digest.hex())
    }

    /// Whether `digest` is present and intact.
    pub fn has(&self, digest: &Digest) -> bool {
        self.read(digest).is_ok()
    }

    /// The bytes of `digest`, checked against it.
    pub fn read(&self, digest: &Digest) -> Result<Vec<u8>, StoreError> {
        let path = self.path(digest);
        let io = |source: std::io::Error| StoreError::Io {
            path: path.display().to_string(),
            source,
        };
        let len = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Missing {
                    digest: digest.clone(),
                    dir: self.dir.display().to_string(),
                });
            }
            Err(e) => return Err(io(e)),
        };
        if len > MAX_BLOB_BYTES {
            return Err(StoreError::TooLarge {
                digest: digest.clone(),
                len,
            });
        }
        let bytes = std::fs::read(&path).map_err(io)?;
        digest.check(&bytes).map_err(StoreError::Corrupt)?;
        Ok(bytes)
    }

    /// The folder that blobs stream into before they are kept: beside the blobs, so that keeping
    /// one is a rename.
    pub(crate) fn incoming(&self) -> PathBuf {
        self.dir.join("sha256")
    }

    /// Keep `file` (written in [`Store::incoming`]) as the blob `digest`, which the caller has
    /// checked it holds.
    pub(crate) fn keep(
        &self,
        file: tempfile::NamedTempFile,
        digest: &Digest,
    ) -> Result<(), StoreError> {
        let path = self.path(digest);
        let io = |source: std::io::Error| StoreError::Io {
            path: path.display().to_string(),
            source,
        };
        file.as_file().sync_all().map_err(io)?;
        file.persist(&path).map_err(|e| io(e.error))?;
        Ok(())
    }

    /// Keep `bytes` under their digest: written to a temporary file and renamed, so a reader never
    /// sees half a blob.
    pub fn put(&self, bytes: &[u8]) -> Result<Digest, StoreError> {
        let digest = Digest::of(bytes);
        if self.has(&digest) {
            return Ok(digest);
        }
        let path = self.path(&digest);
        let io = |source: std::io::Error| StoreError::Io {
            path: path.display().to_string(),
            source,
        };
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        tmp.write_all(bytes).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(&path).map_err(|e| io(e.error))?;
        Ok(digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_blobs_by_digest_and_refuses_tampered_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(&dir.path().join("store"));
        let d = store.put(b"component").unwrap();
        assert_eq!(d, Digest::of(b"component"));
        assert_eq!(store.read(&d).unwrap(), b"component");
        assert_eq!(store.put(b"component").unwrap(), d);
        std::fs::write(store.path(&d), b"componenT").unwrap();
        let e = store.read(&d).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt(_)), "{e}");
        assert!(e.to_string().contains("toolhost pull"), "{e}");
        let missing = Digest::of(b"other");
        assert!(matches!(
            store.read(&missing),
            Err(StoreError::Missing { .. })
        ));
    }
}
