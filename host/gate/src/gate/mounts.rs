//! Where a path a guest names really leads. A plugin sees its directory grants as *mounts*: guest
//! names (`.`, `/data`) over host directories. A path is mapped the way wasi-libc maps it (relative
//! and absolute alike, the longest mount name that prefixes it wins, `.` prefixes everything) and then
//! walked the way cap-std walks it: component by component on the real filesystem, following symbolic
//! links, never above the mount's root, never through an absolute link.
//!
//! The gate and the sandbox's filesystem both judge the path this finds, so a rule cannot be
//! dodged by spelling (`/x`, `a/../x`, `link/../x`, an alias of a denied directory). This reads
//! link targets and file types, never contents, and writes nothing.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Symbolic links followed in one walk before giving up, as Linux does (`ELOOP`).
const MAX_LINKS: usize = 40;

/// A plugin's directory grants as the guest sees them.
#[derive(Debug, Clone, Default)]
pub struct Mounts {
    mounts: Vec<Mount>,
}

#[derive(Debug, Clone)]
struct Mount {
    /// The guest name's segments: `.` and `/` are `[]`, `/data` is `["data"]`.
    guest: Vec<String>,
    /// The host directory, canonical.
    host: PathBuf,
}

/// Where a guest path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The path as the guest's root sees it, after following links: `secrets/key`, `""` for the root.
    pub guest: String,
    /// The same place on the host.
    pub host: PathBuf,
}

/// Why a guest path leads nowhere the plugin may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unresolved {
    /// No mount name prefixes it.
    #[error("it is in none of the plugin's granted directories")]
    NoGrant,
    /// `..` climbs above the mount's root.
    #[error("`..` climbs out of the granted directory")]
    Climbs,
    /// A symbolic link leads above the mount's root, or is absolute.
    #[error("a symbolic link in it leads out of the granted directory")]
    LinkEscapes,
    /// Too many links, or a loop.
    #[error("it goes through too many symbolic links")]
    Loop,
    /// A NUL byte, or a link target that is not UTF-8.
    #[error("it is not a valid path")]
    Invalid,
}

impl Mounts {
    /// Mounts from `(guest name, host directory)` pairs; a host directory that cannot be
    /// canonicalised is kept as given (the sandbox refuses to open it anyway).
    pub fn new<'a>(grants: impl IntoIterator<Item = (&'a str, &'a Path)>) -> Self {
        let mounts = grants
            .into_iter()
            .map(|(guest, host)| Mount {
                guest: segments(guest).map(str::to_owned).collect(),
                host: host.canonicalize().unwrap_or_else(|_| host.to_path_buf()),
            })
            .collect();
        Self { mounts }
    }

    /// Whether the plugin has no directory at all.
    pub fn is_empty(&self) -> bool {
        self.mounts.is_empty()
    }

    /// The guest names of every mount, as guest paths (`""` for the root).
    pub fn guest_roots(&self) -> impl Iterator<Item = String> + '_ {
        self.mounts.iter().map(|m| m.guest.join("/"))
    }

    /// Where `path`, as the guest names it, leads; the final link is followed too.
    pub fn resolve(&self, path: &str) -> Result<Resolved, Unresolved> {
        if path.contains('\0') {
            return Err(Unresolved::Invalid);
        }
        let parts: Vec<&str> = segments(path).collect();
        let mount = self
            .mounts
            .iter()
            .filter(|m| {
                parts.len() >= m.guest.len() && parts.iter().zip(&m.guest).all(|(a, b)| a == b)
            })
            .max_by_key(|m| m.guest.len())
            .ok_or(Unresolved::NoGrant)?;
        let rest = parts[mount.guest.len()..].iter().map(|s| (*s).to_owned());
        mount.walk(Vec::new(), rest.collect())
    }

    /// Where `path`, opened relative to the host directory `dir` (one the guest holds open), leads.
    /// `None` when `dir` is in no mount: such a descriptor was never granted.
    pub fn resolve_at(&self, dir: &Path, path: &str) -> Option<Result<Resolved, Unresolved>> {
        if path.contains('\0') {
            return Some(Err(Unresolved::Invalid));
        }
        let (mount, base) = self.locate(dir)?;
        let rest = if path.starts_with('/') {
            // cap-std refuses absolute paths relative to a directory.
            return Some(Err(Unresolved::Climbs));
        } else {
            path.split('/').map(str::to_owned).collect()
        };
        Some(mount.walk(base, rest))
    }

    /// The guest path of a host path inside some mount: `None` when it is in none.
    pub fn guest_path_of(&self, host: &Path) -> Option<String> {
        let (mount, rest) = self.locate(host)?;
        Some(mount.guest_path(&rest))
    }

    /// The mount holding `host`, and the segments below its root. The innermost mount wins.
    fn locate(&self, host: &Path) -> Option<(&Mount, Vec<String>)> {
        self.mounts
            .iter()
            .filter_map(|m| {
                let rest = host.strip_prefix(&m.host).ok()?;
                let rest = rest
                    .iter()
                    .map(|s| s.to_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()?;
                Some((m, rest))
            })
            .min_by_key(|(_, rest)| rest.len())
    }
}

