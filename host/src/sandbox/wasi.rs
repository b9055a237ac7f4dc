//! The only place where a plugin's grants become a WASI context. Deny by default: the builder starts
//! empty (no inherited env, args, stdio or network) and gets exactly what `Grants` lists.

use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

use super::SandboxError;
use super::output::CappedOutput;
use super::policy::Grants;

/// Build the WASI context for one call: granted dirs and env, capped stdout/stderr, empty stdin, no args.
pub(crate) fn build_ctx(
    grants: &Grants,
    stdout: &CappedOutput,
    stderr: &CappedOutput,
) -> Result<WasiCtx, SandboxError> {
    let mut b = WasiCtxBuilder::new();
    b.stdout(stdout.clone()).stderr(stderr.clone());
    b.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
    for (k, v) in &grants.env {
        b.env(k, v);
    }
    for dir in &grants.dirs {
        let perms = if dir.read_only {
            FsPerms::ReadOnly
        } else {
            FsPerms::ReadWrite
        };
        b.preopened_dir(&dir.host, &dir.guest, perms)
            .map_err(|e| SandboxError::Grant {
                path: dir.host.display().to_string(),
                reason: e.to_string(),
            })?;
    }
    Ok(b.build())
}
