//! The [`Store`] over any database that runs the shared statements: SQLite for one daemon,
//! PostgreSQL for a fleet, which adds what only a fleet shares (the ledger, the board, sign-ins,
//! the audit index).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::{Change, Shared, SignIns, StateError, Statement, Store, Swept, TaskRecord, json, sql};
use crate::audit::index::AuditIndex;

/// What a database must do for [`Sql`] to be a [`Store`]: run the shared statements.
#[async_trait]
pub(super) trait Backend: Send + Sync {
    /// See [`Store::sole_user`].
    fn sole_user(&self) -> bool {
        false
    }
    /// A trivial round trip.
    async fn ping(&self) -> Result<(), StateError>;
    /// Rows changed.
    async fn execute(&self, s: Statement) -> Result<u64, StateError>;
    /// Task rows, as selected by [`COLUMNS`].
    async fn records(&self, s: Statement) -> Result<Vec<TaskRecord>, StateError>;
    /// The first column of each row, as text.
    async fn texts(&self, s: Statement) -> Result<Vec<Option<String>>, StateError>;
    /// Rows changed by each statement, run in order (in one transaction where that is cheap).
    async fn execute_all(&self, all: Vec<Statement>) -> Result<Vec<u64>, StateError>;
    /// See [`Store::ledger`].
    fn ledger(&self, daemon: &str) -> Option<Arc<dyn crate::exec::Ledger>> {
        let _ = daemon;
        None
    }
    /// See [`Store::board`].
    fn board(&self, daemon: &str) -> Option<Shared> {
        let _ = daemon;
        None
    }
    /// See [`Store::sign_ins`].
    fn sign_ins(&self, daemon: &str) -> Option<Arc<dyn SignIns>> {
        let _ = daemon;
        None
    }
    /// See [`Store::audit_index`].
    fn audit_index(&self, daemon: &str) -> Option<Arc<dyn AuditIndex>> {
        let _ = daemon;
        None
    }
    /// What else a sweep clears in this backend (the fleet's running counts of silent daemons).
    async fn sweep_more(&self, silent_since: i64, except: &str) -> Result<(), StateError> {
        let _ = (silent_since, except);
        Ok(())
    }
}

/// The [`Store`] over any [`Backend`]: every method is one shared statement.
pub(super) struct Sql<B>(pub(super) B);

#[async_trait]
impl<B: Backend> Store for Sql<B> {
    fn sole_user(&self) -> bool {
        self.0.sole_user()
    }

    async fn ping(&self) -> Result<(), StateError> {
        self.0.ping().await
    }

    async fn insert(&self, task: &TaskRecord) -> Result<(), StateError> {
        self.0.execute(sql::insert(task)).await.map(drop)
    }

    async fn get(&self, id: &str, now: i64) -> Result<Option<TaskRecord>, StateError> {
        Ok(self.0.records(sql::get(id, now)).await?.pop())
    }

    async fn list(
        &self,
        owner: &str,
        after: Option<&str>,
        limit: usize,
        now: i64,
    ) -> Result<Vec<TaskRecord>, StateError> {
        self.0.records(sql::list(owner, after, limit, now)).await
    }

    async fn newest(&self, limit: usize, now: i64) -> Result<Vec<TaskRecord>, StateError> {
        self.0.records(sql::newest(limit, now)).await
    }

    async fn update(&self, id: &str, change: &Change, now: i64) -> Result<bool, StateError> {
        Ok(self.0.execute(sql::update(id, change, now)).await? > 0)
    }

    async fn request_cancel(&self, id: &str, now: i64) -> Result<(), StateError> {
        self.0.execute(sql::request_cancel(id, now)).await.map(drop)
    }

    async fn responses(&self, id: &str) -> Result<Option<Value>, StateError> {
        let text = self.0.texts(sql::responses(id)).await?.into_iter().next();
        json(text.flatten())
    }

    async fn cancel_requests(&self, daemon: &str) -> Result<Vec<String>, StateError> {
        let ids = self.0.texts(sql::cancel_requests(daemon)).await?;
        Ok(ids.into_iter().flatten().collect())
    }

    async fn heartbeat(&self, daemon: &str, now: i64) -> Result<(), StateError> {
        self.0.execute(sql::heartbeat(daemon, now)).await.map(drop)
    }

    async fn sweep(&self, now: i64, silent_since: i64, except: &str) -> Result<Swept, StateError> {
        let changed = self
            .0
            .execute_all(sql::sweep(now, silent_since, except).into())
            .await?;
        self.0.sweep_more(silent_since, except).await?;
        Ok(Swept {
            orphaned: changed.first().copied().unwrap_or(0),
            expired: changed.get(2).copied().unwrap_or(0),
        })
    }

    async fn use_once(&self, nonce: &str, expires: i64) -> Result<bool, StateError> {
        Ok(self.0.execute(sql::use_once(nonce, expires)).await? == 1)
    }

    fn board(&self, daemon: &str) -> Option<Shared> {
        self.0.board(daemon)
    }

    fn ledger(&self, daemon: &str) -> Option<Arc<dyn crate::exec::Ledger>> {
        self.0.ledger(daemon)
    }

    fn sign_ins(&self, daemon: &str) -> Option<Arc<dyn SignIns>> {
        self.0.sign_ins(daemon)
    }

    fn audit_index(&self, daemon: &str) -> Option<Arc<dyn AuditIndex>> {
        self.0.audit_index(daemon)
    }
}
