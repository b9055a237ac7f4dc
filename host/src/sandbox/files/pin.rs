//! Resolve once, act on what was judged. A path a guest names is split into the folder that holds
//! its last component and that component's name. The folder is opened beneath the guest's
//! descriptor (cap-primitives: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` where the
//! kernel has it, else its own walk, one component at a time with `O_NOFOLLOW`), and judged where
//! that descriptor really is (`/proc/self/fd`). The operation then acts relative to that descriptor
//! on the name alone: nothing above it is looked up a second time, so a concurrent call that swaps
//! or renames an ancestor between the judgement and the act changes nothing about what is touched.
//!
//! A final symbolic link the guest asks to follow is read here and its target resolved the same
//! way, again from the guest's descriptor (so it cannot climb above it), and judged anew; the
//! operation itself never follows a link.

use std::path::Path;

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::{Descriptor, Dir};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, DescriptorType, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{FsError, FsResult};

use super::super::budget::FileUnit;
use super::view::{GuardedView, host_path_of};

/// Symbolic links followed for one operation before giving up, as Linux does (`ELOOP`).
const MAX_LINKS: usize = 40;

/// The folder holding a path's last component, opened and judged, and the component's name.
pub(super) struct Pinned {
    /// The folder in the resource table: the guest's own descriptor, or one opened for this
    /// operation (dropped by [`GuardedView::unpin`]) with its unit of the descriptor budget.
    dir: u32,
    opened: Option<(Resource<Descriptor>, FileUnit)>,
    /// The folder's guest path, where it really is.
    guest: String,
    /// The last component: a plain name, or `.` when the path names the folder itself.
    pub(super) name: String,
}

impl Pinned {
    /// The folder, borrowed for one operation of wasmtime-wasi's.
    pub(super) fn dir(&self) -> Resource<Descriptor> {
        Resource::new_borrow(self.dir)
    }

    /// The guest path of what the operation touches.
    pub(super) fn guest_path(&self) -> String {
        match (self.guest.as_str(), self.name.as_str()) {
            (dir, ".") => dir.to_owned(),
            ("", name) => name.to_owned(),
            (dir, name) => format!("{dir}/{name}"),
        }
    }

    /// Whether the path names the folder itself (`.`, `a/..`), not an entry in it.
    pub(super) fn is_folder(&self) -> bool {
        self.name == "."
    }
}

/// `path` split into its folder (relative to the descriptor; `.` when it has none) and the last
/// component (`.` when the path ends in `.` or `..`, whose folder is then the whole path).
/// Trailing slashes are dropped; an empty path names nothing.
pub(super) fn split(path: &str) -> FsResult<(&str, &str)> {
    if path.is_empty() {
        return Err(ErrorCode::NoEntry.into());
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        // `/`, `//`: absolute, which no operation relative to a descriptor takes.
        return Err(ErrorCode::NotPermitted.into());
    }
    let (folder, name) = match trimmed.rsplit_once('/') {
        None => (".", trimmed),
        Some(("", _)) => return Err(ErrorCode::NotPermitted.into()),
        Some((folder, name)) => (folder, name),
    };
    Ok(match name {
        "." | ".." => (trimmed, "."),
        _ => (folder, name),
    })
}

impl GuardedView<'_> {
    /// Open and judge the folder holding `path`'s last component, beneath the guest's `fd`.
    /// `path` as written is judged too (with `..` applied lexically), as the gate judges it.
    pub(super) fn pin(&mut self, fd: &Resource<Descriptor>, path: &str) -> FsResult<Pinned> {
        let base = host_path_of(&*self.fs.table, fd).ok_or(ErrorCode::BadDescriptor)?;
        self.files
            .guard
            .check_written(&base, path)
            .map_err(|r| self.refuse(r))?;
        let (folder, name) = split(path)?;
        let Descriptor::Dir(dir) = self.fs.table.get(fd)? else {
            return Err(ErrorCode::NotDirectory.into());
        };
        if folder == "." {
            let guest = self
                .files
                .guard
                .guest_of(&base)
                .map_err(|r| self.refuse(r))?;
            return Ok(Pinned {
                dir: fd.rep(),
                opened: None,
                guest,
                name: name.to_owned(),
            });
        }
        let unit = self.files.open.take()?;
        let opened = cap_primitives::fs::open_dir(&dir.dir, Path::new(folder))
            .map_err(|e| FsError::from(ErrorCode::from(&e)))?;
        let pinned = Dir::new(opened, dir.perms, dir.open_mode, self.files.inline);
        let opened = self.fs.table.push(Descriptor::Dir(pinned))?;
        let mut pinned = Pinned {
            dir: opened.rep(),
            opened: Some((opened, unit)),
            guest: String::new(),
            name: name.to_owned(),
        };
        let here = host_path_of(&*self.fs.table, &pinned.dir());
        match here.map(|h| self.files.guard.guest_of(&h)) {
            Some(Ok(guest)) => pinned.guest = guest,
            Some(Err(refusal)) => {
                self.unpin(pinned)?;
                return Err(self.refuse(refusal));
            }
            None => {
                self.unpin(pinned)?;
                return Err(ErrorCode::BadDescriptor.into());
            }
        }
        Ok(pinned)
    }

    /// Give back what [`Self::pin`] opened.
    pub(super) fn unpin(&mut self, pinned: Pinned) -> FsResult<()> {
        if let Some((opened, _unit)) = pinned.opened {
            self.fs.table.delete(opened)?;
        }
        Ok(())
    }

    /// Pin `path` and judge the entry it names, following a final symbolic link when `follow`
    /// (each link's target resolved from `fd` and judged anew). The entry the answer names is
    /// then acted on without following links.
    pub(super) async fn pin_entry(
        &mut self,
        fd: &Resource<Descriptor>,
        path: &str,
        follow: bool,
    ) -> FsResult<Pinned> {
        let mut path = path.to_owned();
        for _ in 0..=MAX_LINKS {
            let pinned = self.pin(fd, &path)?;
            if let Err(refusal) = self.files.guard.check_guest(&pinned.guest_path()) {
                self.unpin(pinned)?;
                return Err(self.refuse(refusal));
            }
            if !follow || pinned.is_folder() {
                return Ok(pinned);
            }
            let target = self.fs.readlink_at(pinned.dir(), pinned.name.clone()).await;
            let Ok(target) = target else {
                // Not a link (or nothing there): the entry itself.
                return Ok(pinned);
            };
            self.unpin(pinned)?;
            if target.starts_with('/') {
                // cap-std refuses absolute links: they would leave the grant.
                return Err(ErrorCode::NotPermitted.into());
            }
            path = match split(&path)? {
                (".", _) => target,
                (folder, _) => format!("{folder}/{target}"),
            };
        }
        Err(ErrorCode::Loop.into())
    }
}

