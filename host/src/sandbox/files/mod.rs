//! The files and env capability: the directories and environment variables a plugin is granted,
//! and the one place a WASI context is built.
//!
//! Its phases ([`FilesAndEnv`] implements [`Capability`]):
//! - link once: WASI 0.2 io, clocks, random and cli, and `wasi:filesystem` (`types` through the
//!   guard, [`GuardedFs`], and `preopens`, which adds [`root`]: the root no grant covers, so a
//!   plugin reaching outside its grants is told which grant is missing); WASI 0.3 cli, clocks and
//!   random (0.3's filesystem is not linked: it would not pass the guard);
//! - validate once, at config load (`toolhost_config::config`): directories exist, are not
//!   toolhost's own files, `exclude` entries and env names are sound; a bad one is a config error;
//! - bind once per plugin, at load ([`FilesBinding`]): the granted dirs and env, and the secrets
//!   granted as env;
//! - prepare per call: the WASI context, from the binding alone. Deny by default: the builder
//!   starts empty (no inherited env, args, stdio or network) and gets exactly what the grants list,
//!   with the guest's stdout and stderr captured.
//!
//! [`guarded`] puts the call's path guard and the daemon's descriptor budget in front of every
//! filesystem operation.

mod guarded;
mod open;
mod pin;
mod root;
mod view;

use std::fs::File;
use std::sync::Arc;

use wasmtime::component::Linker;
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random};
use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiView};
use wasmtime_wasi_io::IoView;

pub(crate) use self::open::OpenFiles;
pub(crate) use self::view::{Files, GuardedFs, GuardedView};
use super::budget::{BudgetExhausted, FileBudget};
use super::capability::{CallInputs, Capability, CapabilityError, PluginSettings};
use super::secrets::Secrets;
use toolhost_gate::grants::DirGrant;

/// The store data's view of this capability: the WASI context (through [`WasiView`]) and the
/// guarded filesystem of the call.
pub(crate) trait FilesView: WasiView + IoView {
    /// `wasi:filesystem/types` for this store, behind the call's path guard.
    fn guarded_fs(&mut self) -> GuardedView<'_>;
}

/// The files and env capability, with the daemon-wide descriptor budget granted directories and
/// opened files count against.
pub(crate) struct FilesAndEnv {
    budget: Arc<FileBudget>,
    /// The root no grant covers ([`root`]); `None` if it could not be made (then a path outside
    /// the grants fails in the guest, unexplained, as it would without toolhost).
    root: Option<Arc<File>>,
}

impl FilesAndEnv {
    /// The capability, its descriptors counted against `budget`.
    pub(crate) fn new(budget: Arc<FileBudget>) -> Self {
        let root = root::open_root()
            .inspect_err(|e| {
                tracing::warn!("cannot make the directory that explains missing grants: {e}");
            })
            .ok();
        Self { budget, root }
    }
}

/// One plugin's granted directories and env, and its secrets (those granted as env are set).
pub(crate) struct FilesBinding {
    dirs: Vec<DirGrant>,
    env: Vec<(String, String)>,
    secrets: Arc<Secrets>,
}

impl FilesBinding {
    /// Whether the plugin has a directory to block on (its calls then run on a thread of their own).
    pub(crate) fn has_dirs(&self) -> bool {
        !self.dirs.is_empty()
    }
}

/// Why a call's files could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FilesError {
    /// The daemon-wide descriptor budget has no room for the granted directories.
    #[error(transparent)]
    Budget(#[from] BudgetExhausted),
    /// A granted directory could not be opened.
    #[error("cannot open granted directory '{path}': {reason}")]
    Grant {
        /// The host path.
        path: String,
        /// The OS error.
        reason: String,
    },
}

