//! The files and env capability: the directories and environment variables a plugin is granted.
//!
//! Three phases, as in Spin's factors:
//! - link once: `wasi:filesystem/types` through the guard ([`GuardedFs`]) and `preopens`;
//! - validate once, at config load (`toolhost_policy::config`): directories exist, are not
//!   toolhost's own files, `exclude` entries and env names are sound; a bad one is a config error;
//! - prepare per call ([`prepare`]): the one place a WASI context is built, from the grants alone.
//!   Deny by default: the builder starts empty (no inherited env, args, stdio or network) and gets
//!   exactly what the grants list, with the guest's stdout and stderr captured.
//!
//! [`guarded`] puts the call's path guard and the daemon's descriptor budget in front of every
//! filesystem operation.

mod guarded;
mod open;
mod pin;
mod view;

use std::sync::Arc;

use wasmtime::component::Linker;
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

pub(crate) use self::open::OpenFiles;
pub(crate) use self::view::{Files, GuardedFs, GuardedView};
use super::SandboxError;
use super::output::CappedOutput;
use super::state::State;
use toolhost_policy::gate::PathGuard;
use toolhost_policy::grants::Grants;

/// Link `wasi:filesystem` (types through the guard, and preopens).
pub(crate) fn add_to_linker(l: &mut Linker<State>) -> wasmtime::Result<()> {
    filesystem::types::add_to_linker::<State, GuardedFs>(l, State::guarded_fs)?;
    filesystem::preopens::add_to_linker::<State, WasiFilesystem>(l, State::filesystem)?;
    Ok(())
}

/// The WASI context and the guarded filesystem's state for one call: granted dirs (each holding a
/// unit of the descriptor budget) and env, secrets granted as env, captured stdout and stderr, empty
/// stdin, no args. With `inline`, file operations block the thread that runs the guest instead of
/// going to the blocking pool one by one: only for a call on a thread of its own (`sandbox::thread`).
pub(crate) fn prepare(
    grants: &Grants,
    guard: Arc<PathGuard>,
    mut open: OpenFiles,
    inline: bool,
    stdout: &CappedOutput,
    stderr: &CappedOutput,
) -> Result<(WasiCtx, Files), String> {
    // Each granted directory is opened for the call: count those before opening them.
    open.preopen(grants.dirs.len()).map_err(|e| e.to_string())?;
    let mut b = WasiCtxBuilder::new();
    b.stdout(stdout.clone()).stderr(stderr.clone());
    b.allow_blocking_current_thread(inline);
    b.allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    for (k, v) in &grants.env {
        b.env(k, v);
    }
    for secret in &grants.secrets {
        if let Some(name) = &secret.env {
            b.env(name, secret.value.expose());
        }
    }
    for dir in &grants.dirs {
        let perms = if dir.read_only {
            FsPerms::ReadOnly
        } else {
            FsPerms::ReadWrite
        };
        b.preopened_dir(&dir.host, &dir.guest, perms).map_err(|e| {
            SandboxError::Grant {
                path: dir.host.display().to_string(),
                reason: e.to_string(),
            }
            .to_string()
        })?;
    }
    Ok((b.build(), Files::new(guard, open, inline)))
}