impl GuardedView<'_> {
    /// Open `path` for the guest: the entry judged on its pinned folder, opened without following
    /// links. A link swapped in after the look makes the open fail with `loop`; when the guest
    /// asked to follow links, that link is then followed and judged like any other.
    pub(super) async fn open_pinned(
        &mut self,
        fd: &Resource<Descriptor>,
        path_flags: PathFlags,
        path: &str,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        // `O_CREAT | O_EXCL` never follows a final link: it fails on the link itself.
        let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW)
            && !oflags.contains(OpenFlags::EXCLUSIVE);
        for _ in 0..=MAX_LINKS {
            let pinned = self.pin_entry(fd, path, follow).await?;
            let opened = self
                .open_entry(&pinned, nofollow(path_flags), oflags, flags)
                .await;
            self.unpin(pinned)?;
            match opened {
                Err(e) if follow && e.downcast_ref() == Some(&ErrorCode::Loop) => continue,
                other => return other,
            }
        }
        Err(ErrorCode::Loop.into())
    }

    async fn open_entry(
        &mut self,
        pinned: &Pinned,
        path_flags: PathFlags,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        self.only_files_and_dirs(&pinned.dir(), path_flags, &pinned.name)
            .await?;
        let unit = self.files.open.take()?;
        let opened = self
            .fs
            .open_at(pinned.dir(), path_flags, pinned.name.clone(), oflags, flags)
            .await?;
        self.files.open.opened.insert(opened.rep(), unit);
        Ok(opened)
    }

    /// Judge a rename of `old` to `new`, both pinned. A folder moves everything it holds, so it
    /// is judged by everything it could hold, at both ends: renaming `.git` away and back would
    /// otherwise let a call write `.git/hooks/pre-commit` under another name. A file (or link) is
    /// judged by its two names. The caller holds the rename lock, so the look at the type stands.
    pub(super) async fn judge_move(&mut self, old: &Pinned, new: &Pinned) -> FsResult<()> {
        let stat = self
            .fs
            .stat_at(old.dir(), PathFlags::empty(), old.name.clone())
            .await;
        let folder = stat.is_ok_and(|s| s.type_ == DescriptorType::Directory);
        if !folder {
            return Ok(());
        }
        for end in [old, new] {
            if let Err(refusal) = self.files.guard.check_tree(&end.guest_path()) {
                return Err(self.refuse(refusal));
            }
        }
        Ok(())
    }
}

/// `flags` without `symlink-follow`: the act never follows what was not judged.
pub(super) fn nofollow(flags: PathFlags) -> PathFlags {
    flags & !PathFlags::SYMLINK_FOLLOW
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn paths_split_at_their_last_component() {
        assert_eq!(split("a").unwrap(), (".", "a"));
        assert_eq!(split("a/b/c").unwrap(), ("a/b", "c"));
        assert_eq!(split("a/b/").unwrap(), ("a", "b"));
        assert_eq!(split("a/..").unwrap(), ("a/..", "."));
        assert_eq!(split(".").unwrap(), (".", "."));
        assert_eq!(split("..").unwrap(), ("..", "."));
        assert!(split("").is_err());
        assert!(split("/x").is_err());
        assert!(split("/").is_err());
    }
}