impl<S: FilesView + 'static> Capability<S> for FilesAndEnv {
    const NAME: &'static str = "files";
    type Bound = FilesBinding;
    /// The WASI context and the guarded filesystem's state.
    type PerCall = (WasiCtx, Files);

    /// Link WASI 0.2 io, clocks, random, cli, and `wasi:filesystem` (types through the guard, and
    /// preopens). Raw sockets are deliberately absent.
    fn link(l: &mut Linker<S>) -> wasmtime::Result<()> {
        wasmtime_wasi_io::add_to_linker_async(l)?;
        clocks::wall_clock::add_to_linker::<S, WasiClocks>(l, S::clocks)?;
        clocks::monotonic_clock::add_to_linker::<S, WasiClocks>(l, S::clocks)?;
        random::random::add_to_linker::<S, WasiRandom>(l, S::random)?;
        random::insecure::add_to_linker::<S, WasiRandom>(l, S::random)?;
        random::insecure_seed::add_to_linker::<S, WasiRandom>(l, S::random)?;
        cli::exit::add_to_linker::<S, WasiCli>(l, S::cli)?;
        cli::environment::add_to_linker::<S, WasiCli>(l, S::cli)?;
        cli::stdin::add_to_linker::<S, WasiCli>(l, S::cli)?;
        cli::stdout::add_to_linker::<S, WasiCli>(l, S::cli)?;
        cli::stderr::add_to_linker::<S, WasiCli>(l, S::cli)?;
        cli::terminal_input::add_to_linker::<S, WasiCli>(l, S::cli)?;
        cli::terminal_output::add_to_linker::<S, WasiCli>(l, S::cli)?;
        cli::terminal_stdin::add_to_linker::<S, WasiCli>(l, S::cli)?;
        cli::terminal_stdout::add_to_linker::<S, WasiCli>(l, S::cli)?;
        cli::terminal_stderr::add_to_linker::<S, WasiCli>(l, S::cli)?;
        filesystem::types::add_to_linker::<S, GuardedFs>(l, S::guarded_fs)?;
        filesystem::preopens::add_to_linker::<S, GuardedFs>(l, S::guarded_fs)?;
        Ok(())
    }

    /// WASI 0.3's cli, clocks and random beside 0.2's (their names differ by version): the same
    /// context, so the same env, captured stdout and stderr, and empty stdin. Not 0.3's
    /// filesystem, which would go around the guard: a plugin that imports it fails to load.
    fn link_concurrent(l: &mut Linker<S>) -> wasmtime::Result<()> {
        wasmtime_wasi::p3::cli::add_to_linker(l)?;
        wasmtime_wasi::p3::clocks::add_to_linker(l)?;
        wasmtime_wasi::p3::random::add_to_linker(l)?;
        Ok(())
    }

    fn bind(&self, plugin: &PluginSettings<'_>) -> Result<FilesBinding, CapabilityError> {
        Ok(FilesBinding {
            dirs: plugin.grants.dirs.clone(),
            env: plugin.grants.env.clone(),
            secrets: plugin.secrets.clone(),
        })
    }

    /// The WASI context and the guarded filesystem's state for one call: granted dirs (each holding
    /// a unit of the descriptor budget) and env, secrets granted as env, captured stdout and stderr,
    /// empty stdin, no args. On a call apart ([`CallInputs::apart`]), file operations block the
    /// thread that runs the guest instead of going to the blocking pool one by one.
    fn prepare(
        &self,
        bound: &FilesBinding,
        call: &CallInputs<'_>,
    ) -> Result<Self::PerCall, CapabilityError> {
        let fail = |e: FilesError| CapabilityError::new(<Self as Capability<S>>::NAME, e);
        let mut open = OpenFiles::new(self.budget.clone());
        // Each granted directory is opened for the call: count those before opening them.
        open.preopen(bound.dirs.len()).map_err(|e| fail(e.into()))?;
        let mut b = WasiCtxBuilder::new();
        b.stdout(call.stdout.clone()).stderr(call.stderr.clone());
        b.allow_blocking_current_thread(call.apart);
        b.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for (k, v) in &bound.env {
            b.env(k, v);
        }
        for (k, v) in bound.secrets.env() {
            b.env(k, v);
        }
        for dir in &bound.dirs {
            let perms = if dir.read_only {
                FsPerms::ReadOnly
            } else {
                FsPerms::ReadWrite
            };
            b.preopened_dir(&dir.host, &dir.guest, perms).map_err(|e| {
                fail(FilesError::Grant {
                    path: dir.host.display().to_string(),
                    reason: e.to_string(),
                })
            })?;
        }
        let root = if bound.dirs.iter().any(|d| root::at_root(&d.guest)) {
            None
        } else {
            self.root.clone()
        };
        let files = Files::new(call.io.files.clone(), open, call.apart, root);
        Ok((b.build(), files))
    }
}