impl Mount {
    /// Walk `rest` from `base` (segments below the root), as cap-std would.
    fn walk(&self, base: Vec<String>, rest: Vec<String>) -> Result<Resolved, Unresolved> {
        let mut queue: VecDeque<String> = rest.into();
        let mut real = base;
        let mut links = 0;
        // Once a component is missing the rest cannot be a link: it is joined lexically.
        let mut missing = false;
        while let Some(segment) = queue.pop_front() {
            match segment.as_str() {
                "" | "." => continue,
                ".." => {
                    real.pop().ok_or(Unresolved::Climbs)?;
                    continue;
                }
                _ => real.push(segment),
            }
            if missing {
                continue;
            }
            let here = self.host_path(&real);
            match std::fs::symlink_metadata(&here) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(Unresolved::Loop);
                    }
                    let target = std::fs::read_link(&here).map_err(|_| Unresolved::Invalid)?;
                    let target = target.to_str().ok_or(Unresolved::Invalid)?;
                    if target.starts_with('/') {
                        return Err(Unresolved::LinkEscapes);
                    }
                    real.pop();
                    for part in target.split('/').rev() {
                        queue.push_front(part.to_owned());
                    }
                    // `..` in the target that climbs above the root is an escape, not a climb.
                    if climbs_above(&real, &queue) {
                        return Err(Unresolved::LinkEscapes);
                    }
                }
                Ok(_) => {}
                Err(_) => missing = true,
            }
        }
        Ok(Resolved {
            guest: self.guest_path(&real),
            host: self.host_path(&real),
        })
    }

    fn host_path(&self, real: &[String]) -> PathBuf {
        let mut path = self.host.clone();
        path.extend(real.iter().map(|s| OsStr::from_bytes(s.as_bytes())));
        path
    }

    fn guest_path(&self, real: &[String]) -> String {
        let mut parts: Vec<&str> = self.guest.iter().map(String::as_str).collect();
        parts.extend(real.iter().map(String::as_str));
        parts.join("/")
    }
}

/// Whether the leading `..`s of `queue` climb above `real`'s depth.
fn climbs_above(real: &[String], queue: &VecDeque<String>) -> bool {
    let mut depth = real.len();
    for segment in queue {
        match segment.as_str() {
            "" | "." => {}
            ".." if depth == 0 => return true,
            ".." => depth -= 1,
            _ => depth += 1,
        }
    }
    false
}

/// A mount's guest name as a guest path: `.` and `/` are `""`, `/data/` is `data`.
pub fn guest_root(guest: &str) -> String {
    segments(guest).collect::<Vec<_>>().join("/")
}

