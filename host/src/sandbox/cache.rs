//! On-disk cache of compiled components, keyed by the component's content hash and the engine's
//! compatibility fingerprint, so that a restart does not recompile.
//!
//! An entry is native code that `Component::deserialize` maps and runs without checking it, so an entry
//! is loaded only if it carries an HMAC-SHA256, under a key only the host holds, over the engine
//! fingerprint, the component's content hash and the payload. The key (32 random bytes) is created on
//! first use in the cache folder itself, owner-only; `config` refuses every grant that covers that
//! folder, so no plugin can read the key or write an entry. A tampered entry, or another component's
//! valid entry copied over it, fails the check and is recompiled, never loaded.
//!
//! Beside each compiled entry the cache keeps what the plugin told the host about itself when it was
//! first loaded (its `describe` answer, as JSON), under the same key and binding, so that a restart
//! can list a plugin's tools without loading its code (see [`Sandbox::deferred`](super::Sandbox)).

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The key file, in the cache folder.
const KEY_FILE: &str = "cache.key";
/// Bytes of key, and of the tag in front of each entry.
const KEY_BYTES: usize = 32;
/// Domain separation: a MAC made for anything else never verifies as a cache entry, and a
/// compiled entry never verifies as a description or the other way round.
const CODE_CONTEXT: &[u8] = b"toolhost compile cache entry v2\0";
/// v2: a description is kept only once it has passed the registry's checks, which a restart then
/// trusts (v1 kept it before checking).
const DESCRIPTION_CONTEXT: &[u8] = b"toolhost compile cache description v2\0";
const FILE_DIGESTS_CONTEXT: &[u8] = b"toolhost compile cache file digests v1\0";
/// The memo of plugin files' hashes (see `super::digests`), one per cache folder.
const FILE_DIGESTS: &str = "file-digests.json";

type HmacSha256 = Hmac<Sha256>;

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
    /// HMAC-SHA256 keyed with the cache's key, cloned for each entry.
    mac: HmacSha256,
}

