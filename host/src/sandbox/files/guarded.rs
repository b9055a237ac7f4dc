//! The files capability: `wasi:filesystem/types` as wasmtime-wasi implements it, with the call's
//! [`PathGuard`](toolhost_gate::gate::PathGuard) in front of every operation that names a path.
//!
//! Each such operation resolves its path once, into a descriptor of the folder that holds the last
//! component, judges where that folder really is, and acts on the name alone ([`super::pin`]): a
//! concurrent call renaming an ancestor or swapping in a link between the judgement and the act
//! changes nothing. A rename of a folder is judged by everything it could hold, so renaming an
//! ancestor of a denied path (to work in it under another name and rename it back) is refused. Every
//! file opened is judged once more by where it was opened (`/proc/self/fd`). A refusal is `access`
//! (EACCES), the way a file the OS protects would be; with nothing denied every check is skipped,
//! except the one that a path is beneath a grant at all ([`super::root`]).
//! Every descriptor the guest opens holds a unit of the daemon-wide budget ([`super::OpenFiles`]).

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::{self, ErrorCode, HostDescriptor};
use wasmtime_wasi::p2::{FsError, FsResult};
use wasmtime_wasi_io::streams::{DynInputStream, DynOutputStream};

use super::pin::nofollow;
use super::view::{GuardedView, host_path_of};
use toolhost_gate::gate::Refusal;

