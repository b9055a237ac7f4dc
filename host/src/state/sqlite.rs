//! The embedded store: one SQLite file beside the audit log, for one daemon. Statements run on the
//! blocking pool, one at a time over one connection (WAL mode, so readers of the file, such as a
//! backup, do not stop the daemon).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rusqlite::config::DbConfig;
use rusqlite::types::ToSqlOutput;
use rusqlite::{Connection, ToSql};

use super::{Backend, Param, Row, StateError, Statement, TaskRecord, migrations};

/// Pages the write-ahead log grows to before a commit checkpoints it into the database (SQLite's
/// default is 1000, 4 MB): what the next open reads back to rebuild its index.
const WAL_PAGES: i64 = 64;

/// A SQLite file.
pub(super) struct Sqlite {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
    /// An exclusive lock on `<file>.lock`, held while this daemon runs, when it got one: then no
    /// other daemon uses the file, and whatever is unfinished in it was left by a previous run.
    sole: Option<std::fs::File>,
}

impl ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Self::Int(i) => i.to_sql(),
            Self::Text(t) => t.to_sql(),
            Self::Bool(b) => b.to_sql(),
        }
    }
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        id: r.get(0)?,
        kind: r.get(1)?,
        owner: r.get(2)?,
        name: r.get(3)?,
        status: r.get(4)?,
        message: r.get(5)?,
        daemon: r.get(6)?,
        created_ms: r.get(7)?,
        updated_ms: r.get(8)?,
        expires_ms: r.get(9)?,
        cancel_requested: r.get(10)?,
        input_requests: r.get(11)?,
        result: r.get(12)?,
        error: r.get(13)?,
    })
}

impl Sqlite {
    /// Open `path` (creating it and its folder), and bring its schema up to date.
    pub(super) async fn open(path: &Path) -> Result<Self, StateError> {
        let path = path.to_path_buf();
        let fail = {
            let path = path.clone();
            move |e: &dyn std::fmt::Display| StateError::Sqlite {
                path: path.display().to_string(),
                message: e.to_string(),
            }
        };
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
        }
        let opened = path.clone();
        let conn = tokio::task::spawn_blocking(move || -> Result<Connection, StateError> {
            let mut conn = Connection::open(&opened).map_err(|e| fail(&e))?;
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(|e| fail(&e))?;
            conn.pragma_update(None, "synchronous", "NORMAL")
                .map_err(|e| fail(&e))?;
            // The write-ahead log outlives the connection: checkpointing it on close deleted it,
            // and the next start created it again, syncing it and its folder before its first
            // commit (0.5-7 ms measured, on the way to the first answer). Kept small instead, so
            // that reading it back at the next open stays cheap; a checkpoint syncs as before.
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
                .map_err(|e| fail(&e))?;
            conn.pragma_update(None, "wal_autocheckpoint", WAL_PAGES)
                .map_err(|e| fail(&e))?;
            conn.busy_timeout(std::time::Duration::from_secs(5))
                .map_err(|e| fail(&e))?;
            migrate(&mut conn).map_err(|e| match e {
                Migrate::TooNew(e) => e,
                Migrate::Sql(e) => fail(&e),
            })?;
            Ok(conn)
        })
        .await
        .map_err(|e| StateError::Sqlite {
            path: path.display().to_string(),
            message: e.to_string(),
        })??;
        let sole = lock_beside(&path);
        Ok(Self {
            path,
            conn: Arc::new(Mutex::new(conn)),
            sole,
        })
    }

    /// Run `f` on the connection, on the blocking pool.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StateError> {
        let conn = self.conn.clone();
        let fail = |message: String| StateError::Sqlite {
            path: self.path.display().to_string(),
            message,
        };
        tokio::task::spawn_blocking(move || {
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut conn)
        })
        .await
        .map_err(|e| fail(e.to_string()))?
        .map_err(|e| fail(e.to_string()))
    }
}

/// The lock file beside `db`, locked exclusively, or `None` when another process holds it (two
/// daemons sharing one embedded file, as two desktop clients launching the same config would).
fn lock_beside(db: &Path) -> Option<std::fs::File> {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(PathBuf::from(name))
        .ok()?;
    file.try_lock().ok()?;
    Some(file)
}

enum Migrate {
    TooNew(StateError),
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for Migrate {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sql(e)
    }
}

/// Apply the pending migrations, each in an immediate transaction with its ledger row.
fn migrate(conn: &mut Connection) -> Result<(), Migrate> {
    conn.execute(migrations::LEDGER, [])?;
    let current: i64 = conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |r| r.get(0),
    )?;
    for m in migrations::pending(current).map_err(Migrate::TooNew)? {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        for statement in migrations::statements(m.sql) {
            tx.execute(statement, [])?;
        }
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?1, ?2, ?3)",
            rusqlite::params![m.version, m.name, super::now_ms()],
        )?;
        tx.commit()?;
    }
    Ok(())
}

#[async_trait]
impl Backend for Sqlite {
    fn sole_user(&self) -> bool {
        self.sole.is_some()
    }

    async fn ping(&self) -> Result<(), StateError> {
        self.with(|c| c.query_row("SELECT 1", [], |_| Ok(()))).await
    }

    async fn execute(&self, s: Statement) -> Result<u64, StateError> {
        let changed = self
            .with(move |c| c.execute(&s.sql, rusqlite::params_from_iter(s.params.iter())))
            .await?;
        Ok(changed as u64)
    }

    async fn records(&self, s: Statement) -> Result<Vec<TaskRecord>, StateError> {
        let rows = self
            .with(move |c| {
                let mut stmt = c.prepare_cached(&s.sql)?;
                let rows = stmt.query_map(rusqlite::params_from_iter(s.params.iter()), row)?;
                rows.collect::<rusqlite::Result<Vec<Row>>>()
            })
            .await?;
        rows.into_iter().map(Row::into_record).collect()
    }

    async fn texts(&self, s: Statement) -> Result<Vec<Option<String>>, StateError> {
        self.with(move |c| {
            let mut stmt = c.prepare_cached(&s.sql)?;
            let texts =
                stmt.query_map(rusqlite::params_from_iter(s.params.iter()), |r| r.get(0))?;
            texts.collect()
        })
        .await
    }

    async fn execute_all(&self, all: Vec<Statement>) -> Result<Vec<u64>, StateError> {
        self.with(move |c| {
            let tx = c.transaction()?;
            let mut changed = Vec::with_capacity(all.len());
            for s in &all {
                let n = tx.execute(&s.sql, rusqlite::params_from_iter(s.params.iter()))?;
                changed.push(n as u64);
            }
            tx.commit()?;
            Ok(changed)
        })
        .await
    }
}
