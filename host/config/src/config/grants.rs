//! Directory, env and secret grants: `[plugins.NAME] dirs`, `env`, `env-from-host`, `network` and
//! `secrets`, and `call-tools` (the `--dir` flag adds to `dirs`), checked once at load (a bad one is a config error,
//! exit 2) and turned into the sandbox's plain [`Grants`].

use std::path::Path;

use toolhost_gate::gate::{Denial, Mounts, PermissionConfig, Permissions, ToolPattern, guest_root};
use toolhost_gate::grants::{DirGrant, Grants};

use super::{ConfigError, RawPlugin, invalid, network};

/// The grants of one plugin section (`key` names it in errors), relative paths against `base`;
/// with the paths its directories' `exclude` entries deny, compiled here, once.
pub(super) fn resolve_grants(
    p: &RawPlugin,
    base: &Path,
    key: &str,
) -> Result<(Grants, Vec<Denial>), ConfigError> {
    let mut grants = Grants::default();
    let mut excludes = Vec::new();
    for (i, d) in p.dirs.iter().enumerate() {
        let k = format!("{key}.dirs[{i}]");
        let host = base.join(&d.host);
        if !host.is_dir() {
            return Err(invalid(
                format!("{k}.host"),
                format!("{} is not an existing directory", host.display()),
            ));
        }
        let read_only = match d.mode.as_deref() {
            None | Some("ro") => true,
            Some("rw") => false,
            Some(other) => {
                return Err(invalid(
                    format!("{k}.mode"),
                    format!("{other:?} is neither \"ro\" nor \"rw\""),
                ));
            }
        };
        let guest = d.guest.clone().unwrap_or_else(|| ".".into());
        if guest.is_empty() || guest.contains('\0') {
            return Err(invalid(format!("{k}.guest"), "must be a non-empty path"));
        }
        if grants.dirs.iter().any(|g: &DirGrant| g.guest == guest) {
            return Err(invalid(
                format!("{k}.guest"),
                format!("{guest:?} is already mounted; give each directory its own guest path"),
            ));
        }
        for (j, entry) in d.exclude.iter().enumerate() {
            let denials = Denial::exclude(&guest_root(&guest), entry)
                .map_err(|e| invalid(format!("{k}.exclude[{j}]"), e.to_string()))?;
            excludes.extend(denials);
        }
        grants.dirs.push(DirGrant {
            host,
            guest,
            read_only,
            exclude: d.exclude.clone(),
        });
    }
    let valid_name = |k: &str| !k.is_empty() && !k.contains('=') && !k.contains('\0');
    for (k, v) in &p.env {
        if !valid_name(k) || v.contains('\0') {
            return Err(invalid(
                format!("{key}.env.{k}"),
                "not a valid environment variable",
            ));
        }
        grants.env.push((k.clone(), v.clone()));
    }
    for k in &p.env_from_host {
        let v = std::env::var(k).map_err(|_| {
            invalid(
                format!("{key}.env-from-host"),
                format!("{k} is not set (or not UTF-8) in the daemon's environment"),
            )
        })?;
        grants.env.push((k.clone(), v));
    }
    grants.network = network::resolve_network(p.network.as_ref(), &format!("{key}.network"))?;
    (grants.secrets, grants.caller_secrets) =
        network::resolve_secrets(&p.secrets, grants.network.as_ref(), &grants.env, base, key)?;
    for (i, pattern) in p.call_tools.iter().enumerate() {
        let parsed = ToolPattern::parse(pattern)
            .map_err(|e| invalid(format!("{key}.call-tools[{i}]"), e.to_string()))?;
        grants.calls.push(parsed);
    }
    Ok((grants, excludes))
}

/// A plugin's permission rules, compiled once, at config load: the global rules and its own
/// (`own`), judging path subjects through its directories, with `excludes` denied. A rule that
/// does not compile is a config error at `key`.
pub(super) fn compile_permissions(
    global: &PermissionConfig,
    own: Option<&PermissionConfig>,
    grants: &Grants,
    excludes: Vec<Denial>,
    key: &str,
) -> Result<Permissions, ConfigError> {
    let rules = Permissions::new(global, own).map_err(|e| invalid(key, e.to_string()))?;
    let mounts = Mounts::new(
        grants
            .dirs
            .iter()
            .map(|d| (d.guest.as_str(), d.host.as_path())),
    );
    Ok(rules.with_files(mounts, excludes))
}
