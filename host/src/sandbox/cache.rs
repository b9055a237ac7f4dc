//! On-disk cache of compiled components, keyed by the component's content hash and the engine's
//! compatibility fingerprint, so that a restart does not recompile.
//!
//! Only files this module wrote are ever deserialized: each entry carries the SHA-256 of its payload and
//! lives in a directory created owner-only. A precompiled file found anywhere else is never loaded.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Feeds `Hash` output into SHA-256, to get a fingerprint that is stable across processes.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        unreachable!("only used through finalize")
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// A directory of compiled artifacts for one engine configuration.
pub(crate) struct CompileCache {
    dir: PathBuf,
    engine_key: String,
}

impl CompileCache {
    /// Open (creating, owner-only) the cache directory for `engine`.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> std::io::Result<Self> {
        fs::create_dir_all(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        }
        let mut h = Sha256Hasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut h);
        env!("CARGO_PKG_VERSION").hash(&mut h);
        let engine_key = hex(&h.0.finalize()[..8]);
        Ok(Self {
            dir: dir.to_path_buf(),
            engine_key,
        })
    }

    fn path(&self, content_hash: &str) -> PathBuf {
        self.dir
            .join(format!("{content_hash}-{}.cwasm", self.engine_key))
    }

    /// The cached component for `content_hash`, if a sound entry exists.
    pub(crate) fn get(&self, engine: &Engine, content_hash: &str) -> Option<Component> {
        let path = self.path(content_hash);
        let bytes = fs::read(&path).ok()?;
        if bytes.len() < 32 || Sha256::digest(&bytes[32..]).as_slice() != &bytes[..32] {
            tracing::warn!(path = %path.display(), "ignoring a corrupt compile-cache entry");
            let _ = fs::remove_file(&path);
            return None;
        }
        #[expect(
            unsafe_code,
            reason = "deserializing native code is unsafe; the entry was written by `put` below into an \
                      owner-only directory and its checksum was verified above"
        )]
        // SAFETY: the bytes are an artifact serialized by this engine configuration (the file name carries
        // the engine fingerprint) and have not been altered since (checksum verified).
        let component = unsafe { Component::deserialize(engine, &bytes[32..]) };
        match component {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "ignoring an unusable compile-cache entry");
                None
            }
        }
    }

    /// Store a compiled component; failures only cost a recompile next time, so they are logged.
    pub(crate) fn put(&self, content_hash: &str, component: &Component) {
        let result = (|| -> Result<(), Box<dyn std::error::Error>> {
            let payload = component.serialize()?;
            let path = self.path(content_hash);
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            let mut f = fs::File::create(&tmp)?;
            f.write_all(&Sha256::digest(&payload))?;
            f.write_all(&payload)?;
            f.sync_all()?;
            fs::rename(&tmp, &path)?;
            Ok(())
        })();
        if let Err(e) = result {
            tracing::warn!(error = %e, "could not write the compile cache");
        }
    }
}
