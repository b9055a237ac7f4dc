//! `[state]` and `[tasks]`: the stores, their settings, and the values refused.

use super::*;

fn store(raw: RawState) -> Result<StateStore, ConfigError> {
    resolve_store(&raw, Path::new("/etc/th"), Path::new("/var/lib/th"))
}

#[test]
fn the_embedded_file_sits_beside_the_audit_log() {
    assert_eq!(
        store(RawState::default()).unwrap(),
        StateStore::Embedded("/var/lib/th/state.db".into())
    );
    let raw = RawState {
        path: Some("db/s.db".into()),
        ..RawState::default()
    };
    assert_eq!(
        store(raw).unwrap(),
        StateStore::Embedded("/etc/th/db/s.db".into())
    );
}

#[test]
fn only_postgres_urls_and_never_printed() {
    let raw = RawState {
        url: Some("mysql://root:hunter2@db/x".into()),
        ..RawState::default()
    };
    let e = store(raw).unwrap_err().to_string();
    assert!(e.contains("state.url") && !e.contains("hunter2"), "{e}");
    let raw = RawState {
        url: Some("postgres://u:hunter2@db/x".into()),
        ..RawState::default()
    };
    let s = store(raw).unwrap();
    assert!(matches!(s, StateStore::Postgres { .. }));
    assert!(!format!("{s:?}").contains("hunter2"));
}

#[test]
fn url_and_url_env_exclude_each_other_and_the_env_must_exist() {
    let raw = RawState {
        url: Some("postgres://db/x".into()),
        url_env: Some("X".into()),
        ..RawState::default()
    };
    assert!(store(raw).is_err());
    let raw = RawState {
        url_env: Some("TOOLHOST_TEST_SURELY_UNSET_STATE_URL".into()),
        ..RawState::default()
    };
    let e = store(raw).unwrap_err().to_string();
    assert!(e.contains("not set"), "{e}");
}

#[test]
fn task_bounds_are_checked() {
    assert_eq!(
        resolve_tasks(&RawTasks::default()).unwrap(),
        TaskOptions::default()
    );
    for raw in [
        RawTasks {
            ttl_s: Some(0),
            ..RawTasks::default()
        },
        RawTasks {
            poll_interval_ms: Some(1),
            ..RawTasks::default()
        },
        RawTasks {
            lease_ms: Some(10),
            ..RawTasks::default()
        },
    ] {
        assert!(resolve_tasks(&raw).is_err());
    }
}

#[test]
fn no_grant_reaches_the_state_database() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("data")).unwrap();
    let text = r#"
        [state]
        path = "data/state.db"
        [plugins.fs]
        dirs = [{ host = "data", mode = "ro" }]
    "#;
    let raw = toml::from_str(text).unwrap();
    let e = crate::config::Config::from_raw(raw, root.path(), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("plugins.fs.dirs[0].host") && e.contains("the state database"),
        "{e}"
    );
}

#[test]
fn a_short_state_key_is_refused() {
    assert_eq!(resolve_state_key(None).unwrap(), None);
    let e = resolve_state_key(Some("TOOLHOST_TEST_SURELY_UNSET_KEY"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not set"), "{e}");
}
