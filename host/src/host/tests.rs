//! A host opens as the daemon and the tests open it, and its shutdown ends what it started.

use std::path::Path;
use std::time::Duration;

use toolhost_config::config::{Config, Overrides, RawConfig, StateStore};

use super::Host;

/// `text` as the daemon loads it, over an empty plugins folder in `dir`.
fn config(dir: &Path, text: &str) -> Config {
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    let raw: RawConfig = toml::from_str(text).unwrap();
    Config::from_raw(raw, dir, &Overrides::default()).unwrap()
}

#[tokio::test]
async fn a_host_for_calls_opens_no_state_store() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::open(config(dir.path(), ""), 1).await.unwrap();
    assert!(host.tasks().is_none());
    assert!(host.registry().catalog().tools.is_empty());
    assert!(!dir.path().join(".toolhost/state.db").exists());
    host.shutdown().await;
}

#[tokio::test]
async fn a_daemon_host_opens_its_store_and_shutdown_stops_the_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::open_daemon(config(dir.path(), "")).await.unwrap();
    let tasks = host.tasks().expect("the embedded store opens at once");
    drop(host.server());
    // The heartbeat holds the tasks; once it has stopped (and the host is gone), only this test does.
    tokio::time::timeout(Duration::from_secs(1), host.shutdown())
        .await
        .expect("the heartbeat stops at shutdown");
    assert_eq!(std::sync::Arc::strong_count(&tasks), 1);
}

#[tokio::test]
async fn an_unreachable_database_is_waited_for_until_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1: the store is pending, not an error. (Set past the config's checks,
    // which also want the key that daemons sharing a database share.)
    let mut config = config(dir.path(), "");
    config.state = StateStore::Postgres {
        url: "postgres://toolhost@127.0.0.1:1/toolhost?sslmode=disable".into(),
        ca_file: None,
    };
    let host = Host::open_daemon(config).await.unwrap();
    assert!(host.tasks().is_none());
    let _server = host.server();
    tokio::time::timeout(Duration::from_secs(1), host.shutdown())
        .await
        .expect("the retry loop and the server's waiter stop at shutdown");
}

#[tokio::test]
async fn an_unusable_embedded_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.db");
    std::fs::write(&file, "not a database").unwrap();
    let text = format!("[state]\npath = {:?}\n", file.display().to_string());
    let refused = Host::open_daemon(config(dir.path(), &text)).await;
    assert!(matches!(refused, Err(super::HostError::State(_))));
}
