//! The validated configuration: [`Config`], each plugin's [`PluginPolicy`] and the daemon's
//! [`ServerConfig`], built from the raw file and the flags by [`Config::load`] / [`Config::from_raw`].
//!
//! Every value is checked here, once (a bad one is a [`ConfigError`], exit 2), and relative paths are
//! resolved against the config file's folder. Nothing here parses TOML or flags, or starts anything.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::breaker::resolve_breaker;
use super::grants::{compile_permissions, resolve_grants};
use super::host_state::{self, GrantRef, OwnFiles, protected_paths};
use super::limits::{Resolved as ResolvedLimits, resolve_limits};
use super::reload::Origin;
use super::sources::{PluginSource, Sources, resolve_source, resolve_sources};
use super::{
    AuditOptions, ConfigError, EngineOptions, Overrides, PoolOptions, RawConfig, flags, invalid,
    raw, server,
};
use crate::breaker::BreakerPolicy;
use crate::gate::{InputLimits, PermissionConfig, Permissions};
use crate::grants::{Grants, Limits, Nesting};

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
    pub task: crate::task::TaskSupport,
    /// The operator's word on single tools, by the name the plugin gives them.
    pub tools: BTreeMap<String, super::ToolOverride>,
    /// When its tools are suspended, unless a tool's override says otherwise ([`Self::breaker_for`]).
    pub breaker: BreakerPolicy,
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
    pub short_list: Vec<crate::gate::ToolPattern>,
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
    pub callers: crate::caller::Profiles,
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
    /// Load `path` if given (an explicit path must exist), else `./toolhost.toml` if present, else defaults;
    /// then apply the overrides.
    pub fn load(path: Option<&Path>, overrides: &Overrides) -> Result<Self, ConfigError> {
        let default = Path::new("toolhost.toml");
        let file = match path {
            Some(p) => Some((p, "--config")),
            None => default.is_file().then_some((default, "./toolhost.toml")),
        };
        let ((raw, written), base) = match file {
            Some((p, _)) => (raw::read(p)?, parent(p)),
            None => (
                (RawConfig::default(), toml::Table::new()),
                PathBuf::from("."),
            ),
        };
        let mut config = Self::build(raw, &base, overrides, file)?;
        config.origin = Some(Origin {
            file: path.map(Path::to_path_buf),
            overrides: overrides.clone(),
            written,
        });
        Ok(config)
    }

    /// The config `file` would give if it held `text`, checked as [`Self::load`] checks it: what
    /// `toolhost grant` validates before it writes.
    pub fn load_as(file: &Path, text: &str, overrides: &Overrides) -> Result<Self, ConfigError> {
        let (raw, _) = raw::parse(file, text)?;
        Self::build(raw, &parent(file), overrides, Some((file, "--config")))
    }

    /// Validate a raw config whose relative paths are relative to `base`.
    pub fn from_raw(raw: RawConfig, base: &Path, o: &Overrides) -> Result<Self, ConfigError> {
        Self::build(raw, base, o, None)
    }

    /// [`Self::from_raw`], also keeping grants off `config_file`, the file `raw` was read from (with
    /// how it was chosen: `--config`, or found in the working directory).
    fn build(
        mut raw: RawConfig,
        base: &Path,
        o: &Overrides,
        config_file: Option<(&Path, &str)>,
    ) -> Result<Self, ConfigError> {
        // Grants from the file come first; the rest of each list came from `--dir` flags.
        let file_dirs: BTreeMap<String, usize> = raw
            .plugins
            .iter()
            .map(|(name, p)| (name.clone(), p.dirs.len()))
            .collect();
        flags::apply(&mut raw, o)?;
        // Flags are relative to the working directory, the file's values to the file's folder.
        let plugins_dir = match &o.plugins_dir {
            Some(p) => p.clone(),
            None => base.join(raw.plugins_dir.as_deref().unwrap_or(Path::new("plugins"))),
        };

        let defaults = resolve_limits(&raw.limits, None, "limits")?;
        let default_policy = PluginPolicy {
            grants: Grants::default(),
            limits: defaults.limits,
            output_bytes: defaults.output_bytes,
            input: defaults.input,
            nesting: defaults.nesting,
            prefix: String::new(),
            permissions: compile_permissions(
                &raw.permissions,
                None,
                &Grants::default(),
                Vec::new(),
                "permissions",
            )?,
            disabled: false,
            arrives_later: false,
            source: None,
            task: crate::task::TaskSupport::default_for(defaults.limits.timeout),
            tools: BTreeMap::new(),
            breaker: resolve_breaker(
                &raw.breaker,
                &BreakerPolicy::default(),
                defaults.limits.timeout,
                "breaker",
            )?,
        };
        let mut plugins = BTreeMap::new();
        for (name, p) in &raw.plugins {
            let key = format!("plugins.{name}");
            let ResolvedLimits {
                limits,
                output_bytes,
                input,
                nesting,
            } = resolve_limits(&p.limits, Some(&default_policy), &format!("{key}.limits"))?;
            let (grants, excludes) = resolve_grants(p, base, &key)?;
            let permissions = compile_permissions(
                &raw.permissions,
                p.permissions.as_ref(),
                &grants,
                excludes,
                &format!("{key}.permissions"),
            )?;
            let breaker = resolve_breaker(
                &p.breaker,
                &default_policy.breaker,
                limits.timeout,
                &format!("{key}.breaker"),
            )?;
            let prefix = p.prefix.clone().unwrap_or_default();
            if !prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return Err(invalid(
                    format!("{key}.prefix"),
                    "use only letters, digits, '_' and '-'",
                ));
            }
            plugins.insert(
                name.clone(),
                PluginPolicy {
                    grants,
                    limits,
                    output_bytes,
                    input,
                    nesting,
                    prefix,
                    permissions,
                    disabled: p.disabled,
                    arrives_later: p.arrives_later,
                    source: resolve_source(p.source.as_deref(), p.sha256.as_deref(), &key)?,
                    task: p
                        .task
                        .unwrap_or_else(|| crate::task::TaskSupport::default_for(limits.timeout)),
                    tools: super::tools::resolve_tools(&p.tools, &key, &breaker, limits.timeout)?,
                    breaker,
                },
            );
        }

        let audit_path = if raw.audit.disabled {
            None
        } else {
            Some(match (&o.audit_path, &raw.audit.path) {
                (Some(p), _) => p.clone(),
                (None, Some(p)) => base.join(p),
                (None, None) => base.join(".toolhost/audit.jsonl"),
            })
        };
        let cache_dir = (!raw.cache.disabled).then(|| {
            base.join(
                raw.cache
                    .dir
                    .as_deref()
                    .unwrap_or(Path::new(".toolhost/cache")),
            )
        });
        let sources = resolve_sources(&raw.registries, &raw.trust, base)?;
        let auth = raw
            .auth
            .as_ref()
            .map(super::auth::resolve_auth)
            .transpose()?;
        let callers = super::auth::resolve_callers(&raw.callers, base)?;
        let server = server::resolve_server(&raw.server, o, auth.is_some())?;
        let audit_dir = audit_path
            .as_deref()
            .and_then(Path::parent)
            .map_or_else(|| base.join(".toolhost"), Path::to_path_buf);
        let state = super::state::resolve_store(&raw.state, base, &audit_dir)?;
        let tasks = super::state::resolve_tasks(&raw.tasks)?;
        if matches!(state, super::StateStore::Postgres { .. }) && server.state_key.is_none() {
            return Err(invalid(
                "server.state-key-env",
                "daemons that share a PostgreSQL [state] must share the key that seals approval \
                 states: set server.state-key-env to a variable holding at least 32 random bytes",
            ));
        }
        if let Some(url) = &raw.telemetry.endpoint
            && !url.parse::<http::Uri>().is_ok_and(|u| {
                matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some()
            })
        {
            return Err(invalid(
                "telemetry.endpoint",
                format!(
                    "{url:?} is not an http:// or https:// URL (the OTLP/HTTP base, e.g. http://localhost:4318)"
                ),
            ));
        }
        if !callers.is_empty() && auth.is_none() && server.token.is_none() {
            return Err(invalid(
                "callers",
                "profiles match authenticated callers: configure [auth] (or server.token-env)",
            ));
        }
        super::auth::check_exchanges(&plugins, auth.as_ref())?;
        let pool = server::resolve_pool(&raw.engine, &server, &default_policy, &plugins)?;
        if raw.engine.open_files == Some(0) {
            return Err(invalid("engine.open-files", "must be greater than 0"));
        }
        let grants: Vec<GrantRef<'_>> = plugins
            .iter()
            .flat_map(|(name, p)| {
                let from_file = file_dirs.get(name).copied().unwrap_or(0);
                p.grants
                    .dirs
                    .iter()
                    .enumerate()
                    .map(move |(i, d)| GrantRef {
                        key: if i < from_file {
                            format!("plugins.{name}.dirs[{i}].host")
                        } else {
                            format!("--dir {name}={}", d.host.display())
                        },
                        host: &d.host,
                        read_only: d.read_only,
                    })
            })
            .collect();
        let protected = protected_paths(
            &raw,
            base,
            o,
            config_file,
            &OwnFiles {
                plugins_dir: &plugins_dir,
                audit_path: &audit_path,
                cache_dir: &cache_dir,
                sources: &sources,
                state: &state,
            },
        );
        host_state::refuse_grants_over(&grants, &protected)?;
        Ok(Self {
            plugins_dir,
            default_policy,
            plugins,
            permissions: raw.permissions,
            audit_path,
            audit: raw.audit.options,
            cache_dir,
            server,
            pool,
            open_files: raw.engine.open_files,
            sources,
            auth,
            callers,
            telemetry: raw.telemetry,
            state,
            tasks,
            console: raw.console,
            origin: None,
        })
    }

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

