//! What a plugin is granted and how far it may go: plain data, filled in by
//! the operator's configuration (`toolhost_config::config`), read by the sandbox.

use std::path::PathBuf;
use std::time::Duration;

use crate::gate::ToolPattern;
use crate::network::{CallerSecret, NetworkGrant, SecretGrant};

/// Capabilities granted to one plugin. The default grants nothing: no files, no env, no network, no secrets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grants {
    /// Host directories preopened for the guest.
    pub dirs: Vec<DirGrant>,
    /// Environment variables the guest sees, with their values.
    pub env: Vec<(String, String)>,
    /// Outgoing HTTP by allowlist; `None` means no network at all (not even `wasi:http` linked).
    pub network: Option<NetworkGrant>,
    /// Named secrets, as env vars and/or headers the host adds; redacted from everything the guest returns.
    pub secrets: Vec<SecretGrant>,
    /// Headers whose values each call's caller brings (its profile's secret, or an exchanged
    /// token); added by the host like secret headers, redacted the same way.
    pub caller_secrets: Vec<CallerSecret>,
    /// Other tools of the same host the plugin may call (`call-tools`), by name or glob; empty:
    /// none. A nested call still runs the whole pipeline as the caller of the call that made it.
    pub calls: Vec<ToolPattern>,
}

/// One preopened directory.
#[derive(Debug, Clone, PartialEq)]
pub struct DirGrant {
    /// The directory on the host (absolute or relative to the daemon's working directory).
    pub host: PathBuf,
    /// Where the guest sees it; "." makes relative guest paths resolve inside it.
    pub guest: String,
    /// Read-only grants refuse every write, create, rename, link and truncate.
    pub read_only: bool,
    /// Globs relative to the directory that the guest may never touch (see `config::RawDir::exclude`).
    pub exclude: Vec<String>,
}

/// How far one call may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock deadline of the whole call, host calls included.
    pub timeout: Duration,
    /// Fuel (roughly, wasm instructions) for one call.
    pub fuel: u64,
    /// Linear memory the guest may hold, in bytes, summed over its memories.
    pub memory_bytes: usize,
    /// Guest stdout and stderr kept per call, each; the rest is dropped and counted.
    pub stdio_bytes: usize,
}

/// Lower bounds a caller's profile puts on one call's limits; never raises them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    /// At most this long.
    pub timeout: Option<Duration>,
    /// At most this much fuel.
    pub fuel: Option<u64>,
    /// At most this much guest memory, in bytes.
    pub memory_bytes: Option<usize>,
}

impl Limits {
    /// These limits, lowered to `caps` where they are lower.
    pub fn capped(mut self, caps: Caps) -> Self {
        if let Some(t) = caps.timeout {
            self.timeout = self.timeout.min(t);
        }
        if let Some(f) = caps.fuel {
            self.fuel = self.fuel.min(f);
        }
        if let Some(m) = caps.memory_bytes {
            self.memory_bytes = self.memory_bytes.min(m);
        }
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            fuel: 50_000_000_000,
            memory_bytes: 256 << 20,
            stdio_bytes: 64 << 10,
        }
    }
}

/// How far tool calls made from inside the sandbox may go (`[limits] nested-calls`,
/// `nesting-depth`). The tree of calls under one call from a front end shares its root's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nesting {
    /// Tool calls the whole tree may make, nested calls' own included.
    pub calls: u32,
    /// How deep the tree may grow: 1 lets a call make calls, 2 lets those make calls too.
    pub depth: u32,
}

impl Default for Nesting {
    fn default() -> Self {
        Self {
            calls: 64,
            depth: 2,
        }
    }
}
