//! A memo of plugin files' SHA-256, so that a restart does not read and hash every plugin: a file
//! whose device, inode, size, modification and change times are what they were when it was hashed is
//! taken to be the same file, however its path is spelled (the rule git's index and ccache use). No user can set a change time, and
//! a file hashed within [`RACY`] of its last change is not remembered, since it could change again
//! within the same timestamp tick. The memo lives in the compile-cache folder, sealed with its key.

use std::collections::{HashMap, HashSet};
use std::fs::Metadata;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::cache::CompileCache;

/// A file changed this recently is hashed every time until it has been still for longer.
const RACY: Duration = Duration::from_secs(2);

/// What `stat` says of a file, as far as telling a changed file goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stat {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

/// A file, whatever its path: its device and inode.
type FileId = (u64, u64);

impl Stat {
    fn id(&self) -> FileId {
        (self.dev, self.ino)
    }

    #[cfg(unix)]
    fn of(meta: &Metadata) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Some(Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        })
    }

    #[cfg(not(unix))]
    fn of(_: &Metadata) -> Option<Self> {
        None
    }

    /// Whether the file was last changed long enough ago that a change now would show.
    fn settled(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        self.mtime_ns.max(self.ctime_ns) + (RACY.as_nanos() as i128) < now
    }
}

#[derive(Serialize, Deserialize)]
struct Entry {
    stat: Stat,
    sha256: String,
}

/// The memo: loaded when the sandbox starts, written back after a reload that taught it something.
pub(crate) struct FileDigests {
    known: Mutex<Known>,
    changed: AtomicBool,
}

#[derive(Default)]
struct Known {
    by_file: HashMap<FileId, Entry>,
    /// The files asked about since the memo was last saved: the ones still worth keeping.
    seen: HashSet<FileId>,
}

impl FileDigests {
    /// The memo kept in `cache`, or an empty one.
    pub(crate) fn open(cache: Option<&CompileCache>) -> Self {
        let entries: Vec<Entry> = cache
            .and_then(CompileCache::file_digests)
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let by_file = entries.into_iter().map(|e| (e.stat.id(), e)).collect();
        Self {
            known: Mutex::new(Known {
                by_file,
                seen: HashSet::new(),
            }),
            changed: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The digest of the file `meta` describes, if it is unchanged since it was hashed.
    pub(crate) fn get(&self, meta: &Metadata) -> Option<String> {
        let stat = Stat::of(meta)?;
        let mut known = self.lock();
        known.seen.insert(stat.id());
        match known.by_file.get(&stat.id()) {
            Some(e) if e.stat == stat && stat.settled() => Some(e.sha256.clone()),
            _ => None,
        }
    }

    /// Remember that a file hashes to `sha256`, if it was the same (by `stat`) before it was read
    /// and after.
    pub(crate) fn remember(&self, before: &Metadata, after: &Metadata, sha256: &str) {
        let Some(stat) = Stat::of(after).filter(Stat::settled) else {
            return;
        };
        if Stat::of(before) != Some(stat) {
            return;
        }
        let entry = Entry {
            stat,
            sha256: sha256.to_owned(),
        };
        let mut known = self.lock();
        known.seen.insert(stat.id());
        let old = known.by_file.insert(stat.id(), entry);
        if old.is_none_or(|e| e.stat != stat || e.sha256 != sha256) {
            self.changed.store(true, Ordering::Relaxed);
        }
    }

    /// Keep only the files asked about since the last save, and write the memo to `cache` if it
    /// changed.
    pub(crate) fn save(&self, cache: Option<&CompileCache>) {
        let json = {
            let mut known = self.lock();
            let Known { by_file, seen } = &mut *known;
            let before = by_file.len();
            by_file.retain(|id, _| seen.contains(id));
            seen.clear();
            if by_file.len() != before {
                self.changed.store(true, Ordering::Relaxed);
            }
            if !self.changed.swap(false, Ordering::Relaxed) {
                return;
            }
            serde_json::to_vec(&by_file.values().collect::<Vec<_>>())
        };
        if let (Some(cache), Ok(json)) = (cache, json) {
            cache.put_file_digests(&json);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::path::Path;

    use super::*;

    /// A file last changed long ago (when the repository was checked out).
    fn settled_file() -> Metadata {
        let meta =
            std::fs::metadata(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
        assert!(Stat::of(&meta).unwrap().settled(), "checked out just now?");
        meta
    }

    #[test]
    fn remembers_a_settled_file_and_not_another_or_a_fresh_one_across_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::open(dir.path(), &wasmtime::Engine::default()).unwrap();
        let meta = settled_file();
        let memo = FileDigests::open(Some(&cache));
        assert_eq!(memo.get(&meta), None);
        memo.remember(&meta, &meta, "h1");
        assert_eq!(memo.get(&meta).as_deref(), Some("h1"));
        // Another file is not it.
        let fresh = dir.path().join("p.wasm");
        std::fs::write(&fresh, b"one").unwrap();
        let fresh_meta = std::fs::metadata(&fresh).unwrap();
        assert_eq!(memo.get(&fresh_meta), None);
        // Nor is a file that changed while it was read.
        memo.remember(&fresh_meta, &meta, "h5");
        assert_eq!(memo.get(&meta).as_deref(), Some("h1"));
        // A file changed within the last moments is hashed again every time.
        memo.remember(&fresh_meta, &fresh_meta, "h2");
        assert_eq!(memo.get(&fresh_meta), None);
        // Kept, sealed, across a restart; forgotten once no reload asks about it.
        memo.save(Some(&cache));
        let reopened = FileDigests::open(Some(&cache));
        assert_eq!(reopened.get(&meta).as_deref(), Some("h1"));
        reopened.save(Some(&cache));
        let again = FileDigests::open(Some(&cache));
        again.save(Some(&cache));
        assert_eq!(FileDigests::open(Some(&cache)).get(&meta), None);
        // An altered memo is not believed.
        memo.remember(&meta, &meta, "h3");
        memo.save(Some(&cache));
        assert_eq!(
            FileDigests::open(Some(&cache)).get(&meta).as_deref(),
            Some("h3")
        );
        let file = dir.path().join("file-digests.json");
        let mut bytes = std::fs::read(&file).unwrap();
        let at = bytes.windows(2).position(|w| w == b"h3").unwrap();
        bytes[at + 1] = b'4';
        std::fs::write(&file, bytes).unwrap();
        assert_eq!(FileDigests::open(Some(&cache)).get(&meta), None);
    }

    #[test]
    fn any_change_a_stat_shows_is_another_file() {
        let stat = Stat::of(&settled_file()).unwrap();
        let changes: [fn(&mut Stat); 5] = [
            |s| s.dev += 1,
            |s| s.ino += 1,
            |s| s.size += 1,
            |s| s.mtime_ns += 1,
            |s| s.ctime_ns += 1,
        ];
        for change in changes {
            let mut other = stat;
            change(&mut other);
            assert_ne!(other, stat);
        }
    }
}