/// Renames are judged by whether their source is a folder: one at a time per daemon, so no other
/// call's rename turns a file into a folder between that look and the act.
static RENAMES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl HostDescriptor for GuardedView<'_> {
    async fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
        len: types::Filesize,
        advice: types::Advice,
    ) -> FsResult<()> {
        self.fs.advise(fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        self.fs.sync_data(fd).await
    }

    async fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorFlags> {
        self.fs.get_flags(fd).await
    }

    async fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorType> {
        self.fs.get_type(fd).await
    }

    async fn set_size(&mut self, fd: Resource<Descriptor>, size: types::Filesize) -> FsResult<()> {
        self.fs.set_size(fd, size).await
    }

    async fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.fs.set_times(fd, atim, mtim).await
    }

    async fn read(
        &mut self,
        fd: Resource<Descriptor>,
        len: types::Filesize,
        offset: types::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        self.fs.read(fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        self.fs.write(fd, buf, offset).await
    }

    async fn read_directory(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<types::DirectoryEntryStream>> {
        if self.files.roots.contains(&fd.rep()) {
            return Err(self.no_grant("", false));
        }
        let dir = if self.open() {
            None
        } else {
            Some(host_path_of(&*self.fs.table, &fd).ok_or(ErrorCode::BadDescriptor)?)
        };
        // Listing opens the directory once more, for as long as it reads it.
        let _listing = self.files.open.take()?;
        let stream = self.fs.read_directory(fd).await?;
        if let Some(dir) = dir {
            self.files.listings.insert(stream.rep(), dir);
        }
        Ok(stream)
    }

    async fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        self.fs.sync(fd).await
    }

    async fn create_directory_at(
        &mut self,
        fd: Resource<Descriptor>,
        path: String,
    ) -> FsResult<()> {
        self.within_grants(&fd, &path, true)?;
        if self.open() {
            return self.fs.create_directory_at(fd, path).await;
        }
        let p = self.pin_entry(&fd, &path, false).await?;
        let result = self.fs.create_directory_at(p.dir(), p.name.clone()).await;
        self.unpin(p)?;
        result
    }

    async fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorStat> {
        self.fs.stat(fd).await
    }

    async fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::DescriptorStat> {
        self.within_grants(&fd, &path, false)?;
        if self.open() {
            return self.fs.stat_at(fd, path_flags, path).await;
        }
        let follow = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
        let p = self.pin_entry(&fd, &path, follow).await?;
        let result = self
            .fs
            .stat_at(p.dir(), nofollow(path_flags), p.name.clone())
            .await;
        self.unpin(p)?;
        result
    }

    async fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.within_grants(&fd, &path, true)?;
        if self.open() {
            return self.fs.set_times_at(fd, path_flags, path, atim, mtim).await;
        }
        let follow = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
        let p = self.pin_entry(&fd, &path, follow).await?;
        let result = self
            .fs
            .set_times_at(p.dir(), nofollow(path_flags), p.name.clone(), atim, mtim)
            .await;
        self.unpin(p)?;
        result
    }

    async fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: types::PathFlags,
        old_path: String,
        new_descriptor: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        self.within_grants(&fd, &old_path, false)?;
        self.within_grants(&new_descriptor, &new_path, true)?;
        if self.open() {
            return self
                .fs
                .link_at(fd, old_path_flags, old_path, new_descriptor, new_path)
                .await;
        }
        // Both names judged on their pinned folders: a hard link never names a denied file, nor
        // is it made where a denied one would be.
        let follow = old_path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
        let old = self.pin_entry(&fd, &old_path, follow).await?;
        let new = match self.pin_entry(&new_descriptor, &new_path, false).await {
            Ok(new) => new,
            Err(e) => {
                self.unpin(old)?;
                return Err(e);
            }
        };
        let (flags, old_name, new_name) =
            (nofollow(old_path_flags), old.name.clone(), new.name.clone());
        let result = self
            .fs
            .link_at(old.dir(), flags, old_name, new.dir(), new_name)
            .await;
        self.unpin(old)?;
        self.unpin(new)?;
        result
    }

    async fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
        oflags: types::OpenFlags,
        flags: types::DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let write = oflags.intersects(types::OpenFlags::CREATE | types::OpenFlags::TRUNCATE)
            || flags.intersects(
                types::DescriptorFlags::WRITE | types::DescriptorFlags::MUTATE_DIRECTORY,
            );
        self.within_grants(&fd, &path, write)?;
        if self.open() {
            self.only_files_and_dirs(&fd, path_flags, &path).await?;
            let unit = self.files.open.take()?;
            let opened = self.fs.open_at(fd, path_flags, path, oflags, flags).await?;
            self.files.open.opened.insert(opened.rep(), unit);
            return Ok(opened);
        }
        let opened = self
            .open_pinned(&fd, path_flags, &path, oflags, flags)
            .await?;
        // Judge what was really opened, once more: the folder was pinned and the name opened
        // without following links, so this holds unless the host itself moved things.
        let verdict = match host_path_of(&*self.fs.table, &opened) {
            Some(host) => self.files.guard.check_host(&host),
            None => Err(Refusal {
                path: "(unknown)".into(),
                why: "its location cannot be read".into(),
            }),
        };
        match verdict {
            Ok(()) => Ok(opened),
            Err(refusal) => {
                HostDescriptor::drop(self, opened).map_err(FsError::trap)?;
                Err(self.refuse(refusal))
            }
        }
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        let rep = fd.rep();
        HostDescriptor::drop(&mut self.fs, fd)?;
        self.files.open.opened.remove(&rep);
        self.forget_root(rep);
        Ok(())
    }

    async fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        self.within_grants(&fd, &path, false)?;
        if self.open() {
            return self.fs.readlink_at(fd, path).await;
        }
        let p = self.pin_entry(&fd, &path, false).await?;
        let result = self.fs.readlink_at(p.dir(), p.name.clone()).await;
        self.unpin(p)?;
        result
    }

    async fn remove_directory_at(
        &mut self,
        fd: Resource<Descriptor>,
        path: String,
    ) -> FsResult<()> {
        self.within_grants(&fd, &path, true)?;
        if self.open() {
            return self.fs.remove_directory_at(fd, path).await;
        }
        // Only an empty folder is removed: it holds nothing, so the folder alone is judged.
        let p = self.pin_entry(&fd, &path, false).await?;
        let result = self.fs.remove_directory_at(p.dir(), p.name.clone()).await;
        self.unpin(p)?;
        result
    }

    async fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        self.within_grants(&fd, &old_path, true)?;
        self.within_grants(&new_fd, &new_path, true)?;
        if self.open() {
            return self.fs.rename_at(fd, old_path, new_fd, new_path).await;
        }
        let _one_at_a_time = RENAMES.lock().await;
        let old = self.pin_entry(&fd, &old_path, false).await?;
        let new = match self.pin_entry(&new_fd, &new_path, false).await {
            Ok(new) => new,
            Err(e) => {
                self.unpin(old)?;
                return Err(e);
            }
        };
        let result = match self.judge_move(&old, &new).await {
            Ok(()) => {
                let (old_name, new_name) = (old.name.clone(), new.name.clone());
                self.fs
                    .rename_at(old.dir(), old_name, new.dir(), new_name)
                    .await
            }
            Err(e) => Err(e),
        };
        self.unpin(old)?;
        self.unpin(new)?;
        result
    }

    async fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        src_path: String,
        dest_path: String,
    ) -> FsResult<()> {
        self.within_grants(&fd, &dest_path, true)?;
        if self.open() {
            return self.fs.symlink_at(fd, src_path, dest_path).await;
        }
        // The link is judged by where it is made; where it points is judged when it is followed.
        let p = self.pin_entry(&fd, &dest_path, false).await?;
        let result = self.fs.symlink_at(p.dir(), src_path, p.name.clone()).await;
        self.unpin(p)?;
        result
    }

    async fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.within_grants(&fd, &path, true)?;
        if self.open() {
            return self.fs.unlink_file_at(fd, path).await;
        }
        let p = self.pin_entry(&fd, &path, false).await?;
        let result = self.fs.unlink_file_at(p.dir(), p.name.clone()).await;
        self.unpin(p)?;
        result
    }

    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynInputStream>> {
        self.fs.read_via_stream(fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.fs.write_via_stream(fd, offset)
    }

    fn append_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.fs.append_via_stream(fd)
    }

    async fn is_same_object(
        &mut self,
        a: Resource<Descriptor>,
        b: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        self.fs.is_same_object(a, b).await
    }

    async fn metadata_hash(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<types::MetadataHashValue> {
        self.fs.metadata_hash(fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        self.within_grants(&fd, &path, false)?;
        if self.open() {
            return self.fs.metadata_hash_at(fd, path_flags, path).await;
        }
        let follow = path_flags.contains(types::PathFlags::SYMLINK_FOLLOW);
        let p = self.pin_entry(&fd, &path, follow).await?;
        let result = self
            .fs
            .metadata_hash_at(p.dir(), nofollow(path_flags), p.name.clone())
            .await;
        self.unpin(p)?;
        result
    }
}
