//! `wasi:filesystem/types` as wasmtime-wasi implements it, with every descriptor a guest opens counted
//! against the daemon-wide [`FileBudget`]. Only `open-at` creates a descriptor that outlives the host
//! call (and `read-directory` holds one while it lists); everything else is passed straight through.
//! Paths, permissions and preopens stay wasmtime-wasi's (and `wasi`'s) business: this file decides
//! nothing but whether the daemon can afford one more descriptor.

use std::collections::HashMap;
use std::sync::Arc;

use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, HostDescriptor, HostDirectoryEntryStream,
};
use wasmtime_wasi::p2::{FsError, FsResult};
use wasmtime_wasi_io::streams::{DynInputStream, DynOutputStream};

use super::budget::{FileBudget, FileUnit};

/// The descriptors one call holds, each with its unit of the budget; dropped with the call's store.
pub(crate) struct OpenFiles {
    budget: Arc<FileBudget>,
    /// Units of the granted directories, preopened for the call.
    preopens: Vec<FileUnit>,
    /// Units of descriptors the guest opened, by table index; given back when the guest drops one.
    opened: HashMap<u32, FileUnit>,
}

impl OpenFiles {
    /// Nothing held yet.
    pub(crate) fn new(budget: Arc<FileBudget>) -> Self {
        Self {
            budget,
            preopens: Vec::new(),
            opened: HashMap::new(),
        }
    }

    /// Take the units of `count` preopened directories, before they are opened.
    pub(crate) fn preopen(&mut self, count: usize) -> Result<(), super::budget::BudgetExhausted> {
        for _ in 0..count {
            let unit = self.budget.take(self.held())?;
            self.preopens.push(unit);
        }
        Ok(())
    }

    fn held(&self) -> usize {
        self.preopens.len() + self.opened.len()
    }

    fn take(&self) -> FsResult<FileUnit> {
        self.budget.take(self.held()).map_err(FsError::trap)
    }
}

/// `wasi:filesystem/types` over a call's state, counting descriptors.
pub(crate) struct CountedFilesystem;

impl HasData for CountedFilesystem {
    type Data<'a> = CountedFs<'a>;
}

/// wasmtime-wasi's filesystem view of a store, and the call's [`OpenFiles`].
pub(crate) struct CountedFs<'a> {
    pub(crate) fs: WasiFilesystemCtxView<'a>,
    pub(crate) files: &'a mut OpenFiles,
}

type Fd = Resource<types::Descriptor>;

impl types::Host for CountedFs<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<types::ErrorCode> {
        types::Host::convert_error_code(&mut self.fs, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<types::ErrorCode>> {
        types::Host::filesystem_error_code(&mut self.fs, err)
    }
}

impl HostDescriptor for CountedFs<'_> {
    async fn open_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
        oflags: types::OpenFlags,
        flags: types::DescriptorFlags,
    ) -> FsResult<Fd> {
        let unit = self.files.take()?;
        let opened = self.fs.open_at(fd, path_flags, path, oflags, flags).await?;
        self.files.opened.insert(opened.rep(), unit);
        Ok(opened)
    }

    fn drop(&mut self, fd: Fd) -> wasmtime::Result<()> {
        let rep = fd.rep();
        HostDescriptor::drop(&mut self.fs, fd)?;
        self.files.opened.remove(&rep);
        Ok(())
    }

    async fn read_directory(&mut self, fd: Fd) -> FsResult<Resource<types::DirectoryEntryStream>> {
        // Listing opens the directory once more, for as long as it reads it.
        let _listing = self.files.take()?;
        self.fs.read_directory(fd).await
    }

    async fn advise(
        &mut self,
        fd: Fd,
        offset: types::Filesize,
        len: types::Filesize,
        advice: types::Advice,
    ) -> FsResult<()> {
        self.fs.advise(fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Fd) -> FsResult<()> {
        self.fs.sync_data(fd).await
    }

    async fn get_flags(&mut self, fd: Fd) -> FsResult<types::DescriptorFlags> {
        self.fs.get_flags(fd).await
    }

    async fn get_type(&mut self, fd: Fd) -> FsResult<types::DescriptorType> {
        self.fs.get_type(fd).await
    }

    async fn set_size(&mut self, fd: Fd, size: types::Filesize) -> FsResult<()> {
        self.fs.set_size(fd, size).await
    }

    async fn set_times(
        &mut self,
        fd: Fd,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.fs.set_times(fd, atim, mtim).await
    }

    async fn read(
        &mut self,
        fd: Fd,
        len: types::Filesize,
        offset: types::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        self.fs.read(fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Fd,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        self.fs.write(fd, buf, offset).await
    }

    async fn sync(&mut self, fd: Fd) -> FsResult<()> {
        self.fs.sync(fd).await
    }

    async fn create_directory_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        self.fs.create_directory_at(fd, path).await
    }

    async fn stat(&mut self, fd: Fd) -> FsResult<types::DescriptorStat> {
        self.fs.stat(fd).await
    }

    async fn stat_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::DescriptorStat> {
        self.fs.stat_at(fd, path_flags, path).await
    }

    async fn set_times_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.fs.set_times_at(fd, path_flags, path, atim, mtim).await
    }

    async fn link_at(
        &mut self,
        fd: Fd,
        old_path_flags: types::PathFlags,
        old_path: String,
        new_descriptor: Fd,
        new_path: String,
    ) -> FsResult<()> {
        self.fs
            .link_at(fd, old_path_flags, old_path, new_descriptor, new_path)
            .await
    }

    async fn readlink_at(&mut self, fd: Fd, path: String) -> FsResult<String> {
        self.fs.readlink_at(fd, path).await
    }

    async fn remove_directory_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        self.fs.remove_directory_at(fd, path).await
    }

    async fn rename_at(
        &mut self,
        fd: Fd,
        old_path: String,
        new_fd: Fd,
        new_path: String,
    ) -> FsResult<()> {
        self.fs.rename_at(fd, old_path, new_fd, new_path).await
    }

    async fn symlink_at(&mut self, fd: Fd, src_path: String, dest_path: String) -> FsResult<()> {
        self.fs.symlink_at(fd, src_path, dest_path).await
    }

    async fn unlink_file_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        self.fs.unlink_file_at(fd, path).await
    }

    fn read_via_stream(
        &mut self,
        fd: Fd,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynInputStream>> {
        self.fs.read_via_stream(fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Fd,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.fs.write_via_stream(fd, offset)
    }

    fn append_via_stream(&mut self, fd: Fd) -> FsResult<Resource<DynOutputStream>> {
        self.fs.append_via_stream(fd)
    }

    async fn is_same_object(&mut self, a: Fd, b: Fd) -> wasmtime::Result<bool> {
        self.fs.is_same_object(a, b).await
    }

    async fn metadata_hash(&mut self, fd: Fd) -> FsResult<types::MetadataHashValue> {
        self.fs.metadata_hash(fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        self.fs.metadata_hash_at(fd, path_flags, path).await
    }
}

impl HostDirectoryEntryStream for CountedFs<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<types::DirectoryEntryStream>,
    ) -> FsResult<Option<types::DirectoryEntry>> {
        self.fs.read_directory_entry(stream).await
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        HostDirectoryEntryStream::drop(&mut self.fs, stream)
    }
}