fn parent(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `text` as a config file in `.`: the config tests' one way to read a config.
    pub(in crate::config) fn parse(text: &str) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: "t".into(),
            message: e.to_string(),
        })?;
        Config::from_raw(raw, Path::new("."), &Overrides::default())
    }

    #[test]
    fn empty_config_grants_nothing() {
        let c = parse("").unwrap();
        let p = c.policy("anything");
        assert!(p.grants.dirs.is_empty() && p.grants.env.is_empty());
        assert_eq!(c.plugins_dir, Path::new("./plugins"));
    }

    #[test]
    fn plugin_limits_inherit_and_override_globals() {
        let c = parse(
            "[limits]\ntimeout-ms = 1000\nmemory-mb = 64\n[plugins.a.limits]\nmemory-mb = 8\n",
        )
        .unwrap();
        let a = c.policy("a");
        assert_eq!(a.limits.timeout, Duration::from_millis(1000));
        assert_eq!(a.limits.memory_bytes, 8 << 20);
        assert_eq!(c.policy("b").limits.memory_bytes, 64 << 20);
    }

    #[test]
    fn rejects_unknown_keys_with_position() {
        let e = parse("[limits]\ntimeout = 3\n").unwrap_err().to_string();
        assert!(e.contains("unknown field `timeout`"), "{e}");
    }

    #[test]
    fn rejects_missing_dir_and_bad_mode() {
        let e = parse("[plugins.fs]\ndirs = [{ host = \"/no/such/dir\" }]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("plugins.fs.dirs[0].host") && e.contains("not an existing directory"),
            "{e}"
        );
        let e = parse("[plugins.fs]\ndirs = [{ host = \".\", mode = \"rwx\" }]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("neither \"ro\" nor \"rw\""), "{e}");
    }

    #[test]
    fn refuses_a_grant_over_toolhosts_own_files_naming_where_it_came_from() {
        let e = parse("[plugins.fs]\ndirs = [{ host = \".\" }]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`plugins.fs.dirs[0].host`") && e.contains("covers the plugins folder"),
            "{e}"
        );
        let raw: RawConfig = toml::from_str("[cache]\ndisabled = true\n").unwrap();
        let flags = Overrides {
            dirs: vec!["fs=.".into()],
            plugins_dir: Some("/nonexistent/plugins".into()),
            ..Overrides::default()
        };
        let e = Config::from_raw(raw, Path::new("."), &flags)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`--dir fs=") && e.contains("covers the audit log"),
            "{e}"
        );
    }
}
