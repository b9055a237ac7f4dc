//! The validated configuration: [`Config`], each plugin's [`PluginPolicy`] and the daemon's
//! [`ServerConfig`], as types and the lookups on them. Built from the raw file and the flags in
//! `load` ([`Config::load`] / [`Config::from_raw`]), where every value is checked once; the
//! sections' own files resolve their parts and may name these types, so the types do not name them
//! back beyond their fields.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use toolhost_gate::breaker::BreakerPolicy;
use toolhost_gate::gate::{InputLimits, PermissionConfig, Permissions};
use toolhost_gate::grants::{Grants, Limits, Nesting};

use super::{AuditOptions, EngineOptions, Overrides, PluginSource, PoolOptions, Sources};

/// What a plugin may do and how far it may go, fully resolved.
#[derive(Debug, Clone)]
pub struct PluginPolicy {
    /// Files, env, network and secrets.
    pub grants: Grants,
    /// Per-call sandbox limits.
    pub limits: Limits,
    /// Result text kept before truncation, in bytes.
    pub output_bytes: usize,
    /// Input size and depth bounds.
    pub input: InputLimits,
    /// How far the tool calls its calls make may go (with a `call-tools` grant).
    pub nesting: Nesting,
    /// Prefix added to each tool name.
    pub prefix: String,
    /// The global rules and the plugin's own, compiled, with its directories and `exclude`s.
    pub permissions: Permissions,
    /// Whether the plugin is skipped.
    pub disabled: bool,
    /// Whether its file may be missing at start (`arrives-later`): deployed while serving.
    pub arrives_later: bool,
    /// Where its component comes from, when not from the plugins folder.
    pub source: Option<PluginSource>,
    /// Whether its tools run as tasks.
    pub task: toolhost_gate::task::TaskSupport,
    /// The operator's word on single tools, by the name the plugin gives them.
    pub tools: BTreeMap<String, super::ToolOverride>,
    /// When its tools are suspended, unless a tool's override says otherwise ([`Self::breaker_for`]).
    pub breaker: BreakerPolicy,
}

impl PluginPolicy {
    /// The breaker policy of `tool`, by the name the plugin gives it (without the prefix): its own
    /// `[plugins.NAME.tools.TOOL.breaker]`, else the plugin's, else the global `[breaker]`.
    pub fn breaker_for(&self, tool: &str) -> &BreakerPolicy {
        self.tools
            .get(tool)
            .and_then(super::ToolOverride::breaker)
            .unwrap_or(&self.breaker)
    }
}

/// Daemon settings, resolved.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Streamable HTTP address.
    pub http: SocketAddr,
    /// Allowed origins besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// Allowed hosts besides loopback ones: names, and ranges of IP literals.
    pub allowed_hosts: Vec<crate::hosts::AllowedHost>,
    /// When not empty, the tools a listing names (`server.short-list`); the rest stay callable.
    pub short_list: Vec<toolhost_gate::gate::ToolPattern>,
    /// Bearer token required on HTTP, if set.
    pub token: Option<String>,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Longest time an HTTP request may take.
    pub request_timeout: Duration,
    /// Longest time an approval question may wait for the user's answer.
    pub approval_timeout: Duration,
    /// Longest time to send a request head (and an MCP body), or to stay idle between requests.
    pub read_timeout: Duration,
    /// HTTP connections open at once.
    pub max_connections: usize,
    /// Calls running at once.
    pub max_concurrent_calls: usize,
    /// Shutdown grace period.
    pub shutdown_grace: Duration,
    /// The key that seals approval states, shared by every daemon; `None`: a random one per start.
    pub state_key: Option<super::StateKey>,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where plugins are found.
    pub plugins_dir: PathBuf,
    /// The policy of a plugin that has no section of its own.
    pub default_policy: PluginPolicy,
    /// Per-plugin policies.
    pub plugins: BTreeMap<String, PluginPolicy>,
    /// Global mode and rules.
    pub permissions: PermissionConfig,
    /// The audit log file, unless disabled.
    pub audit_path: Option<PathBuf>,
    /// Audit writer options.
    pub audit: AuditOptions,
    /// Compile cache folder, unless disabled.
    pub cache_dir: Option<PathBuf>,
    /// Daemon settings.
    pub server: ServerConfig,
    /// The instance pool, unless `[engine] pooling = false`.
    pub pool: Option<PoolOptions>,
    /// `[engine] open-files`: the daemon-wide descriptor budget of calls, if set.
    pub open_files: Option<usize>,
    /// Registries, trust, the lockfile and the store, for plugins with a `source`.
    pub sources: Sources,
    /// OAuth bearer tokens for HTTP callers, when configured.
    pub auth: Option<super::AuthConfig>,
    /// Caller profiles (`[[callers]]`); empty means every authenticated caller gets the host's policy.
    pub callers: toolhost_gate::caller::Profiles,
    /// OpenTelemetry export.
    pub telemetry: super::TelemetryOptions,
    /// Where task records and results are kept.
    pub state: super::StateStore,
    /// How long tasks are kept, and how clients poll them.
    pub tasks: super::TaskOptions,
    /// The operator's console.
    pub console: super::ConsoleOptions,
    /// Where it was read from, for [`Config::reread`]; `None` when built from values.
    pub(super) origin: Option<Origin>,
}

impl Config {
    /// The engine settings: compile cache and instance pool.
    pub fn engine_options(&self) -> EngineOptions {
        EngineOptions {
            cache_dir: self.cache_dir.clone(),
            pool: self.pool,
            open_files: self.open_files,
        }
    }

    /// The policy for `plugin`: its own section, or the defaults (no grants).
    pub fn policy(&self, plugin: &str) -> &PluginPolicy {
        self.plugins.get(plugin).unwrap_or(&self.default_policy)
    }

    /// The breaker policy of `plugin`'s `tool` (the name the plugin gives it, without the
    /// prefix): [`PluginPolicy::breaker_for`].
    pub fn breaker_for(&self, plugin: &str, tool: &str) -> &BreakerPolicy {
        self.policy(plugin).breaker_for(tool)
    }
}

/// Where a config was read from, so that it can be read again the same way.
#[derive(Debug, Clone)]
pub(super) struct Origin {
    /// `--config`, when given; else `./toolhost.toml`, read when it exists.
    pub(super) file: Option<PathBuf>,
    /// The flags, applied again on every read.
    pub(super) overrides: Overrides,
    /// The file's tables as written (empty without a file).
    pub(super) written: toml::Table,
}
