//! `[plugins.NAME]` sections that name no plugin. A typo in a section's name would otherwise leave
//! the plugin it meant with the default policy, silently: its grants missing, its `disabled` or
//! tighter limits not applied. At start such a section is a configuration error; while serving, a
//! section whose file was removed is only a warning (the daemon keeps serving the others).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolhost_config::config::Config;

/// How many of the folder's plugin names a message lists before it says how many more there are.
const NAMES_SHOWN: usize = 20;

/// A `[plugins.NAME]` section without a `source` that matches no `NAME.wasm` in the plugins folder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "[plugins.{name}] names no plugin in {folder} (have: {have}); fix the name, remove the section, or mark it `arrives-later = true` if its file is deployed while serving"
)]
pub struct UnknownSection {
    /// The section's plugin name, as written.
    pub name: String,
    /// The plugins folder.
    pub folder: String,
    /// The plugin names that do exist (the folder's files and the sourced sections), comma-separated.
    pub have: String,
}

/// The sections of `config` that name none of `files` (the folder's plugins by name), have no
/// `source` and are not marked `arrives-later` (a plugin deployed while serving), in name order. A
/// disabled section counts too: `[plugins.fss] disabled = true` is exactly the typo that leaves
/// `fs` served.
pub(super) fn unknown_sections(
    config: &Config,
    files: &BTreeMap<String, PathBuf>,
) -> Vec<UnknownSection> {
    let unknown: Vec<&String> = config
        .plugins
        .iter()
        .filter(|(name, p)| p.source.is_none() && !p.arrives_later && !files.contains_key(*name))
        .map(|(name, _)| name)
        .collect();
    if unknown.is_empty() {
        return Vec::new();
    }
    let have = existing_names(config, files);
    unknown
        .into_iter()
        .map(|name| UnknownSection {
            name: name.clone(),
            folder: folder_name(&config.plugins_dir),
            have: have.clone(),
        })
        .collect()
}

/// The plugin names there are: the folder's files and the sections with a `source`.
fn existing_names(config: &Config, files: &BTreeMap<String, PathBuf>) -> String {
    let mut names: Vec<&str> = files.keys().map(String::as_str).collect();
    names.extend(
        config
            .plugins
            .iter()
            .filter(|(_, p)| p.source.is_some())
            .map(|(n, _)| n.as_str()),
    );
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return "none".into();
    }
    let mut text = names
        .iter()
        .take(NAMES_SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > NAMES_SHOWN {
        text.push_str(&format!(" and {} more", names.len() - NAMES_SHOWN));
    }
    text
}

/// The folder as the operator wrote it: `./plugins` rather than `plugins`.
fn folder_name(dir: &Path) -> String {
    if dir.is_relative() && !dir.starts_with(".") && !dir.starts_with("..") {
        format!("./{}", dir.display())
    } else {
        dir.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_config::config::{Overrides, RawConfig};

    fn config(text: &str) -> Config {
        let raw: RawConfig = toml::from_str(text).unwrap();
        Config::from_raw(raw, Path::new("."), &Overrides::default()).unwrap()
    }

    #[test]
    fn a_section_without_its_file_is_unknown_unless_it_arrives_later() {
        let files = BTreeMap::from([
            ("echo".to_owned(), PathBuf::from("plugins/echo.wasm")),
            ("fs".to_owned(), PathBuf::from("plugins/fs.wasm")),
        ]);
        let c = config(
            "[plugins.fs]\nprefix = \"f_\"\n[plugins.fss]\ndisabled = true\n\
             [plugins.late]\narrives-later = true\n",
        );
        let unknown = unknown_sections(&c, &files);
        assert_eq!(unknown.len(), 1, "{unknown:?}");
        assert!(
            unknown[0].to_string().starts_with(
                "[plugins.fss] names no plugin in ./plugins (have: echo, fs); fix the name"
            ),
            "{}",
            unknown[0]
        );
        assert_eq!(unknown_sections(&c, &BTreeMap::new())[0].have, "none");
    }
}
