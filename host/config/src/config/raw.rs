//! The file as written: serde structs for `toolhost.toml`, each field optional so that a missing
//! setting takes its default later, and the reading of the file into them.
//!
//! Nothing here checks a value or resolves a path: [`Config::from_raw`](super::Config::from_raw) does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toolhost_gate::gate::PermissionConfig;

use super::{AuditOptions, ConfigError, RawNetwork, RawRegistry, RawSecret, RawTrust};

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawConfig {
    /// Where plugins are found, relative to the config file.
    pub plugins_dir: Option<PathBuf>,
    /// Global limits, the default for every plugin.
    #[serde(default)]
    pub limits: RawLimits,
    /// Global permission mode and rules.
    #[serde(default)]
    pub permissions: PermissionConfig,
    /// The audit log.
    #[serde(default)]
    pub audit: RawAudit,
    /// The compile cache.
    #[serde(default)]
    pub cache: RawCache,
    /// The daemon.
    #[serde(default)]
    pub server: RawServer,
    /// How instances are allocated.
    #[serde(default)]
    pub engine: RawEngine,
    /// Per-plugin grants, limits and rules, keyed by plugin name (the file stem).
    #[serde(default)]
    pub plugins: BTreeMap<String, RawPlugin>,
    /// How to reach OCI registries, by `host[:port]`.
    #[serde(default)]
    pub registries: BTreeMap<String, RawRegistry>,
    /// Which signing keys are trusted for which registry or repository prefix.
    #[serde(default)]
    pub trust: BTreeMap<String, RawTrust>,
    /// OAuth 2.1 bearer tokens for HTTP callers.
    pub auth: Option<super::RawAuth>,
    /// Caller profiles, matched in order by token claims.
    #[serde(default)]
    pub callers: Vec<toolhost_gate::caller::RawProfile>,
    /// OpenTelemetry export.
    #[serde(default)]
    pub telemetry: super::TelemetryOptions,
    /// Where task records and results are kept.
    #[serde(default)]
    pub state: super::RawState,
    /// How long tasks are kept, and how clients poll them.
    #[serde(default)]
    pub tasks: super::RawTasks,
    /// When a failing tool is suspended: the default for every tool.
    #[serde(default)]
    pub breaker: super::RawBreaker,
    /// The operator's console.
    #[serde(default)]
    pub console: super::ConsoleOptions,
}

/// Limits as written; every field optional so that plugins inherit the global ones.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawLimits {
    /// Wall-clock deadline of one call.
    pub timeout_ms: Option<u64>,
    /// Fuel for one call.
    pub fuel: Option<u64>,
    /// Guest memory, in MiB.
    pub memory_mb: Option<u64>,
    /// Result text kept before truncation, in KiB.
    pub output_kb: Option<u64>,
    /// Guest stdout/stderr kept per call, in KiB.
    pub stdio_kb: Option<u64>,
    /// Largest accepted input, in KiB.
    pub max_input_kb: Option<u64>,
    /// Deepest accepted input nesting.
    pub max_input_depth: Option<usize>,
    /// Tool calls one call may make from inside the sandbox, its nested calls' own included.
    pub nested_calls: Option<u32>,
    /// How deep calls made from inside the sandbox may nest.
    pub nesting_depth: Option<u32>,
}

/// `[audit]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawAudit {
    /// The JSONL file; relative to the config file. Default `.toolhost/audit.jsonl`.
    pub path: Option<PathBuf>,
    /// Turn the log off.
    #[serde(default)]
    pub disabled: bool,
    /// Writer options.
    #[serde(flatten)]
    pub options: AuditOptions,
}

/// `[cache]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawCache {
    /// Where compiled components are kept. Default `.toolhost/cache`.
    pub dir: Option<PathBuf>,
    /// Compile every time.
    #[serde(default)]
    pub disabled: bool,
}

/// `[server]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawServer {
    /// Address for Streamable HTTP, e.g. "127.0.0.1:8750".
    pub http: Option<String>,
    /// Extra allowed `Origin` values for browsers; loopback origins are always allowed.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Extra allowed `Host` values, names or IP ranges (`10.0.0.0/8`); loopback hosts are always
    /// allowed.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// For hosts with many tools: `tools/list` names only the tools these names or globs match
    /// (`search_tools`, `run_script`, the few pinned ones); every tool stays callable and
    /// findable. Empty: the whole list.
    #[serde(default)]
    pub short_list: Vec<String>,
    /// Name of the environment variable holding the bearer token for HTTP.
    pub token_env: Option<String>,
    /// Largest request body, in KiB.
    pub max_body_kb: Option<u64>,
    /// Longest time one HTTP request may take, in ms.
    pub request_timeout_ms: Option<u64>,
    /// Longest time an approval question (an `ask` rule's elicitation) may wait for the user, in ms.
    pub approval_timeout_ms: Option<u64>,
    /// Longest time a client may take to send a request head (and an MCP request's body), and to
    /// keep an idle connection open, in ms.
    pub read_timeout_ms: Option<u64>,
    /// HTTP connections open at once; more wait to be accepted.
    pub max_connections: Option<usize>,
    /// Calls running at once; more are answered "busy".
    pub max_concurrent_calls: Option<usize>,
    /// How long shutdown waits for calls in flight, in ms.
    pub shutdown_grace_ms: Option<u64>,
    /// Name of the environment variable holding the key that seals approval states; the same on
    /// every daemon behind one load balancer.
    pub state_key_env: Option<String>,
}

