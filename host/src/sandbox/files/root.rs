//! The root no grant covers: a preopen at `/` that toolhost answers itself, so that a plugin
//! opening a path outside its grants is told which grant is missing.
//!
//! Guest toolchains resolve a path against their preopens inside the guest (wasi-libc, Go): with no
//! preopen above a path, the open fails there with `ENOENT` and the host never hears of it, so
//! neither the model nor the operator can learn that a grant is missing. With this root last among
//! the preopens, such a path lands here instead; every operation that names a path beneath it is
//! refused (EACCES) and noted, for the tool's error result, the audit record and the log.
//!
//! The root grants nothing: it is read-only, it is an empty directory removed right after toolhost
//! opened it (nothing can ever be created in it), and no path operation on it reaches the kernel.
//! It is left out when a grant is mounted at the root itself (`guest = "."` or `"/"`): every path
//! then resolves into that grant, and toolchains that let the first preopen win a tie (Go) would
//! otherwise pick the root.

use std::fs::File;
use std::sync::Arc;

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::{Descriptor, Dir};
use wasmtime_wasi::p2::bindings::filesystem::{preopens, types::ErrorCode};
use wasmtime_wasi::p2::{FsError, FsResult};
use wasmtime_wasi::{FsPerms, OpenMode};

use super::view::GuardedView;
use toolhost_call::text::{OneLine, prefix};

/// Notes kept per call for the model; a plugin probing paths in a loop must not grow them.
const MAX_NOTES: usize = 8;

/// Bytes of a refused path quoted in a note; a guest can send a path of any length.
const PATH_SHOWN: usize = 200;

/// The empty, removed directory every call's root preopen duplicates. Opened once per daemon.
pub(crate) fn open_root() -> std::io::Result<Arc<File>> {
    let dir = tempfile::Builder::new()
        .prefix("toolhost-no-grant-")
        .tempdir()?;
    let file =
        cap_primitives::fs::open_ambient_dir(dir.path(), cap_primitives::ambient_authority())?;
    // Removed now: the descriptor stays valid, and a removed directory takes no new entries.
    dir.close()?;
    Ok(Arc::new(file))
}

/// Whether a grant's guest path is the root itself, so that every path resolves into it.
pub(super) fn at_root(guest: &str) -> bool {
    guest.trim_matches(|c| c == '/' || c == '.').is_empty()
}

impl preopens::Host for GuardedView<'_> {
    /// The granted directories, then the root when the call has one (last: wasi-libc lets a later
    /// preopen win a tie and Go an earlier one, and Go takes its working directory from the first).
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        let mut dirs = preopens::Host::get_directories(&mut self.fs)?;
        let Some(root) = &self.files.root else {
            return Ok(dirs);
        };
        let unit = self.files.open.unit()?;
        let copy = root.try_clone()?;
        let dir = Dir::new(copy, FsPerms::ReadOnly, OpenMode::READ, self.files.inline);
        let fd = self.fs.table.push(Descriptor::Dir(dir))?;
        self.files.open.opened.insert(fd.rep(), unit);
        self.files.roots.push(fd.rep());
        dirs.push((fd, "/".to_owned()));
        Ok(dirs)
    }
}

impl GuardedView<'_> {
    /// Refuse `path` when `fd` is the root: no grant covers it. `write` says whether the operation
    /// would change something, for the hint (`mode = "rw"`).
    pub(super) fn within_grants(
        &mut self,
        fd: &Resource<Descriptor>,
        path: &str,
        write: bool,
    ) -> FsResult<()> {
        if !self.files.roots.contains(&fd.rep()) {
            return Ok(());
        }
        Err(self.no_grant(path, write))
    }

    /// Note and log that no grant covers `path` (relative to the root), and the error for the guest.
    pub(super) fn no_grant(&mut self, path: &str, write: bool) -> FsError {
        let path = match path.trim_start_matches('/') {
            "." | "" => "/".to_owned(),
            rel => format!("/{}", rel.strip_suffix("/.").unwrap_or(rel)),
        };
        let shown = prefix(&path, PATH_SHOWN);
        let cut = if shown.len() < path.len() { "…" } else { "" };
        let parent = match shown.rsplit_once('/') {
            Some(("", _)) | None => ".".to_owned(),
            Some((dir, _)) => dir.to_owned(),
        };
        let mode = if write { ", mode = \"rw\"" } else { "" };
        let note = format!(
            "no directory grant covers {shown}{cut}; grant it with [plugins.{plugin}] dirs = \
             [{{ host = \"<a directory on the host>\", guest = \"{parent}\"{mode} }}] in toolhost.toml",
            shown = OneLine(shown),
            plugin = self.plugin,
        );
        tracing::warn!(plugin = %OneLine(self.plugin), "filesystem access refused: {}", OneLine(&note));
        if self.files.notes.len() < MAX_NOTES && !self.files.notes.contains(&note) {
            self.files.notes.push(note);
        }
        ErrorCode::Access.into()
    }

    /// Forget `rep` as a root: the guest dropped it, and the table may give its slot to another.
    pub(super) fn forget_root(&mut self, rep: u32) {
        self.files.roots.retain(|r| *r != rep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_guest_paths_naming_the_root_are_at_the_root() {
        for root in [".", "/", "./", "//", "/."] {
            assert!(at_root(root), "{root}");
        }
        for other in ["/data", "data", "./src", "/etc/"] {
            assert!(!at_root(other), "{other}");
        }
    }

    #[test]
    fn the_root_is_an_empty_directory_nothing_can_be_created_in() {
        use std::os::fd::AsRawFd;
        let root = open_root().unwrap();
        let link = std::fs::read_link(format!("/proc/self/fd/{}", root.as_raw_fd())).unwrap();
        assert!(link.to_string_lossy().ends_with(" (deleted)"), "{link:?}");
        let dir = cap_primitives::fs::open_dir(&root, std::path::Path::new("."));
        // Whether or not `.` opens (O_PATH), nothing can be made inside a removed directory.
        if let Ok(dir) = dir {
            let made = cap_primitives::fs::create_dir(
                &dir,
                std::path::Path::new("x"),
                &cap_primitives::fs::DirOptions::new(),
            );
            assert!(made.is_err());
        }
    }
}
