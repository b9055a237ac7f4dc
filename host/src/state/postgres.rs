//! The shared store: a PostgreSQL database that every daemon behind a load balancer opens. One
//! pipelined connection per daemon, opened again when it drops, over TLS when the URL's `sslmode`
//! asks (verified against the webpki roots and `state.ca-file`); migrations run under an advisory
//! lock, so daemons starting together apply each migration once.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio::sync::Mutex;
use tokio_postgres::Client;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres_rustls::MakeRustlsConnect;

mod backend;

use super::{Param, StateError, Statement, migrations};

/// Any number: the advisory lock key of toolhost's migrations ("toolhost" in ASCII, cut to 8 bytes).
const MIGRATION_LOCK: i64 = 0x746f_6f6c_686f_7374;

/// A connection's socket end, to be polled for its messages.
type Connection = tokio_postgres::Connection<
    tokio_postgres::Socket,
    <MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket>>::Stream,
>;

/// Now, in milliseconds since the epoch, by the database: one clock for every daemon.
pub(super) const NOW: &str = "(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT";

/// The channel every daemon of a fleet listens on, for what the consoles share.
pub(super) const CHANNEL: &str = "toolhost_questions";

/// `pg_notify` of `event` for each row of the CTE `q` (which returns `id` and `daemon`).
pub(super) fn announce(event: &str) -> String {
    format!(
        "SELECT pg_notify('{CHANNEL}', json_build_object('event', '{event}', \
         'daemon', daemon, 'id', id)::text) FROM q"
    )
}

/// A PostgreSQL database (a handle: clones share the connection).
#[derive(Clone)]
pub(super) struct Postgres {
    url: Arc<str>,
    tls: MakeRustlsConnect,
    client: Arc<Mutex<Option<Arc<Client>>>>,
    /// The second connection, for the console's traffic ([`Self::beside`]).
    beside: Arc<Mutex<Option<Arc<Client>>>>,
}

/// TLS as the URL's `sslmode` asks, verifying the server against the webpki roots and the
/// certificates in `ca_file`.
fn tls(ca_file: Option<&Path>) -> Result<MakeRustlsConnect, StateError> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.into(),
    };
    if let Some(path) = ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| StateError::Postgres(format!("CA file {}: {e}", path.display())))?;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert =
                cert.map_err(|e| StateError::Postgres(format!("CA file {}: {e}", path.display())))?;
            roots
                .add(cert)
                .map_err(|e| StateError::Postgres(format!("CA file {}: {e}", path.display())))?;
            added += 1;
        }
        if added == 0 {
            return Err(StateError::Postgres(format!(
                "CA file {} holds no PEM certificate",
                path.display()
            )));
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(fail)?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

pub(super) fn fail(e: impl std::fmt::Display) -> StateError {
    StateError::Postgres(e.to_string())
}

/// `?N` (SQLite's spelling, which the shared statements use) as `$N`.
fn dollars(sql: &str) -> String {
    sql.replace('?', "$")
}

fn params(list: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    list.iter()
        .map(|p| match p {
            Param::Int(i) => i as &(dyn ToSql + Sync),
            Param::Text(t) => t as &(dyn ToSql + Sync),
            Param::Bool(b) => b as &(dyn ToSql + Sync),
        })
        .collect()
}

impl Postgres {
    /// Connect to `url` and bring the schema up to date.
    pub(super) async fn open(url: &str, ca_file: Option<&Path>) -> Result<Self, StateError> {
        let store = Self {
            url: url.into(),
            tls: tls(ca_file)?,
            client: Arc::default(),
            beside: Arc::default(),
        };
        let client = store.client().await?;
        migrate(&client).await?;
        Ok(store)
    }

    /// A handle on a second connection of the daemon's, opened on first use, for what the
    /// console shares with the fleet (questions, sessions, live calls, the audit index): a long
    /// page or a burst of look-ups never queues ahead of a call's statements (the quota ledger,
    /// tasks) on the pipelined connection.
    pub(super) fn beside(&self) -> Self {
        Self {
            url: self.url.clone(),
            tls: self.tls.clone(),
            client: self.beside.clone(),
            beside: self.beside.clone(),
        }
    }

    /// Delete the rows of `table` (a constant) kept by daemons silent since `silent_since`, other
    /// than `except`, whose `daemon` column names them.
    pub(super) async fn forget_silent(
        &self,
        table: &'static str,
        silent_since: i64,
        except: &str,
    ) -> Result<(), StateError> {
        let sql = format!(
            "DELETE FROM {table} WHERE daemon <> $2 \
               AND daemon NOT IN (SELECT id FROM daemons WHERE heartbeat_ms >= $1)"
        );
        self.query_typed(&sql, &[(&silent_since, Type::INT8), (&except, Type::TEXT)])
            .await
            .map(drop)
    }

    /// The open connection, or a new one if it dropped.
    async fn client(&self) -> Result<Arc<Client>, StateError> {
        let mut slot = self.client.lock().await;
        if let Some(c) = slot.as_ref()
            && !c.is_closed()
        {
            return Ok(c.clone());
        }
        let (client, connection) = self.connect().await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!("PostgreSQL state store connection ended: {e}");
            }
        });
        let client = Arc::new(client);
        *slot = Some(client.clone());
        Ok(client)
    }

    /// A new connection of its own, and what must be polled to drive it.
    pub(super) async fn connect(&self) -> Result<(Client, Connection), StateError> {
        tokio_postgres::connect(&self.url, self.tls.clone())
            .await
            .map_err(|e| {
                // The error's source says why (refused, TLS, authentication); the URL is not in it.
                let mut why = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    why.push_str(": ");
                    why.push_str(&s.to_string());
                    source = s.source();
                }
                StateError::Postgres(why)
            })
    }

    async fn query(&self, s: &Statement) -> Result<Vec<tokio_postgres::Row>, StateError> {
        let client = self.client().await?;
        client
            .query(&dollars(&s.sql), &params(&s.params))
            .await
            .map_err(fail)
    }

    /// Run `sql` (in PostgreSQL's own spelling) with `params` of the types given, in one round
    /// trip (no statement prepared first).
    pub(super) async fn query_typed(
        &self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), tokio_postgres::types::Type)],
    ) -> Result<Vec<tokio_postgres::Row>, StateError> {
        let client = self.client().await?;
        client.query_typed(sql, params).await.map_err(fail)
    }
}

/// Apply the pending migrations in one transaction holding the migration lock.
async fn migrate(client: &Client) -> Result<(), StateError> {
    client
        .batch_execute(migrations::LEDGER)
        .await
        .map_err(fail)?;
    client.batch_execute("BEGIN").await.map_err(fail)?;
    let applied = async {
        client
            .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(fail)?;
        let current: i64 = client
            .query_one(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                &[],
            )
            .await
            .map_err(fail)?
            .get(0);
        for m in migrations::pending(current)? {
            for statement in migrations::statements(m.sql) {
                client.batch_execute(statement).await.map_err(fail)?;
            }
            client
                .execute(
                    "INSERT INTO schema_migrations (version, name, applied_ms) VALUES ($1, $2, $3)",
                    &[&m.version, &m.name, &super::now_ms()],
                )
                .await
                .map_err(fail)?;
        }
        Ok::<(), StateError>(())
    }
    .await;
    let end = if applied.is_ok() {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    client.batch_execute(end).await.map_err(fail)?;
    applied
}