/// `[engine]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawEngine {
    /// Reserve a pool of instance slots up front (the default), so that a call reuses a warm slot
    /// instead of mapping fresh memory; `false` allocates on demand.
    pub pooling: Option<bool>,
    /// Instances alive at once. Default: `server.max-concurrent-calls` plus room for plugin loads.
    pub instances: Option<u32>,
    /// Linear memory per instance slot, in MiB. Default: the largest `memory-mb` limit in force.
    pub memory_mb: Option<u64>,
    /// Descriptors all calls together may hold (files and directories plugins open, outgoing
    /// connections). Default: derived from the process's open-files limit; a setting above that is
    /// lowered to it.
    pub open_files: Option<usize>,
}

/// `[plugins.NAME]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawPlugin {
    /// Where the component comes from instead of the plugins folder: `oci://…` or `https://…`.
    pub source: Option<String>,
    /// The digest an `https://` source must have.
    pub sha256: Option<String>,
    /// Directories to preopen.
    #[serde(default)]
    pub dirs: Vec<RawDir>,
    /// Environment variables with literal values.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of daemon environment variables passed through.
    #[serde(default)]
    pub env_from_host: Vec<String>,
    /// Prefix for every tool name of this plugin, to resolve name clashes.
    pub prefix: Option<String>,
    /// Limits overriding the global ones.
    #[serde(default)]
    pub limits: RawLimits,
    /// Mode and rules for this plugin's tools (combined with the global ones; deny always wins).
    pub permissions: Option<PermissionConfig>,
    /// Skip this plugin.
    #[serde(default)]
    pub disabled: bool,
    /// Its file is deployed into the plugins folder while the daemon serves: a section naming no
    /// file is otherwise refused at start, as a likely typo.
    #[serde(default)]
    pub arrives_later: bool,
    /// Outgoing HTTP by allowlist; without it the plugin has no network at all.
    pub network: Option<RawNetwork>,
    /// Tools of this host the plugin may call (names or globs), through the whole pipeline as
    /// the caller of the call that runs it; without it, none.
    #[serde(default)]
    pub call_tools: Vec<String>,
    /// Named secrets, given as env vars or as headers the host adds to requests.
    #[serde(default)]
    pub secrets: BTreeMap<String, RawSecret>,
    /// Whether its tools run as tasks; default from its timeout.
    pub task: Option<toolhost_gate::task::TaskSupport>,
    /// When its failing tools are suspended, over the global `[breaker]`.
    #[serde(default)]
    pub breaker: super::RawBreaker,
    /// Per tool (by the name the plugin gives it): description, title, hints, permission subject,
    /// breaker.
    #[serde(default)]
    pub tools: BTreeMap<String, super::RawToolOverride>,
}

/// One directory grant as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawDir {
    /// Host path, relative to the config file.
    pub host: PathBuf,
    /// Guest path. Default ".", so relative guest paths resolve inside this directory.
    pub guest: Option<String>,
    /// "ro" (default) or "rw".
    pub mode: Option<String>,
    /// Paths inside the directory (globs, relative to it) that the plugin may never touch: the
    /// sandbox's filesystem refuses them, and everything under them, on every access.
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// Read and parse the file at `path`: its values, and its tables as written (to tell later what an
/// edit changed).
pub(super) fn read(path: &Path) -> Result<(RawConfig, toml::Table), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse(path, &text)
}

/// Parse `text`, the contents of the file at `path`.
pub(super) fn parse(path: &Path, text: &str) -> Result<(RawConfig, toml::Table), ConfigError> {
    let parse_error = |e: toml::de::Error| ConfigError::Parse {
        path: path.display().to_string(),
        message: e.to_string().trim_end().to_string(),
    };
    // Typed first: its errors name the key, line and column.
    let raw = toml::from_str(text).map_err(parse_error)?;
    Ok((raw, toml::from_str(text).map_err(parse_error)?))
}
