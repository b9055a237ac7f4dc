//! [`Config::load`] and [`Config::from_raw`]: the raw file and the flags into a validated
//! [`Config`], every value checked here, once (a bad one is a [`ConfigError`], exit 2), relative
//! paths resolved against the config file's folder. Each section's own file resolves its part;
//! this one calls them in order and checks what spans sections. Nothing here starts anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolhost_gate::breaker::BreakerPolicy;
use toolhost_gate::grants::Grants;

use super::auth::AuthConfig;
use super::breaker::resolve_breaker;
use super::grants::{compile_permissions, resolve_grants};
use super::host_state::{self, GrantRef, OwnFiles, protected_paths};
use super::limits::{Resolved as ResolvedLimits, resolve_limits};
use super::resolved::Origin;
use super::sources::{resolve_source, resolve_sources};
use super::{Config, ConfigError, Overrides, PluginPolicy, RawConfig, flags, invalid, raw, server};

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
            task: toolhost_gate::task::TaskSupport::default_for(defaults.limits.timeout),
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
                    task: p.task.unwrap_or_else(|| {
                        toolhost_gate::task::TaskSupport::default_for(limits.timeout)
                    }),
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
        check_exchanges(&plugins, auth.as_ref())?;
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
}

/// A secret that exchanges the caller's token needs somewhere to exchange it.
fn check_exchanges(
    plugins: &BTreeMap<String, PluginPolicy>,
    auth: Option<&AuthConfig>,
) -> Result<(), ConfigError> {
    if auth.is_some_and(|a| a.token_exchange.is_some()) {
        return Ok(());
    }
    for (name, p) in plugins {
        for s in &p.grants.caller_secrets {
            if matches!(s.source, toolhost_gate::network::CallerSource::Exchange(_)) {
                return Err(invalid(
                    format!("plugins.{name}.secrets.{}.exchange", s.name),
                    "exchanging the caller's token needs [auth.token-exchange] \
                     (url, client-id, client-secret-env)",
                ));
            }
        }
    }
    Ok(())
}

fn parent(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
pub(super) mod tests;
