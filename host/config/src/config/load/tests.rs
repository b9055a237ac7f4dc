//! Whole configs through `from_raw`: defaults, inheritance and the values refused; `parse` is the
//! other config tests' one way to read a config.

use std::time::Duration;

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
    let c =
        parse("[limits]\ntimeout-ms = 1000\nmemory-mb = 64\n[plugins.a.limits]\nmemory-mb = 8\n")
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
