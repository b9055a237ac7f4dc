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
        "1|tasks, daemons and used approval states\n\
         2|the fleet's quota buckets and running counts\n\
         3|each quota bucket's burst and rate, so that idle, full buckets can be swept\n\
         4|the fleet's questions to the console\n\
         5|the fleet's console: sessions, sign-in links, live calls, each daemon's attendance and health, and the audit index\n"
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

#[test]
fn postgres_over_tls_is_verified_against_the_configured_ca() {
    let Some(pg) = Postgres::start_tls("postgres_tls") else {
        return;
    };
    let ca = pg.ca.clone().unwrap();
    let url = format!("{}?sslmode=require", pg.url);
    let vars = [
        ("TOOLHOST_STATE_URL", url.as_str()),
        ("TOOLHOST_STATE_KEY", KEY),
    ];
    // With the CA: ready, over TLS (the server's own view of the connection says so).
    let trusted = format!("{CONFIG}ca-file = \"{}\"\n", ca.display());
    let env = Env::new(&["echo"], &trusted);
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &vars);
    ready_is(daemon.http.unwrap(), 200);
    let ssl = pg.psql(
        "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
         WHERE ssl AND usename = 'toolhost' AND pid <> pg_backend_pid()",
    );
    assert_ne!(ssl.trim(), "0", "the daemon's connection is not encrypted");

    // Without it, the server's certificate is not trusted: not ready, and the reason is shown.
    let env = Env::new(&["echo"], CONFIG);
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &vars);
    let addr = daemon.http.unwrap();
    ready_is(addr, 503);
    let body = http(addr, "GET", "/ready", &[], b"").text();
    assert!(body.contains("not open yet"), "{body}");
    assert!(
        daemon.stderr().contains("certificate") || daemon.stderr().contains("UnknownIssuer"),
        "{}",
        daemon.stderr()
    );
}