/// A guest path's segments without empty and `.` ones; a leading `/` changes nothing (wasi-libc
/// resolves relative paths against `/`).
fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty() && *s != ".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Tree {
        dir: tempfile::TempDir,
    }

    impl Tree {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            std::fs::create_dir_all(root.join("work/secrets")).unwrap();
            std::fs::create_dir_all(root.join("work/src/deep")).unwrap();
            std::fs::write(root.join("work/secrets/key"), "k").unwrap();
            symlink("secrets", root.join("work/alias")).unwrap();
            symlink("src/deep", root.join("work/link")).unwrap();
            symlink("../../outside", root.join("work/src/out")).unwrap();
            symlink("/etc", root.join("work/abs")).unwrap();
            symlink("loop", root.join("work/loop")).unwrap();
            std::fs::create_dir_all(root.join("data")).unwrap();
            Self { dir }
        }

        fn mounts(&self) -> Mounts {
            let work = self.dir.path().join("work");
            let data = self.dir.path().join("data");
            Mounts::new([(".", work.as_path()), ("/data", data.as_path())])
        }
    }

    fn guest(m: &Mounts, path: &str) -> Result<String, Unresolved> {
        m.resolve(path).map(|r| r.guest)
    }

    #[test]
    fn absolute_and_relative_paths_name_the_same_file() {
        let t = Tree::new();
        let m = t.mounts();
        for spelling in [
            "secrets/key",
            "/secrets/key",
            "./secrets/key",
            "//secrets/./key",
        ] {
            assert_eq!(guest(&m, spelling), Ok("secrets/key".into()), "{spelling}");
        }
        assert_eq!(guest(&m, "/data/x"), Ok("data/x".into()));
        assert_eq!(guest(&m, "data/x"), Ok("data/x".into()));
        assert_eq!(guest(&m, "~/x"), Ok("~/x".into()));
    }

    #[test]
    fn links_are_followed_inside_the_mount() {
        let t = Tree::new();
        let m = t.mounts();
        assert_eq!(guest(&m, "alias/key"), Ok("secrets/key".into()));
        assert_eq!(guest(&m, "alias"), Ok("secrets".into()));
        // The OS follows `link` before `..`: src/deep/.. is src.
        assert_eq!(guest(&m, "link/../x"), Ok("src/x".into()));
        assert_eq!(
            guest(&m, "link/../../secrets/key"),
            Ok("secrets/key".into())
        );
        let host = m.resolve("alias/key").unwrap().host;
        assert_eq!(
            host,
            t.dir
                .path()
                .join("work/secrets/key")
                .canonicalize()
                .unwrap()
        );
    }

    #[test]
    fn escapes_and_loops_do_not_resolve() {
        let t = Tree::new();
        let m = t.mounts();
        assert_eq!(guest(&m, "../x"), Err(Unresolved::Climbs));
        assert_eq!(guest(&m, "src/../../x"), Err(Unresolved::Climbs));
        assert_eq!(guest(&m, "src/out/x"), Err(Unresolved::LinkEscapes));
        assert_eq!(guest(&m, "abs/passwd"), Err(Unresolved::LinkEscapes));
        assert_eq!(guest(&m, "loop/x"), Err(Unresolved::Loop));
        assert_eq!(guest(&m, "a\0b"), Err(Unresolved::Invalid));
        // A mount's own `..` is the mount's root's parent: out.
        assert_eq!(guest(&m, "/data/../secrets/key"), Err(Unresolved::Climbs));
        let only_data = Mounts::new([("/data", t.dir.path().join("data").as_path())]);
        assert_eq!(guest(&only_data, "/etc/passwd"), Err(Unresolved::NoGrant));
    }

    #[test]
    fn missing_components_are_joined_lexically() {
        let t = Tree::new();
        let m = t.mounts();
        assert_eq!(guest(&m, "new/dir/../f"), Ok("new/f".into()));
        assert_eq!(guest(&m, "alias/new/file"), Ok("secrets/new/file".into()));
    }

    #[test]
    fn paths_resolve_relative_to_an_open_directory() {
        let t = Tree::new();
        let m = t.mounts();
        let src = t.dir.path().join("work/src").canonicalize().unwrap();
        let at = |p: &str| m.resolve_at(&src, p).unwrap().map(|r| r.guest);
        assert_eq!(at("../alias/key"), Ok("secrets/key".into()));
        assert_eq!(at("deep"), Ok("src/deep".into()));
        assert_eq!(at("../../x"), Err(Unresolved::Climbs));
        assert_eq!(at("/etc"), Err(Unresolved::Climbs));
        assert!(m.resolve_at(Path::new("/nowhere"), "x").is_none());
        assert_eq!(m.guest_path_of(&src), Some("src".into()));
    }
}
