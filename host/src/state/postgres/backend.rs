//! The shared store as the state's [`Backend`]: statements in PostgreSQL's spelling over the
//! daemon's connection, and the fleet's quota ledger over the same database.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Postgres, dollars, fail, params};
use crate::audit::index::AuditIndex;
use crate::state::buckets::{Buckets, sweep};
use crate::state::signins::{Desk, SignIns};
use crate::state::{Backend, Row, Shared, StateError, Statement, TaskRecord};

fn row(r: &tokio_postgres::Row) -> Result<Row, StateError> {
    let get = |i| -> Result<String, StateError> { r.try_get(i).map_err(fail) };
    let opt = |i| -> Result<Option<String>, StateError> { r.try_get(i).map_err(fail) };
    let int = |i| -> Result<i64, StateError> { r.try_get(i).map_err(fail) };
    Ok(Row {
        id: get(0)?,
        kind: get(1)?,
        owner: get(2)?,
        name: get(3)?,
        status: get(4)?,
        message: opt(5)?,
        daemon: get(6)?,
        created_ms: int(7)?,
        updated_ms: int(8)?,
        expires_ms: int(9)?,
        cancel_requested: r.try_get(10).map_err(fail)?,
        input_requests: opt(11)?,
        result: opt(12)?,
        error: opt(13)?,
    })
}

#[async_trait]
impl Backend for Postgres {
    fn ledger(&self, daemon: &str) -> Option<Arc<dyn crate::exec::Ledger>> {
        Some(Arc::new(Buckets::new(self.clone(), daemon)))
    }

    fn board(&self, daemon: &str) -> Option<Shared> {
        let (board, notices) = crate::state::board::Questions::open(self.beside(), daemon);
        Some((Arc::new(board), notices))
    }

    fn sign_ins(&self, daemon: &str) -> Option<Arc<dyn SignIns>> {
        Some(Arc::new(Desk::new(self.beside(), daemon)))
    }

    fn audit_index(&self, daemon: &str) -> Option<Arc<dyn AuditIndex>> {
        Some(Arc::new(crate::state::audit::Index::new(
            self.beside(),
            daemon,
        )))
    }

    async fn sweep_more(&self, silent_since: i64, except: &str) -> Result<(), StateError> {
        sweep(self, silent_since, except).await?;
        crate::state::board::sweep(self, silent_since, except).await?;
        crate::state::signins::sweep(self, silent_since, except).await?;
        crate::state::audit::sweep(self).await
    }

    async fn ping(&self) -> Result<(), StateError> {
        self.client()
            .await?
            .batch_execute("SELECT 1")
            .await
            .map_err(fail)
    }

    async fn execute(&self, s: Statement) -> Result<u64, StateError> {
        let client = self.client().await?;
        client
            .execute(&dollars(&s.sql), &params(&s.params))
            .await
            .map_err(fail)
    }

    async fn records(&self, s: Statement) -> Result<Vec<TaskRecord>, StateError> {
        self.query(&s)
            .await?
            .iter()
            .map(|r| row(r)?.into_record())
            .collect()
    }

    async fn texts(&self, s: Statement) -> Result<Vec<Option<String>>, StateError> {
        self.query(&s)
            .await?
            .iter()
            .map(|r| r.try_get(0).map_err(fail))
            .collect()
    }

    async fn execute_all(&self, all: Vec<Statement>) -> Result<Vec<u64>, StateError> {
        // Each statement stands alone: a daemon dying between them leaves nothing half done.
        let mut changed = Vec::with_capacity(all.len());
        for s in all {
            changed.push(self.execute(s).await?);
        }
        Ok(changed)
    }
}
