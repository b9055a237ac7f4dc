//! Command-line overrides (`--plugins`, `--mode`, `--dir`, `--env`, `--audit`, `--http`) and their
//! parsing into the raw file's values, before validation.
//!
//! Flags only add to or replace what the file says; checking the result is
//! [`Config::from_raw`](super::Config::from_raw)'s job, so a bad flag fails there like a bad setting.

use std::path::PathBuf;

use toolhost_gate::gate::Mode;

use super::{ConfigError, RawConfig, RawDir, invalid};

/// Command-line overrides, applied after the file.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--plugins DIR`.
    pub plugins_dir: Option<PathBuf>,
    /// `--mode MODE`: the global permission mode.
    pub mode: Option<Mode>,
    /// `--dir PLUGIN=PATH[:ro|:rw]`, repeatable.
    pub dirs: Vec<String>,
    /// `--env PLUGIN=NAME[=VALUE]`, repeatable.
    pub env: Vec<String>,
    /// `--audit FILE`.
    pub audit_path: Option<PathBuf>,
    /// `--http ADDR`.
    pub http: Option<String>,
}

/// Apply `--dir`, `--env` and `--mode` to `raw`: directory grants and env vars are appended to each
/// plugin's section (creating it), the mode replaces the global one.
pub(super) fn apply(raw: &mut RawConfig, o: &Overrides) -> Result<(), ConfigError> {
    for spec in &o.dirs {
        let (plugin, dir) = parse_dir_flag(spec)?;
        raw.plugins.entry(plugin).or_default().dirs.push(dir);
    }
    for spec in &o.env {
        let (plugin, rest) = spec.split_once('=').ok_or_else(|| {
            invalid(
                "--env",
                format!("expected PLUGIN=NAME[=VALUE], got {spec:?}"),
            )
        })?;
        let entry = raw.plugins.entry(plugin.to_string()).or_default();
        match rest.split_once('=') {
            Some((k, v)) => {
                entry.env.insert(k.to_string(), v.to_string());
            }
            None => entry.env_from_host.push(rest.to_string()),
        }
    }
    if let Some(mode) = o.mode {
        raw.permissions.mode = Some(mode);
    }
    Ok(())
}

/// `PLUGIN=PATH[:ro|:rw]`; the guest sees PATH at ".".
fn parse_dir_flag(spec: &str) -> Result<(String, RawDir), ConfigError> {
    let (plugin, rest) = spec
        .split_once('=')
        .filter(|(p, r)| !p.is_empty() && !r.is_empty())
        .ok_or_else(|| {
            invalid(
                "--dir",
                format!("expected PLUGIN=PATH[:ro|:rw], got {spec:?}"),
            )
        })?;
    let (path, mode) = match rest.rsplit_once(':') {
        Some((p, m @ ("ro" | "rw"))) => (p, Some(m.to_string())),
        _ => (rest, None),
    };
    // Paths given on the command line are relative to the working directory: make them absolute.
    let host = std::path::absolute(path).map_err(|e| invalid("--dir", e.to_string()))?;
    Ok((
        plugin.to_string(),
        RawDir {
            host,
            guest: None,
            mode,
            exclude: Vec::new(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_flag_parses_mode() {
        let (p, d) = parse_dir_flag("fs=/tmp:rw").unwrap();
        assert_eq!((p.as_str(), d.mode.as_deref()), ("fs", Some("rw")));
        assert!(parse_dir_flag("fs").is_err());
    }
}
