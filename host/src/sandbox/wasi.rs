//! The only place where a plugin's grants become a WASI context. Deny by default: the builder starts
//! empty (no inherited env, args, stdio or network) and gets exactly what `Grants` lists. The wasi:http
//! side (context and send-request hooks) is built here too, from the same grants.

use std::sync::Arc;

use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};
use wasmtime_wasi_http::WasiHttpCtx;

use super::SandboxError;
use super::budget::FileBudget;
use super::network::NetworkHooks;
use super::output::CappedOutput;
use toolhost_policy::grants::Grants;

/// Build the WASI context for one call: granted dirs and env, capped stdout/stderr, empty stdin, no args.
pub(crate) fn build_ctx(
    grants: &Grants,
    stdout: &CappedOutput,
    stderr: &CappedOutput,
) -> Result<WasiCtx, SandboxError> {
    let mut b = WasiCtxBuilder::new();
    b.stdout(stdout.clone()).stderr(stderr.clone());
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
        b.preopened_dir(&dir.host, &dir.guest, perms)
            .map_err(|e| SandboxError::Grant {
                path: dir.host.display().to_string(),
                reason: e.to_string(),
            })?;
    }
    Ok(b.build())
}

/// The wasi:http context and send-request hooks for one call: the network grant (or none, which refuses
/// every request, naming the plugin) and the secret headers.
pub(crate) fn build_http(
    plugin: &str,
    grants: &Grants,
    budget: &Arc<FileBudget>,
) -> (WasiHttpCtx, NetworkHooks) {
    let hooks = NetworkHooks::new(plugin, grants.network.as_ref(), &grants.secrets)
        .with_budget(budget.clone());
    (WasiHttpCtx::new(), hooks)
}
