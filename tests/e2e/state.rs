//! The state store against a real PostgreSQL: migrations are versioned and applied once (also by
//! daemons starting together), and readiness follows the store: `/ready` is 503 while PostgreSQL
//! is down, and 200 again once it is back.

use std::time::{Duration, Instant};

use crate::daemon::{Daemon, http};
use crate::harness::Env;
use crate::services::Postgres;

const CONFIG: &str = r#"
[server]
state-key-env = "TOOLHOST_STATE_KEY"

[state]
url-env = "TOOLHOST_STATE_URL"
"#;

const KEY: &str = "state-test-key-0123456789abcdef0123456789abcdef";

fn ready_is(addr: std::net::SocketAddr, want: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = http(addr, "GET", "/ready", &[], b"");
        if got.status == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "/ready stayed {} ({}), wanted {want}",
            got.status,
            got.text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn postgres_migrations_run_once_and_readiness_follows_the_store() {
    let Some(mut pg) = Postgres::start("postgres_state") else {
        return;
    };
    let env = Env::new(&["echo"], CONFIG);
    let vars = [
        ("TOOLHOST_STATE_URL", pg.url.as_str()),
        ("TOOLHOST_STATE_KEY", KEY),
    ];
    // Two daemons start at once on an empty database: the advisory lock lets one migrate.
    let one = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &vars);
    let two = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &vars);
    let (a, b) = (one.http.unwrap(), two.http.unwrap());
    ready_is(a, 200);
    ready_is(b, 200);
    assert_eq!(
        pg.psql("SELECT version, name FROM schema_migrations ORDER BY version"),
        "1|tasks, daemons and used approval states\n"
    );
    let daemons = pg.psql("SELECT count(*) FROM daemons");
    assert_eq!(daemons.trim(), "2", "each daemon beats its heartbeat");

    // A database migrated by a newer toolhost is refused, not written.
    pg.psql("INSERT INTO schema_migrations VALUES (99, 'from the future', 0)");
    let future = env
        .command(&["serve", "--http", "127.0.0.1:0", "--no-watch"])
        .envs(vars)
        .output()
        .unwrap();
    assert_eq!(future.status.code(), Some(2), "{future:?}");
    let err = String::from_utf8_lossy(&future.stderr);
    assert!(err.contains("schema version 99"), "{err}");
    pg.psql("DELETE FROM schema_migrations WHERE version = 99");

    // The database goes away: the daemons say they are not ready (and stay alive).
    pg.stop_now();
    ready_is(a, 503);
    assert_eq!(http(a, "GET", "/health", &[], b"").status, 200);
    drop((one, two));
}
