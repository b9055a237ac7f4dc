//! The console's sessions and one-time sign-in links in PostgreSQL, so that every daemon of a
//! fleet honours them: a cookie signed in on one daemon works on all, signing out ends it on all,
//! and a link is spent once by whichever daemon the balancer sends it to. Rows hold the SHA-256 of
//! each secret, never the secret, and expire by the database's clock, which every daemon shares.

use async_trait::async_trait;
use tokio_postgres::types::Type;

use super::StateError;
use super::postgres::{NOW, Postgres};

/// Sessions and sign-in links shared by a fleet's consoles. Keys are the hex SHA-256 of the
/// cookie or link token; `lifetime_ms` counts from the database's clock.
#[async_trait]
pub trait SignIns: Send + Sync {
    /// Keep a session of `operator` for `lifetime_ms`.
    async fn open(&self, key: &str, operator: &str, lifetime_ms: i64) -> Result<(), StateError>;
    /// The operator of the unexpired session `key`.
    async fn find(&self, key: &str) -> Result<Option<String>, StateError>;
    /// End the session `key` everywhere.
    async fn close(&self, key: &str) -> Result<(), StateError>;
    /// This daemon's one unused link is now `key`, for `operator`, for `lifetime_ms`.
    async fn put_link(&self, key: &str, operator: &str, lifetime_ms: i64)
    -> Result<(), StateError>;
    /// Spend the unexpired link `key`: whom it signs in, to exactly one caller in the fleet.
    async fn spend_link(&self, key: &str) -> Result<Option<String>, StateError>;
}

/// [`SignIns`] of daemon `daemon` in a PostgreSQL store.
pub(super) struct Desk {
    pg: Postgres,
    daemon: String,
}

impl Desk {
    pub(super) fn new(pg: Postgres, daemon: &str) -> Self {
        Self {
            pg,
            daemon: daemon.to_owned(),
        }
    }
}

#[async_trait]
impl SignIns for Desk {
    async fn open(&self, key: &str, operator: &str, lifetime_ms: i64) -> Result<(), StateError> {
        let sql = format!(
            "INSERT INTO console_sessions (key, operator, expires_ms) VALUES ($1, $2, {NOW} + $3)"
        );
        self.pg
            .query_typed(
                &sql,
                &[
                    (&key, Type::TEXT),
                    (&operator, Type::TEXT),
                    (&lifetime_ms, Type::INT8),
                ],
            )
            .await
            .map(drop)
    }

    async fn find(&self, key: &str) -> Result<Option<String>, StateError> {
        let sql =
            format!("SELECT operator FROM console_sessions WHERE key = $1 AND expires_ms > {NOW}");
        let rows = self.pg.query_typed(&sql, &[(&key, Type::TEXT)]).await?;
        rows.first()
            .map(|r| r.try_get(0).map_err(super::postgres::fail))
            .transpose()
    }

    async fn close(&self, key: &str) -> Result<(), StateError> {
        self.pg
            .query_typed(
                "DELETE FROM console_sessions WHERE key = $1",
                &[(&key, Type::TEXT)],
            )
            .await
            .map(drop)
    }

    async fn put_link(
        &self,
        key: &str,
        operator: &str,
        lifetime_ms: i64,
    ) -> Result<(), StateError> {
        // One statement: the replaced link is gone exactly when the new one exists.
        let sql = format!(
            "WITH gone AS (DELETE FROM console_links WHERE daemon = $3) \
             INSERT INTO console_links (key, operator, daemon, expires_ms) \
             VALUES ($1, $2, $3, {NOW} + $4)"
        );
        self.pg
            .query_typed(
                &sql,
                &[
                    (&key, Type::TEXT),
                    (&operator, Type::TEXT),
                    (&self.daemon, Type::TEXT),
                    (&lifetime_ms, Type::INT8),
                ],
            )
            .await
            .map(drop)
    }

    async fn spend_link(&self, key: &str) -> Result<Option<String>, StateError> {
        let sql = format!(
            "DELETE FROM console_links WHERE key = $1 AND expires_ms > {NOW} RETURNING operator"
        );
        let rows = self.pg.query_typed(&sql, &[(&key, Type::TEXT)]).await?;
        rows.first()
            .map(|r| r.try_get(0).map_err(super::postgres::fail))
            .transpose()
    }
}

/// Forget expired sessions and links, and the unused links of daemons silent since
/// `silent_since` (other than `except`): as on a daemon alone, a restart ends the link it printed.
pub(super) async fn sweep(
    pg: &Postgres,
    silent_since: i64,
    except: &str,
) -> Result<(), StateError> {
    for table in ["console_sessions", "console_links"] {
        let sql = format!("DELETE FROM {table} WHERE expires_ms <= {NOW}");
        pg.query_typed(&sql, &[]).await?;
    }
    pg.forget_silent("console_links", silent_since, except)
        .await
}