impl CompileCache {
    /// Open (creating, owner-only) the cache directory for `engine`, and its key.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        }
        let key = load_or_create_key(dir)?;
        let mac = HmacSha256::new_from_slice(&key).map_err(|e| io::Error::other(e.to_string()))?;
        let mut h = Sha256Hasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut h);
        env!("CARGO_PKG_VERSION").hash(&mut h);
        let engine_key = hex(&h.0.finalize()[..8]);
        Ok(Self {
            dir: dir.to_path_buf(),
            engine_key,
            mac,
        })
    }

    fn path(&self, content_hash: &str, extension: &str) -> PathBuf {
        self.dir
            .join(format!("{content_hash}-{}.{extension}", self.engine_key))
    }

    /// The MAC of an entry: it binds the payload to its kind, this engine and this component's
    /// hash, so an entry is valid under its own name only.
    fn mac(&self, context: &[u8], content_hash: &str, payload: &[u8]) -> HmacSha256 {
        let mut m = self.mac.clone();
        m.update(context);
        m.update(self.engine_key.as_bytes());
        m.update(b"\0");
        m.update(content_hash.as_bytes());
        m.update(b"\0");
        m.update(payload);
        m
    }

    /// The payload of an authentic entry at `path`; an entry that fails its check is removed.
    fn read(&self, path: &Path, context: &[u8], content_hash: &str) -> Option<Vec<u8>> {
        let mut bytes = fs::read(path).ok()?;
        let authentic = bytes.len() >= KEY_BYTES
            && self
                .mac(context, content_hash, &bytes[KEY_BYTES..])
                .verify_slice(&bytes[..KEY_BYTES])
                .is_ok();
        if !authentic {
            tracing::warn!(
                path = %path.display(),
                "ignoring a compile-cache entry that fails its authentication (altered, replaced or \
                 written under another key); recompiling"
            );
            let _ = fs::remove_file(path);
            return None;
        }
        bytes.drain(..KEY_BYTES);
        Some(bytes)
    }

    /// Write an entry whole or not at all (a temporary file renamed over it).
    fn write(
        &self,
        path: &Path,
        context: &[u8],
        content_hash: &str,
        payload: &[u8],
    ) -> io::Result<()> {
        let tag = self
            .mac(context, content_hash, payload)
            .finalize()
            .into_bytes();
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&tag)?;
        f.write_all(payload)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    }

    /// Whether the cache has an entry (code or description) for `content_hash`, unchecked: a hint
    /// that loading it will not compile, for progress reports.
    pub(crate) fn has(&self, content_hash: &str) -> bool {
        ["describe.json", "cwasm"]
            .iter()
            .any(|ext| self.path(content_hash, ext).exists())
    }

    /// The cached component for `content_hash`, if an authentic entry exists.
    pub(crate) fn get(&self, engine: &Engine, content_hash: &str) -> Option<Component> {
        let path = self.path(content_hash, "cwasm");
        let bytes = self.read(&path, CODE_CONTEXT, content_hash)?;
        #[expect(
            unsafe_code,
            reason = "deserializing native code is unsafe; the entry was authenticated above with a key \
                      only this host holds"
        )]
        // SAFETY: the bytes are an artifact serialized by `put` below for this engine configuration (the
        // MAC covers the engine fingerprint and the content hash) and have not been altered since: the
        // HMAC key never leaves the cache folder, which no grant may cover.
        let component = unsafe { Component::deserialize(engine, &bytes) };
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
        let result = component
            .serialize()
            .map_err(|e| io::Error::other(format!("{e:#}")));
        let result = result.and_then(|payload| {
            self.write(
                &self.path(content_hash, "cwasm"),
                CODE_CONTEXT,
                content_hash,
                &payload,
            )
        });
        if let Err(e) = result {
            tracing::warn!(error = %e, "could not write the compile cache");
        }
    }

    /// What the component with `content_hash` said about itself when it was first loaded, if an
    /// authentic record of it exists.
    pub(crate) fn description(&self, content_hash: &str) -> Option<Vec<u8>> {
        let path = self.path(content_hash, "describe.json");
        self.read(&path, DESCRIPTION_CONTEXT, content_hash)
    }

    /// The sealed memo of plugin files' hashes, if there is an authentic one.
    pub(crate) fn file_digests(&self) -> Option<Vec<u8>> {
        self.read(
            &self.dir.join(FILE_DIGESTS),
            FILE_DIGESTS_CONTEXT,
            FILE_DIGESTS,
        )
    }

    /// Replace the memo of plugin files' hashes; a failure only costs hashing them next time.
    pub(crate) fn put_file_digests(&self, payload: &[u8]) {
        let path = self.dir.join(FILE_DIGESTS);
        if let Err(e) = self.write(&path, FILE_DIGESTS_CONTEXT, FILE_DIGESTS, payload) {
            tracing::warn!(error = %e, "could not write the compile cache");
        }
    }

    /// Keep what the component with `content_hash` said about itself; a failure only costs a
    /// `describe` call next time.
    pub(crate) fn put_description(&self, content_hash: &str, payload: &[u8]) {
        let path = self.path(content_hash, "describe.json");
        if let Err(e) = self.write(&path, DESCRIPTION_CONTEXT, content_hash, payload) {
            tracing::warn!(error = %e, "could not write the compile cache");
        }
    }
}

