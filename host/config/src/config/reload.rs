//! Reading the policy file again while the daemon serves (after `toolhost grant`, or an edit by
//! hand): validated exactly as at start, and compared with the config in force.
//!
//! Plugin policies apply at once: a plugin's `[plugins.NAME]` section, and the `[permissions]`,
//! `[limits]` and `[breaker]` every plugin inherits. The rest (server, auth, callers, state,
//! telemetry, engine, folders) is read at start only; a change to it is reported by name and
//! applies at the next start.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::{Config, ConfigError, invalid};

/// The sections every plugin's policy inherits: a change to one binds every plugin again.
const INHERITED: [&str; 3] = ["permissions", "limits", "breaker"];

/// Which loaded plugins a new policy binds again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebind {
    /// Every plugin: a section they all inherit changed.
    Every,
    /// These plugins, by name, whose own sections changed (possibly none).
    Only(BTreeSet<String>),
}

impl Rebind {
    /// Whether `plugin` is bound again.
    pub fn includes(&self, plugin: &str) -> bool {
        match self {
            Self::Every => true,
            Self::Only(names) => names.contains(plugin),
        }
    }
}

/// What a new version of the policy file changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changes {
    /// The plugins whose policy changed.
    pub rebind: Rebind,
    /// Top-level settings that changed but apply only at the next start, e.g. `server`.
    pub restart: Vec<String>,
}

impl Changes {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.rebind == Rebind::Only(BTreeSet::new()) && self.restart.is_empty()
    }
}

impl Config {
    /// The policy file a serving daemon watches: `--config`, or `./toolhost.toml` (which may
    /// appear later); `None` for a config built from values.
    pub fn policy_file(&self) -> Option<PathBuf> {
        let origin = self.origin.as_ref()?;
        Some(
            origin
                .file
                .clone()
                .unwrap_or_else(|| "toolhost.toml".into()),
        )
    }

    /// The policy file read again with the same flags and validated as at start: this config
    /// with the file's plugin policies (the rest applies at the next start), and what changed. A
    /// config built from values has nothing to read and changes nothing. Refused, as well as
    /// anything start would refuse: a memory limit above the instance slots this daemon reserved
    /// at start.
    pub fn reread(&self) -> Result<(Config, Changes), ConfigError> {
        let Some(origin) = &self.origin else {
            let none = Changes {
                rebind: Rebind::Only(BTreeSet::new()),
                restart: Vec::new(),
            };
            return Ok((self.clone(), none));
        };
        let next = Config::load(origin.file.as_deref(), &origin.overrides)?;
        self.fits_the_pool(&next)?;
        let changes = self.changes_to(&next);
        // The plugin policies from the file; the rest as this daemon started.
        let applied = Config {
            default_policy: next.default_policy,
            plugins: next.plugins,
            permissions: next.permissions,
            origin: next.origin,
            ..self.clone()
        };
        Ok((applied, changes))
    }

    /// Every memory limit of `next` fits the slots of this daemon's instance pool.
    fn fits_the_pool(&self, next: &Config) -> Result<(), ConfigError> {
        let Some(pool) = self.pool else {
            return Ok(());
        };
        let limits = std::iter::once(("limits".to_string(), &next.default_policy)).chain(
            next.plugins
                .iter()
                .map(|(name, p)| (format!("plugins.{name}.limits"), p)),
        );
        for (key, policy) in limits {
            if policy.limits.memory_bytes > pool.memory_bytes {
                return Err(invalid(
                    format!("{key}.memory-mb"),
                    format!(
                        "{} MiB is more than the {} MiB per instance this daemon reserved at \
                         start: restart it to apply this limit",
                        policy.limits.memory_bytes >> 20,
                        pool.memory_bytes >> 20
                    ),
                ));
            }
        }
        Ok(())
    }

    /// What `next`, read from the same file later, changes.
    fn changes_to(&self, next: &Config) -> Changes {
        let empty = toml::Table::new();
        let (old, new) = (written(self, &empty), written(next, &empty));
        let differs = |key: &str| old.get(key) != new.get(key);
        let restart: BTreeSet<&String> = old
            .keys()
            .chain(new.keys())
            .filter(|k| *k != "plugins" && !INHERITED.contains(&k.as_str()) && differs(k))
            .collect();
        let rebind = if INHERITED.iter().any(|k| differs(k)) {
            Rebind::Every
        } else {
            let section = |t: &toml::Table, name: &str| t.get("plugins")?.get(name).cloned();
            let names = self.plugins.keys().chain(next.plugins.keys());
            Rebind::Only(
                names
                    .filter(|name| section(old, name) != section(new, name))
                    .cloned()
                    .collect(),
            )
        };
        Changes {
            rebind,
            restart: restart.into_iter().cloned().collect(),
        }
    }
}

