//! Keeps toolhost's own files out of every plugin's reach: a directory grant may not cover the compile
//! cache (native code the host runs, and the key that authenticates it), the audit log, the config file,
//! a secrets file or the plugins folder (hot reload loads what appears there), nor lie inside the
//! compile cache. Checked once, at start, so that a bad grant stops the daemon (exit 2) instead of
//! handing a plugin the host's state.
//!
//! Paths are compared canonicalised (symlinks resolved, so an alias is caught); one that does not exist
//! yet (a cache or log created later) is judged by its nearest existing ancestor plus the rest. A
//! read-only grant inside the plugins folder is allowed (the demo grants `plugins/examples`): it can
//! neither add nor change a plugin; a read-write one is refused.

use std::path::{Component, Path, PathBuf};

use super::{ConfigError, Overrides, RawConfig, Sources, invalid};

/// One of toolhost's own files or folders, and the setting that names it.
pub(super) struct Protected {
    /// The setting, e.g. `cache.dir`.
    pub(super) setting: String,
    /// As configured (absolute or relative to the working directory).
    pub(super) path: PathBuf,
    /// What it is, for the message.
    pub(super) kind: Kind,
}

/// What a protected path holds, which decides how near a grant may come.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// The compile cache folder: no grant may cover it or lie inside it.
    Cache,
    /// The audit log file.
    Audit,
    /// The config file.
    Config,
    /// A file a secret is read from.
    Secret,
    /// The plugins folder: no grant may cover it, nor write inside it.
    Plugins,
    /// The store of pulled plugins: no grant may cover it or lie inside it.
    Store,
    /// The lockfile.
    Lock,
    /// A trusted signing key.
    Key,
    /// The embedded state database (task records and results).
    State,
    /// The CA certificate the PostgreSQL state store is checked against.
    StateCa,
}

impl Kind {
    fn what(self) -> &'static str {
        match self {
            Self::Cache => "the compile cache",
            Self::Audit => "the audit log",
            Self::Config => "the config file",
            Self::Secret => "a secrets file",
            Self::Plugins => "the plugins folder",
            Self::Store => "the plugin store",
            Self::Lock => "the lockfile",
            Self::Key => "a trusted signing key",
            Self::State => "the state database",
            Self::StateCa => "the state store's CA certificate",
        }
    }

    fn risk(self) -> &'static str {
        match self {
            Self::Cache => {
                "replace compiled code the host runs, or read the key that authenticates it"
            }
            Self::Audit => "rewrite or erase the audit log",
            Self::Config => "read or change its own policy",
            Self::Secret => "read a secret",
            Self::Plugins => "add or replace plugins, which hot reload loads with their grants",
            Self::Store => "read or fill the store pulled plugins load from",
            Self::Lock => "repin the digests pulled plugins load at",
            Self::Key => "replace the key that decides which plugins are trusted",
            Self::State => "read other callers' task results, or forge them",
            Self::StateCa => "make toolhost trust another database server",
        }
    }
}

/// A directory grant and the setting it came from (`plugins.fs.dirs[0].host`, or `--dir`).
pub(super) struct GrantRef<'a> {
    /// The setting to name in the error.
    pub(super) key: String,
    /// The granted folder.
    pub(super) host: &'a Path,
    /// Whether the grant refuses every write.
    pub(super) read_only: bool,
}

