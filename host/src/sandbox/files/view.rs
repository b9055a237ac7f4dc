//! The guarded filesystem's per-call state and the view wasmtime hands each host call: the call's
//! [`PathGuard`], its descriptor budget ([`OpenFiles`]), and the directory listings in progress,
//! whose entries are judged one by one so that denied ones are left out.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;

use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, ErrorCode, HostDescriptor, HostDirectoryEntryStream,
};
use wasmtime_wasi::p2::{FsError, FsResult};
use wasmtime_wasi::{ResourceTable, WasiCtx};

use super::open::OpenFiles;
use toolhost_gate::gate::{PathGuard, Refusal};

/// Per-call state of the files capability.
pub(crate) struct Files {
    pub(super) guard: Arc<PathGuard>,
    /// Open directory listings: the host directory each lists, to judge its entries.
    pub(super) listings: HashMap<u32, PathBuf>,
    pub(super) open: OpenFiles,
    /// Whether file operations block the guest's thread (descriptors opened here do the same).
    pub(super) inline: bool,
    /// The root no grant covers ([`super::root`]), unless a grant is mounted at the root.
    pub(super) root: Option<Arc<File>>,
    /// The table entries the guest holds for the root.
    pub(super) roots: Vec<u32>,
    /// Why file operations were refused, for the model: paths no grant covers (the first few).
    pub(super) notes: Vec<String>,
}

impl Files {
    pub(crate) fn new(
        guard: Arc<PathGuard>,
        open: OpenFiles,
        inline: bool,
        root: Option<Arc<File>>,
    ) -> Self {
        Self {
            guard,
            listings: HashMap::new(),
            open,
            inline,
            root,
            roots: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Why this call's file operations were refused so far (paths no grant covers), taken.
    pub(crate) fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}

/// [`HasData`] for linking `wasi:filesystem/types` through the guard.
pub(crate) struct GuardedFs;

impl HasData for GuardedFs {
    type Data<'a> = GuardedView<'a>;
}

/// The guarded filesystem, borrowed from a store's state for one host call.
pub(crate) struct GuardedView<'a> {
    pub(super) fs: WasiFilesystemCtxView<'a>,
    pub(super) files: &'a mut Files,
    /// The plugin's name, for the log line of a refusal.
    pub(super) plugin: &'a str,
}

impl<'a> GuardedView<'a> {
    pub(crate) fn new(
        wasi: &'a mut WasiCtx,
        table: &'a mut ResourceTable,
        files: &'a mut Files,
        plugin: &'a str,
    ) -> Self {
        Self {
            fs: WasiFilesystemCtxView {
                ctx: wasi.filesystem(),
                table,
            },
            files,
            plugin,
        }
    }

    pub(super) fn open(&self) -> bool {
        self.files.guard.is_open()
    }

    /// Refuse to open a FIFO, a socket or a device: opening a FIFO blocks until a writer comes (and
    /// the call's thread with it, [`crate::sandbox`]'s `thread` module), and the others are no
    /// plugin's business. What cannot be looked at (missing, to be created) is left to the open.
    ///
    /// The look is cap-std's, confined to the grant (open the path beneath it, `fstat`, close). A
    /// plain `statx` along the path would be one system call instead of three, but the kernel would
    /// then follow, for the plugin, links it planted out of its grant: a timing oracle on what lies
    /// outside, and a way to trigger automounts.
    pub(super) async fn only_files_and_dirs(
        &mut self,
        fd: &Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: &str,
    ) -> FsResult<()> {
        use types::DescriptorType as Type;
        let again = Resource::new_borrow(fd.rep());
        let Ok(stat) = self.fs.stat_at(again, path_flags, path.to_owned()).await else {
            return Ok(());
        };
        let what = match stat.type_ {
            Type::RegularFile | Type::Directory | Type::SymbolicLink => return Ok(()),
            Type::Fifo => "a FIFO (named pipe)",
            Type::Socket => "a socket",
            Type::CharacterDevice | Type::BlockDevice => "a device",
            Type::Unknown => "of no known type",
        };
        Err(self.refuse(Refusal {
            path: path.to_owned(),
            why: format!("its type: it is {what}, and plugins open only files and directories"),
        }))
    }

    pub(super) fn refuse(&self, refusal: Refusal) -> FsError {
        tracing::info!(plugin = %self.plugin, "filesystem access refused: {refusal}");
        ErrorCode::Access.into()
    }
}

/// Where an open descriptor is on the host, as the kernel sees it.
pub(super) fn host_path_of(table: &ResourceTable, fd: &Resource<Descriptor>) -> Option<PathBuf> {
    let raw = match table.get(fd).ok()? {
        Descriptor::Dir(d) => d.dir.as_raw_fd(),
        Descriptor::File(f) => f.file.as_raw_fd(),
    };
    std::fs::read_link(format!("/proc/self/fd/{raw}")).ok()
}

impl types::Host for GuardedView<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        types::Host::convert_error_code(&mut self.fs, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        types::Host::filesystem_error_code(&mut self.fs, err)
    }
}

impl HostDirectoryEntryStream for GuardedView<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<types::DirectoryEntryStream>,
    ) -> FsResult<Option<types::DirectoryEntry>> {
        let Some(dir) = self.files.listings.get(&stream.rep()).cloned() else {
            return self.fs.read_directory_entry(stream).await;
        };
        loop {
            let borrowed = Resource::new_borrow(stream.rep());
            let Some(entry) = self.fs.read_directory_entry(borrowed).await? else {
                return Ok(None);
            };
            if self.files.guard.check_at(&dir, &entry.name).is_ok() {
                return Ok(Some(entry));
            }
        }
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.files.listings.remove(&stream.rep());
        HostDirectoryEntryStream::drop(&mut self.fs, stream)
    }
}
