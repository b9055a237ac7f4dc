//! The fleet's live calls in PostgreSQL: one row per daemon holding what it shows (its running
//! and recent calls), replaced when they change and announced on the questions' channel, so that
//! every console looks again; a cancel for another daemon's call is a notice to that daemon. A
//! silent daemon's row goes with the sweep.

use serde_json::Value;
use tokio_postgres::types::Type;

use super::StateError;
use super::postgres::{CHANNEL, NOW, Postgres, announce, fail};

/// Replace `daemon`'s row with `calls`, and say so.
pub(super) async fn show(pg: &Postgres, daemon: &str, calls: &Value) -> Result<(), StateError> {
    let body = calls.to_string();
    let sql = format!(
        "WITH q AS (INSERT INTO live_calls (daemon, body, updated_ms) VALUES ($1, $2, {NOW}) \
           ON CONFLICT (daemon) DO UPDATE SET body = EXCLUDED.body, updated_ms = EXCLUDED.updated_ms \
           RETURNING daemon, daemon AS id) {}",
        announce("calls")
    );
    pg.query_typed(&sql, &[(&daemon, Type::TEXT), (&body, Type::TEXT)])
        .await
        .map(drop)
}

/// Every other daemon's row.
pub(super) async fn elsewhere(
    pg: &Postgres,
    daemon: &str,
) -> Result<Vec<(String, Value)>, StateError> {
    let rows = pg
        .query_typed(
            "SELECT daemon, body FROM live_calls WHERE daemon <> $1 ORDER BY daemon",
            &[(&daemon, Type::TEXT)],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let body: String = r.try_get(1).map_err(fail)?;
            Ok((
                r.try_get(0).map_err(fail)?,
                serde_json::from_str(&body).map_err(fail)?,
            ))
        })
        .collect()
}

/// Tell the other daemon that shows call `id` running to cancel it for `operator`.
pub(super) async fn cancel(
    pg: &Postgres,
    daemon: &str,
    id: &str,
    operator: &str,
) -> Result<Option<String>, StateError> {
    let sql = format!(
        "WITH q AS (SELECT daemon FROM live_calls WHERE daemon <> $1 \
           AND (body::jsonb -> 'running') @> jsonb_build_array(jsonb_build_object('call_id', $2::text)) \
           LIMIT 1) \
         SELECT daemon, pg_notify('{CHANNEL}', json_build_object('event', 'cancel', \
           'daemon', daemon, 'id', $2::text, 'operator', $3::text)::text) FROM q"
    );
    let rows = pg
        .query_typed(
            &sql,
            &[
                (&daemon, Type::TEXT),
                (&id, Type::TEXT),
                (&operator, Type::TEXT),
            ],
        )
        .await?;
    rows.first().map(|r| r.try_get(0).map_err(fail)).transpose()
}

/// Forget the rows of daemons silent since `silent_since` (other than `except`).
pub(super) async fn sweep(
    pg: &Postgres,
    silent_since: i64,
    except: &str,
) -> Result<(), StateError> {
    pg.forget_silent("live_calls", silent_since, except).await
}
