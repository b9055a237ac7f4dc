//! The schema, as numbered migrations applied in order, once, each in its own transaction; the
//! ledger table says which ran. The SQL is written once for both backends (types and syntax that
//! SQLite and PostgreSQL read alike). Never edit a released migration: add the next one.

use super::StateError;

/// One step of the schema.
pub(super) struct Migration {
    /// Applied in increasing order.
    pub(super) version: i64,
    /// What it does, for the ledger.
    pub(super) name: &'static str,
    /// Statements separated by `;`.
    pub(super) sql: &'static str,
}

/// The ledger: which migrations ran, when.
pub(super) const LEDGER: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (\
    version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_ms BIGINT NOT NULL)";

/// Every migration, oldest first.
pub(super) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "tasks, daemons and used approval states",
        sql: "CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            owner TEXT NOT NULL,
            name TEXT NOT NULL,
            status TEXT NOT NULL,
            message TEXT,
            daemon TEXT NOT NULL,
            created_ms BIGINT NOT NULL,
            updated_ms BIGINT NOT NULL,
            expires_ms BIGINT NOT NULL,
            cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
            input_requests TEXT,
            input_responses TEXT,
            result TEXT,
            error TEXT
        );
        CREATE INDEX tasks_by_owner ON tasks (owner, created_ms, id);
        CREATE INDEX tasks_by_daemon ON tasks (daemon, status);
        CREATE INDEX tasks_by_expiry ON tasks (expires_ms);
        CREATE TABLE daemons (
            id TEXT PRIMARY KEY,
            started_ms BIGINT NOT NULL,
            heartbeat_ms BIGINT NOT NULL
        );
        CREATE TABLE used_states (
            nonce TEXT PRIMARY KEY,
            expires_ms BIGINT NOT NULL
        )",
    },
    Migration {
        version: 2,
        name: "the fleet's quota buckets and running counts",
        sql: "CREATE TABLE quota_buckets (
            key TEXT PRIMARY KEY,
            tokens DOUBLE PRECISION NOT NULL,
            taken DOUBLE PRECISION NOT NULL DEFAULT 0,
            updated_ms BIGINT NOT NULL,
            running BIGINT NOT NULL DEFAULT 0
        );
        CREATE TABLE quota_running (
            key TEXT NOT NULL,
            daemon TEXT NOT NULL,
            running BIGINT NOT NULL,
            PRIMARY KEY (key, daemon)
        )",
    },
    Migration {
        version: 3,
        name: "each quota bucket's burst and rate, so that idle, full buckets can be swept",
        sql: "ALTER TABLE quota_buckets ADD COLUMN burst DOUBLE PRECISION;
        ALTER TABLE quota_buckets ADD COLUMN per_ms DOUBLE PRECISION",
    },
    Migration {
        version: 4,
        name: "the fleet's questions to the console",
        sql: "CREATE TABLE questions (
            id TEXT PRIMARY KEY,
            daemon TEXT NOT NULL,
            body TEXT NOT NULL,
            input_sha256 TEXT NOT NULL,
            asked_ms BIGINT NOT NULL,
            expires_ms BIGINT NOT NULL,
            answer TEXT,
            operator TEXT
        )",
    },
    Migration {
        version: 5,
        name: "the fleet's console: sessions, sign-in links, live calls, each daemon's attendance and health, and the audit index",
        sql: "CREATE TABLE console_sessions (
            key TEXT PRIMARY KEY,
            operator TEXT NOT NULL,
            expires_ms BIGINT NOT NULL
        );
        CREATE TABLE console_links (
            key TEXT PRIMARY KEY,
            operator TEXT NOT NULL,
            daemon TEXT NOT NULL,
            expires_ms BIGINT NOT NULL
        );
        CREATE TABLE fleet_daemons (
            daemon TEXT PRIMARY KEY,
            console_until_ms BIGINT NOT NULL,
            health TEXT NOT NULL,
            updated_ms BIGINT NOT NULL
        );
        CREATE TABLE live_calls (
            daemon TEXT PRIMARY KEY,
            body TEXT NOT NULL,
            updated_ms BIGINT NOT NULL
        );
        CREATE TABLE audit_records (
            call_id TEXT PRIMARY KEY,
            daemon TEXT NOT NULL,
            ts_ms BIGINT NOT NULL,
            tool TEXT NOT NULL,
            line TEXT NOT NULL
        );
        CREATE INDEX audit_records_by_time ON audit_records (ts_ms, call_id);
        CREATE INDEX audit_records_by_tool ON audit_records (tool, ts_ms, call_id)",
    },
];

/// The migrations still to apply to a database at `current`; a database ahead of this build is
/// refused rather than written with an older idea of its schema.
pub(super) fn pending(current: i64) -> Result<&'static [Migration], StateError> {
    let known = MIGRATIONS.last().map_or(0, |m| m.version);
    if current > known {
        return Err(StateError::TooNew {
            found: current,
            known,
        });
    }
    let first = MIGRATIONS
        .iter()
        .position(|m| m.version > current)
        .unwrap_or(MIGRATIONS.len());
    Ok(&MIGRATIONS[first..])
}

/// The statements of `sql`, one by one.
pub(super) fn statements(sql: &str) -> impl Iterator<Item = &str> {
    sql.split(';').map(str::trim).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_increase_and_pending_follows_the_ledger() {
        assert!(MIGRATIONS.windows(2).all(|w| w[0].version < w[1].version));
        assert_eq!(pending(0).unwrap().len(), MIGRATIONS.len());
        assert!(
            pending(MIGRATIONS.last().unwrap().version)
                .unwrap()
                .is_empty()
        );
        assert!(matches!(
            pending(999),
            Err(StateError::TooNew { found: 999, .. })
        ));
    }
}