/// The tables `config` was read from (`empty` when it was built from values).
fn written<'a>(config: &'a Config, empty: &'a toml::Table) -> &'a toml::Table {
    config.origin.as_ref().map_or(empty, |o| &o.written)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Overrides;

    /// A folder with `toolhost.toml` holding `text`, and the `src` and `docs` folders to grant.
    fn folder(text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::create_dir(dir.path().join("docs")).unwrap();
        std::fs::write(dir.path().join("toolhost.toml"), text).unwrap();
        dir
    }

    fn load(dir: &Path, overrides: &Overrides) -> Config {
        Config::load(Some(&dir.join("toolhost.toml")), overrides).unwrap()
    }

    fn only(names: &[&str]) -> Rebind {
        Rebind::Only(names.iter().map(|n| n.to_string()).collect())
    }

    const TWO: &str = "[plugins.fs]\ndirs = [{ host = \"src\" }]\n[plugins.echo]\n";

    #[test]
    fn a_changed_section_binds_only_its_plugin_again() {
        let dir = folder(TWO);
        let before = load(dir.path(), &Overrides::default());
        let edited = TWO.replace(
            "\"src\" }",
            "\"src\" }, { host = \"docs\", guest = \"docs\" }",
        );
        std::fs::write(dir.path().join("toolhost.toml"), edited).unwrap();
        let (after, changes) = before.reread().unwrap();
        assert_eq!(changes.rebind, only(&["fs"]));
        assert!(changes.restart.is_empty());
        assert_eq!(after.policy("fs").grants.dirs.len(), 2);
    }

    #[test]
    fn a_removed_or_added_section_counts_as_changed() {
        let dir = folder(TWO);
        let before = load(dir.path(), &Overrides::default());
        let edited = "[plugins.echo]\n[plugins.math]\nenv = { A = \"1\" }\n";
        std::fs::write(dir.path().join("toolhost.toml"), edited).unwrap();
        let (after, changes) = before.reread().unwrap();
        assert_eq!(changes.rebind, only(&["fs", "math"]));
        assert!(after.policy("fs").grants.dirs.is_empty(), "revoked");
    }

    #[test]
    fn an_inherited_section_binds_every_plugin_again() {
        let dir = folder(TWO);
        let before = load(dir.path(), &Overrides::default());
        let edited = format!("[permissions]\ndeny = [\"read_file\"]\n{TWO}");
        std::fs::write(dir.path().join("toolhost.toml"), edited).unwrap();
        assert_eq!(before.reread().unwrap().1.rebind, Rebind::Every);
    }

    #[test]
    fn start_only_settings_are_named_and_bind_nothing() {
        let dir = folder(TWO);
        let before = load(dir.path(), &Overrides::default());
        let edited = format!("[server]\nmax-concurrent-calls = 7\n{TWO}");
        std::fs::write(dir.path().join("toolhost.toml"), edited).unwrap();
        let (after, changes) = before.reread().unwrap();
        assert_eq!(
            (changes.rebind, changes.restart),
            (only(&[]), vec!["server".into()])
        );
        assert_eq!(
            after.server.max_concurrent_calls,
            before.server.max_concurrent_calls
        );
    }

    #[test]
    fn the_same_file_changes_nothing_and_flags_still_apply() {
        let dir = folder(TWO);
        let docs = dir.path().join("docs");
        let flags = Overrides {
            dirs: vec![format!("echo={}", docs.display())],
            ..Overrides::default()
        };
        let before = load(dir.path(), &flags);
        let (after, changes) = before.reread().unwrap();
        assert!(changes.is_empty(), "{changes:?}");
        assert_eq!(after.policy("echo").grants.dirs[0].host, docs);
    }

    #[test]
    fn a_bad_edit_is_refused_as_at_start() {
        let dir = folder(TWO);
        let before = load(dir.path(), &Overrides::default());
        std::fs::write(
            dir.path().join("toolhost.toml"),
            "[plugins.fs]\ndirs = [{ host = \"missing\" }]\n",
        )
        .unwrap();
        let e = before.reread().unwrap_err().to_string();
        assert!(e.contains("plugins.fs.dirs[0].host"), "{e}");
        // A grant over toolhost's own files is refused too: the audit log's folder, read-write.
        std::fs::create_dir(dir.path().join(".toolhost")).unwrap();
        std::fs::write(
            dir.path().join("toolhost.toml"),
            "[plugins.fs]\ndirs = [{ host = \".toolhost\", mode = \"rw\" }]\n",
        )
        .unwrap();
        assert!(before.reread().is_err());
    }

    #[test]
    fn a_memory_limit_above_the_pool_waits_for_a_restart() {
        let dir = folder("[limits]\nmemory-mb = 64\n");
        let before = load(dir.path(), &Overrides::default());
        assert!(before.pool.is_some());
        std::fs::write(
            dir.path().join("toolhost.toml"),
            "[limits]\nmemory-mb = 64\n[plugins.fs.limits]\nmemory-mb = 512\n",
        )
        .unwrap();
        let e = before.reread().unwrap_err().to_string();
        assert!(
            e.contains("plugins.fs.limits.memory-mb") && e.contains("restart"),
            "{e}"
        );
    }
}