/// The cache's key: read it, or create it (owner-only) if there is none or it is damaged. Two daemons
/// sharing the folder agree on one key: it is published with a hard link, which never overwrites.
fn load_or_create_key(dir: &Path) -> io::Result<[u8; KEY_BYTES]> {
    let path = dir.join(KEY_FILE);
    match read_key(&path) {
        Ok(Some(key)) => return Ok(key),
        Ok(None) => {
            tracing::warn!(path = %path.display(), "replacing a damaged compile-cache key");
            fs::remove_file(&path)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut key = [0u8; KEY_BYTES];
    getrandom::fill(&mut key).map_err(|e| io::Error::other(e.to_string()))?;
    let tmp = dir.join(format!("{KEY_FILE}.tmp{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&tmp).and_then(|mut f| {
        f.write_all(&key)?;
        f.sync_all()
    });
    let published = written.and_then(|()| fs::hard_link(&tmp, &path));
    let _ = fs::remove_file(&tmp);
    match published {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_key(&path)?
            .ok_or_else(|| io::Error::other("the compile-cache key was damaged while created")),
        Err(e) => Err(e),
    }
}

/// The key in `path`; `None` if the file does not hold exactly one key.
fn read_key(path: &Path) -> io::Result<Option<[u8; KEY_BYTES]>> {
    let bytes = fs::read(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if fs::metadata(path)?.permissions().mode() & 0o077 != 0 {
            fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(<[u8; KEY_BYTES]>::try_from(bytes.as_slice()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(engine: &Engine, wat: &str) -> (String, Component) {
        let bytes = wat::parse_str(wat).unwrap();
        let c = Component::from_binary(engine, &bytes).unwrap();
        (sha256_hex(&bytes), c)
    }

    fn entry(dir: &Path) -> PathBuf {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "cwasm"))
            .unwrap()
    }

    #[test]
    fn loads_its_own_entries_across_reopens_with_one_owner_only_key() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let (hash, c) = component(&engine, "(component)");
        CompileCache::open(dir.path(), &engine)
            .unwrap()
            .put(&hash, &c);
        let reopened = CompileCache::open(dir.path(), &engine).unwrap();
        assert!(reopened.get(&engine, &hash).is_some());
        let key = dir.path().join(KEY_FILE);
        assert_eq!(fs::read(&key).unwrap().len(), KEY_BYTES);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&key).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }

    #[test]
    fn refuses_an_entry_with_one_flipped_byte_and_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let cache = CompileCache::open(dir.path(), &engine).unwrap();
        let (hash, c) = component(&engine, "(component)");
        cache.put(&hash, &c);
        let path = entry(dir.path());
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(cache.get(&engine, &hash).is_none());
        assert!(!path.exists());
    }

    #[test]
    fn refuses_another_components_valid_entry_copied_over_it() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let cache = CompileCache::open(dir.path(), &engine).unwrap();
        let (victim, v) = component(&engine, "(component)");
        let (attacker, a) = component(&engine, "(component (core module))");
        cache.put(&victim, &v);
        cache.put(&attacker, &a);
        assert!(cache.get(&engine, &attacker).is_some());
        fs::copy(cache.path(&attacker, "cwasm"), cache.path(&victim, "cwasm")).unwrap();
        assert!(cache.get(&engine, &victim).is_none());
    }

    #[test]
    fn refuses_entries_written_under_another_key() {
        let (mine, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let engine = Engine::default();
        let (hash, c) = component(&engine, "(component)");
        let other = CompileCache::open(theirs.path(), &engine).unwrap();
        other.put(&hash, &c);
        let cache = CompileCache::open(mine.path(), &engine).unwrap();
        fs::copy(other.path(&hash, "cwasm"), cache.path(&hash, "cwasm")).unwrap();
        assert!(cache.get(&engine, &hash).is_none());
        // An entry from before authentication (a bare SHA-256 in front) is refused too.
        let payload = c.serialize().unwrap();
        let mut old = Sha256::digest(&payload).to_vec();
        old.extend_from_slice(&payload);
        fs::write(cache.path(&hash, "cwasm"), old).unwrap();
        assert!(cache.get(&engine, &hash).is_none());
    }

    #[test]
    fn keeps_descriptions_under_their_own_hash_and_kind_only() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let cache = CompileCache::open(dir.path(), &engine).unwrap();
        let (hash, c) = component(&engine, "(component)");
        let (other, _) = component(&engine, "(component (core module))");
        assert!(cache.description(&hash).is_none());
        cache.put_description(&hash, b"[1,2]");
        assert_eq!(cache.description(&hash).as_deref(), Some(&b"[1,2]"[..]));
        // Another component's description copied over it, or a compiled entry renamed to one,
        // fails its check and is removed.
        cache.put_description(&other, b"[3]");
        fs::copy(
            cache.path(&other, "describe.json"),
            cache.path(&hash, "describe.json"),
        )
        .unwrap();
        assert!(cache.description(&hash).is_none());
        assert!(!cache.path(&hash, "describe.json").exists());
        cache.put(&hash, &c);
        fs::copy(
            cache.path(&hash, "cwasm"),
            cache.path(&hash, "describe.json"),
        )
        .unwrap();
        assert!(cache.description(&hash).is_none());
        // One flipped byte.
        cache.put_description(&hash, b"[1,2]");
        let path = cache.path(&hash, "describe.json");
        let mut bytes = fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        fs::write(&path, bytes).unwrap();
        assert!(cache.description(&hash).is_none());
    }

    #[test]
    fn replaces_a_damaged_key() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(KEY_FILE), b"short").unwrap();
        let engine = Engine::default();
        let cache = CompileCache::open(dir.path(), &engine).unwrap();
        assert_eq!(
            fs::read(dir.path().join(KEY_FILE)).unwrap().len(),
            KEY_BYTES
        );
        let (hash, c) = component(&engine, "(component)");
        cache.put(&hash, &c);
        assert!(cache.get(&engine, &hash).is_some());
    }
}
