//! The fleet's audit index in PostgreSQL: one row per end record (keyed by its call id, so that a
//! record shipped twice is kept once), indexed by start time and by tool and start time, which are
//! the only orders a page reads in. Rows older than [`KEPT_DAYS`] go with the sweep; each daemon's
//! JSONL file keeps everything.

use async_trait::async_trait;
use tokio_postgres::types::Type;

use super::StateError;
use super::postgres::{NOW, Postgres, fail};
use crate::audit::index::{AuditIndex, Found, IndexError, Indexed, Scan};

/// Days a record stays in the index.
pub(super) const KEPT_DAYS: i64 = 30;

/// The index as daemon `daemon` ships to it and reads it.
pub(super) struct Index {
    pg: Postgres,
    daemon: String,
}

impl Index {
    pub(super) fn new(pg: Postgres, daemon: &str) -> Self {
        Self {
            pg,
            daemon: daemon.to_owned(),
        }
    }
}

fn broken(e: impl std::fmt::Display) -> IndexError {
    IndexError(e.to_string())
}

#[async_trait]
impl AuditIndex for Index {
    async fn add(&self, records: &[Indexed]) -> Result<(), IndexError> {
        if records.is_empty() {
            return Ok(());
        }
        let ids: Vec<&str> = records.iter().map(|r| r.call_id.as_str()).collect();
        let ts: Vec<i64> = records.iter().map(|r| r.ts_ms).collect();
        let tools: Vec<&str> = records.iter().map(|r| r.tool.as_str()).collect();
        let lines: Vec<&str> = records.iter().map(|r| r.line.as_str()).collect();
        // One statement for the batch.
        self.pg
            .query_typed(
                "INSERT INTO audit_records (call_id, daemon, ts_ms, tool, line) \
                 SELECT c, $2, t, tl, l FROM UNNEST($1::text[], $3::int8[], $4::text[], $5::text[]) \
                   AS u(c, t, tl, l) \
                 ON CONFLICT (call_id) DO NOTHING",
                &[
                    (&ids, Type::TEXT_ARRAY),
                    (&self.daemon, Type::TEXT),
                    (&ts, Type::INT8_ARRAY),
                    (&tools, Type::TEXT_ARRAY),
                    (&lines, Type::TEXT_ARRAY),
                ],
            )
            .await
            .map(drop)
            .map_err(broken)
    }

    async fn scan(&self, scan: &Scan) -> Result<Vec<Found>, IndexError> {
        let (before_ts, before_id) = match &scan.before {
            Some((ts, id)) => (Some(*ts), Some(id.as_str())),
            None => (None, None),
        };
        let rows = i64::try_from(scan.rows).unwrap_or(i64::MAX);
        // Parameters that are NULL drop their condition: each statement is planned with its
        // values, so a page uses the (tool, time) or the time index and reads no more than it
        // returns.
        let found = self
            .pg
            .query_typed(
                "SELECT daemon, call_id, ts_ms, tool, line FROM audit_records \
                 WHERE ($1::int8 IS NULL OR (ts_ms, call_id) < ($1::int8, $2::text)) \
                   AND ($3::int8 IS NULL OR ts_ms >= $3::int8) \
                   AND ($4::int8 IS NULL OR ts_ms < $4::int8) \
                   AND ($5::text IS NULL OR tool = $5::text) \
                 ORDER BY ts_ms DESC, call_id DESC LIMIT $6",
                &[
                    (&before_ts, Type::INT8),
                    (&before_id, Type::TEXT),
                    (&scan.since_ms, Type::INT8),
                    (&scan.until_ms, Type::INT8),
                    (&scan.tool, Type::TEXT),
                    (&rows, Type::INT8),
                ],
            )
            .await
            .map_err(broken)?;
        found
            .iter()
            .map(|r| {
                Ok(Found {
                    daemon: r.try_get(0).map_err(broken)?,
                    record: Indexed {
                        call_id: r.try_get(1).map_err(broken)?,
                        ts_ms: r.try_get(2).map_err(broken)?,
                        tool: r.try_get(3).map_err(broken)?,
                        line: r.try_get(4).map_err(broken)?,
                    },
                })
            })
            .collect()
    }
}

/// Forget records older than [`KEPT_DAYS`].
pub(super) async fn sweep(pg: &Postgres) -> Result<(), StateError> {
    let sql = format!("DELETE FROM audit_records WHERE ts_ms < {NOW} - $1 * 86400000");
    pg.query_typed(&sql, &[(&KEPT_DAYS, Type::INT8)])
        .await
        .map(drop)
        .map_err(|e| fail(e.to_string()))
}