/// Refuse the first grant that covers a protected path (or lies inside the cache, or writes inside
/// the plugins folder), naming both settings.
pub(super) fn refuse_grants_over(
    grants: &[GrantRef<'_>],
    protected: &[Protected],
) -> Result<(), ConfigError> {
    let protected: Vec<(&Protected, PathBuf)> =
        protected.iter().map(|p| (p, canonical(&p.path))).collect();
    for grant in grants {
        let granted = canonical(grant.host);
        for (p, path) in &protected {
            let covers = path.starts_with(&granted);
            let inside = granted.starts_with(path)
                && (matches!(p.kind, Kind::Cache | Kind::Store)
                    || (p.kind == Kind::Plugins && !grant.read_only));
            if covers || inside {
                let relation = if covers { "covers" } else { "lies inside" };
                return Err(invalid(
                    &grant.key,
                    format!(
                        "{} {relation} {} ({}, set by `{}`): a plugin could {}; grant a folder that \
                         holds none of toolhost's own files",
                        granted.display(),
                        p.kind.what(),
                        path.display(),
                        p.setting,
                        p.kind.risk()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Where the resolved config puts toolhost's own files.
#[derive(Clone, Copy)]
pub(super) struct OwnFiles<'a> {
    /// The plugins folder.
    pub(super) plugins_dir: &'a Path,
    /// The audit log, unless disabled.
    pub(super) audit_path: &'a Option<PathBuf>,
    /// The compile cache, unless disabled.
    pub(super) cache_dir: &'a Option<PathBuf>,
    /// The store, the lockfile.
    pub(super) sources: &'a Sources,
    /// Where durable state is kept.
    pub(super) state: &'a super::StateStore,
}

/// toolhost's own files, which no grant may reach, with the settings that name them.
pub(super) fn protected_paths(
    raw: &RawConfig,
    base: &Path,
    o: &Overrides,
    config_file: Option<(&Path, &str)>,
    own: &OwnFiles<'_>,
) -> Vec<Protected> {
    let OwnFiles {
        plugins_dir,
        audit_path,
        cache_dir,
        sources,
        state,
    } = *own;
    let entry = |setting: &str, path: &Path, kind| Protected {
        setting: setting.to_string(),
        path: path.to_path_buf(),
        kind,
    };
    let mut out = vec![entry(
        if o.plugins_dir.is_some() {
            "--plugins"
        } else {
            "plugins-dir"
        },
        plugins_dir,
        Kind::Plugins,
    )];
    if let Some(p) = cache_dir {
        out.push(entry("cache.dir", p, Kind::Cache));
    }
    if let Some(p) = audit_path {
        let setting = if o.audit_path.is_some() {
            "--audit"
        } else {
            "audit.path"
        };
        out.push(entry(setting, p, Kind::Audit));
    }
    if let Some((p, setting)) = config_file {
        out.push(entry(setting, p, Kind::Config));
    }
    match state {
        super::StateStore::Embedded(p) => out.push(entry("state.path", p, Kind::State)),
        super::StateStore::Postgres {
            ca_file: Some(p), ..
        } => out.push(entry("state.ca-file", p, Kind::StateCa)),
        super::StateStore::Postgres { .. } => {}
    }
    out.push(entry(
        "(beside the config file)",
        &sources.store_dir,
        Kind::Store,
    ));
    out.push(entry(
        "(beside the config file)",
        &sources.lock_path,
        Kind::Lock,
    ));
    for (prefix, t) in &raw.trust {
        for (i, key) in t.keys.iter().enumerate() {
            let setting = format!("trust.{prefix:?}.keys[{i}]");
            out.push(entry(&setting, &base.join(key), Kind::Key));
        }
    }
    for (name, plugin) in &raw.plugins {
        for (secret, s) in &plugin.secrets {
            if let Some(file) = &s.from_file {
                let setting = format!("plugins.{name}.secrets.{secret}.from-file");
                out.push(entry(&setting, &base.join(file), Kind::Secret));
            }
        }
    }
    for (i, profile) in raw.callers.iter().enumerate() {
        for (secret, s) in &profile.secrets {
            if let Some(file) = &s.from_file {
                let setting = format!("callers[{i}].secrets.{secret}.from-file");
                out.push(entry(&setting, &base.join(file), Kind::Secret));
            }
        }
    }
    out
}

/// `path` absolute, with symlinks resolved as far as it exists, and the rest appended as written.
fn canonical(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let parts: Vec<Component<'_>> = absolute.components().collect();
    for existing in (1..=parts.len()).rev() {
        let head: PathBuf = parts[..existing].iter().collect();
        let Ok(mut resolved) = head.canonicalize() else {
            continue;
        };
        for part in &parts[existing..] {
            match part {
                Component::ParentDir => {
                    resolved.pop();
                }
                Component::Normal(name) => resolved.push(name),
                _ => {}
            }
        }
        return resolved;
    }
    absolute
}

#[cfg(test)]
mod tests;
