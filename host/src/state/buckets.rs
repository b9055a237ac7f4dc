//! The fleet's quota buckets in PostgreSQL: each step one statement, atomic under concurrent
//! daemons (row locks; a waiting statement re-reads the row it waited for). Times come from the
//! database's clock, so daemons whose clocks differ still refill a bucket once.

use async_trait::async_trait;
use tokio_postgres::types::Type;
use toolhost_gate::quota::Rate;

use super::StateError;
use super::postgres::{NOW, Postgres, fail};
use crate::exec::{Ledger, LedgerError, Taken};

/// The bucket's level refilled to now: `$3` burst, `$4` tokens per millisecond.
fn refilled() -> String {
    format!(
        "LEAST($3::float8, quota_buckets.tokens \
         + GREATEST(0, {NOW} - quota_buckets.updated_ms) * $4::float8)"
    )
}

/// Take up to `$2` whole tokens (none if under one is there); a new bucket starts at the burst.
fn take_sql() -> String {
    let level = refilled();
    let take =
        format!("(CASE WHEN {level} >= 1 THEN LEAST($2::float8, FLOOR({level})) ELSE 0 END)");
    format!(
        "INSERT INTO quota_buckets AS quota_buckets (key, tokens, taken, updated_ms, burst, per_ms) \
         VALUES ($1, $3::float8 - LEAST($2::float8, FLOOR($3::float8)), \
                 LEAST($2::float8, FLOOR($3::float8)), {NOW}, $3::float8, $4::float8) \
         ON CONFLICT (key) DO UPDATE SET \
           tokens = {level} - {take}, taken = {take}, burst = $3::float8, per_ms = $4::float8, \
           updated_ms = GREATEST(quota_buckets.updated_ms, {NOW}) \
         RETURNING taken, tokens"
    )
}

/// Spend `$2` (below zero allowed; a negative cost gives back, up to the burst).
fn charge_sql() -> String {
    let level = refilled();
    format!(
        "INSERT INTO quota_buckets AS quota_buckets (key, tokens, updated_ms, burst, per_ms) \
         VALUES ($1, LEAST($3::float8, $3::float8 - $2::float8), {NOW}, $3::float8, $4::float8) \
         ON CONFLICT (key) DO UPDATE SET \
           tokens = LEAST($3::float8, {level} - $2::float8), burst = $3::float8, per_ms = $4::float8, \
           updated_ms = GREATEST(quota_buckets.updated_ms, {NOW})"
    )
}

/// Lease daemon `$3` up to `$4` places under `$1`, as many as keep the fleet's total at `$2` or
/// under; returns how many (no row when none). `taken` carries the count from the update to the
/// result, as in [`take_sql`].
fn enter_sql() -> String {
    format!(
        "WITH up AS ( \
           INSERT INTO quota_buckets AS quota_buckets (key, tokens, taken, updated_ms, running) \
           VALUES ($1, 0, LEAST($4::bigint, $2::bigint), {NOW}, LEAST($4::bigint, $2::bigint)) \
           ON CONFLICT (key) DO UPDATE SET \
             taken = LEAST($4::bigint, $2::bigint - quota_buckets.running), \
             running = quota_buckets.running + LEAST($4::bigint, $2::bigint - quota_buckets.running) \
             WHERE quota_buckets.running < $2::bigint \
           RETURNING key, taken::bigint AS got), \
         mine AS ( \
           INSERT INTO quota_running AS quota_running (key, daemon, running) \
           SELECT key, $3, got FROM up \
           ON CONFLICT (key, daemon) DO UPDATE SET running = quota_running.running + EXCLUDED.running) \
         SELECT got FROM up"
    )
}

/// Give back `$3` places of daemon `$2` under `$1` (never more than it holds, never ones the
/// sweep already cleared).
const LEAVE: &str = "WITH mine AS ( \
    UPDATE quota_running SET running = running - $3::bigint \
    WHERE key = $1 AND daemon = $2 AND running >= $3::bigint RETURNING key) \
  UPDATE quota_buckets SET running = GREATEST(0, running - $3::bigint) \
  WHERE key IN (SELECT key FROM mine)";

/// Clear the places held by daemons silent since `$1` (other than `$2`) in one step.
const SWEEP: &str = "WITH gone AS ( \
    DELETE FROM quota_running WHERE daemon <> $2 \
      AND daemon NOT IN (SELECT id FROM daemons WHERE heartbeat_ms >= $1) \
    RETURNING key, running), \
  sums AS (SELECT key, SUM(running) AS n FROM gone GROUP BY key) \
  UPDATE quota_buckets SET running = GREATEST(0, quota_buckets.running - sums.n) \
  FROM sums WHERE quota_buckets.key = sums.key";

/// Forget the rows that say nothing a missing row would not: buckets refilled to their burst with
/// no call running (a new bucket starts full) and counts of places no longer held. Only a row
/// that knows its burst is judged full (the `running` keys have none and hold places only); the
/// statements re-check each row under its lock, so a daemon writing it meanwhile keeps it.
fn idle_sql() -> [String; 2] {
    [
        "DELETE FROM quota_running WHERE running = 0".to_owned(),
        format!(
            "DELETE FROM quota_buckets WHERE running = 0 AND ( \
               (burst IS NULL AND key LIKE '[\"running\",%') \
               OR (burst IS NOT NULL \
                   AND tokens + GREATEST(0, {NOW} - updated_ms) * per_ms >= burst))"
        ),
    ]
}

/// The ledger of one daemon over the shared database.
pub(super) struct Buckets {
    pg: Postgres,
    daemon: String,
    take: String,
    charge: String,
    enter: String,
}

impl Buckets {
    pub(super) fn new(pg: Postgres, daemon: &str) -> Self {
        Self {
            pg,
            daemon: daemon.to_owned(),
            take: take_sql(),
            charge: charge_sql(),
            enter: enter_sql(),
        }
    }
}

fn per_ms(rate: &Rate) -> f64 {
    rate.per_second() / 1000.0
}

fn ledger_error(e: StateError) -> LedgerError {
    LedgerError(e.to_string())
}

#[async_trait]
impl Ledger for Buckets {
    async fn take(&self, key: &str, rate: &Rate, most: u64) -> Result<Taken, LedgerError> {
        let (most, burst, per_ms) = (most as f64, rate.burst as f64, per_ms(rate));
        let rows = self
            .pg
            .query_typed(
                &self.take,
                &[
                    (&key, Type::TEXT),
                    (&most, Type::FLOAT8),
                    (&burst, Type::FLOAT8),
                    (&per_ms, Type::FLOAT8),
                ],
            )
            .await
            .map_err(ledger_error)?;
        let row = rows
            .first()
            .ok_or_else(|| LedgerError("the quota bucket was not written".into()))?;
        let taken: f64 = row.try_get(0).map_err(|e| ledger_error(fail(e)))?;
        let level: f64 = row.try_get(1).map_err(|e| ledger_error(fail(e)))?;
        Ok(Taken {
            got: taken.max(0.0) as u64,
            level,
        })
    }

    async fn charge(&self, key: &str, rate: &Rate, cost: f64) -> Result<(), LedgerError> {
        let (burst, per_ms) = (rate.burst as f64, per_ms(rate));
        self.pg
            .query_typed(
                &self.charge,
                &[
                    (&key, Type::TEXT),
                    (&cost, Type::FLOAT8),
                    (&burst, Type::FLOAT8),
                    (&per_ms, Type::FLOAT8),
                ],
            )
            .await
            .map_err(ledger_error)
            .map(drop)
    }

    async fn enter(&self, key: &str, most: u32, want: u32) -> Result<u32, LedgerError> {
        let (most, want) = (i64::from(most), i64::from(want));
        let rows = self
            .pg
            .query_typed(
                &self.enter,
                &[
                    (&key, Type::TEXT),
                    (&most, Type::INT8),
                    (&self.daemon, Type::TEXT),
                    (&want, Type::INT8),
                ],
            )
            .await
            .map_err(ledger_error)?;
        let Some(row) = rows.first() else {
            return Ok(0);
        };
        let got: i64 = row.try_get(0).map_err(|e| ledger_error(fail(e)))?;
        Ok(u32::try_from(got.max(0)).unwrap_or(0))
    }

    async fn leave(&self, key: &str, places: u32) -> Result<(), LedgerError> {
        let places = i64::from(places);
        self.pg
            .query_typed(
                LEAVE,
                &[
                    (&key, Type::TEXT),
                    (&self.daemon, Type::TEXT),
                    (&places, Type::INT8),
                ],
            )
            .await
            .map_err(ledger_error)
            .map(drop)
    }
}

/// Clear the places held by daemons silent since `silent_since`, other than `except`, then the
/// rows of idle, full buckets.
pub(super) async fn sweep(
    pg: &Postgres,
    silent_since: i64,
    except: &str,
) -> Result<(), StateError> {
    pg.query_typed(SWEEP, &[(&silent_since, Type::INT8), (&except, Type::TEXT)])
        .await?;
    for sql in idle_sql() {
        pg.query_typed(&sql, &[]).await?;
    }
    Ok(())
}
