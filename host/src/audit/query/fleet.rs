//! A page of the fleet's audit index under the same filters as a page of the file: the index
//! narrows by time and tool (its indexes), the file's matcher decides the rest, and each page
//! reads at most [`SCAN_ROWS`] rows, so that a page never waits on the fleet's size.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::{Value, json};

use super::filter::{Filter, Matcher, ParamError};
use crate::audit::index::{AuditIndex, IndexError, Scan};
use crate::audit::record::AuditRecord;

/// Rows of the index one page reads at most.
pub const SCAN_ROWS: usize = 20_000;

/// Where a page of the fleet's records goes on: the last row it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetCursor {
    ts_ms: i64,
    call_id: String,
}

impl fmt::Display for FleetCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fleet~{}~{}", self.ts_ms, self.call_id)
    }
}

impl FromStr for FleetCursor {
    type Err = ParamError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ParamError::FleetCursor(s.chars().take(64).collect());
        let rest = s.strip_prefix("fleet~").ok_or_else(bad)?;
        let (ts, call_id) = rest.split_once('~').ok_or_else(bad)?;
        let ok_id = !call_id.is_empty() && call_id.len() <= 128;
        Ok(Self {
            ts_ms: ts.parse().map_err(|_| bad())?,
            call_id: ok_id.then(|| call_id.to_owned()).ok_or_else(bad)?,
        })
    }
}

/// One page of the fleet's records, newest first, each naming the daemon that wrote it.
#[derive(Debug, Serialize)]
pub struct FleetPage {
    /// The matching end records, as written, plus `daemon`.
    pub records: Vec<Value>,
    /// Where the next page starts; `None` once the oldest record was read.
    pub next: Option<String>,
    /// Rows of the index this page read.
    pub scanned_rows: usize,
}

/// A query string's request of the fleet's records: its filter, cursor and limit.
pub fn fleet_request(
    params: &super::Params,
) -> Result<(Filter, Option<FleetCursor>, usize), ParamError> {
    let without_cursor = super::Params {
        cursor: None,
        ..params.clone()
    };
    let request = without_cursor.parse()?;
    let cursor = params
        .cursor
        .as_deref()
        .filter(|c| !c.is_empty())
        .map(str::parse)
        .transpose()?;
    Ok((request.filter, cursor, request.limit))
}

/// Up to `limit` records of the fleet matching `filter`, from `cursor` (or the newest).
pub async fn fleet_page(
    index: &dyn AuditIndex,
    filter: &Filter,
    cursor: Option<FleetCursor>,
    limit: usize,
) -> Result<FleetPage, IndexError> {
    let scan = Scan {
        before: cursor.map(|c| (c.ts_ms, c.call_id)),
        since_ms: filter.since.map(|t| t.timestamp_millis()),
        // Up: a call that started within `until`'s millisecond but before it is still in.
        until_ms: filter
            .until
            .map(|t| (t.timestamp_micros() + 999).div_euclid(1000)),
        tool: filter.tool.clone(),
        rows: SCAN_ROWS,
    };
    let rows = index.scan(&scan).await?;
    let mut matcher = Matcher::new(filter);
    let mut records = Vec::new();
    let mut read = 0;
    for found in &rows {
        read += 1;
        let line = found.record.line.as_bytes();
        let matches = matcher.candidate(line)
            && serde_json::from_slice::<AuditRecord>(line).is_ok_and(|r| matcher.matches(&r));
        if matches && let Ok(mut value) = serde_json::from_slice::<Value>(line) {
            value["daemon"] = json!(found.daemon);
            records.push(value);
            if records.len() >= limit.max(1) {
                break;
            }
        }
    }
    let more = read < rows.len() || rows.len() == SCAN_ROWS;
    let next = rows[..read]
        .last()
        .filter(|_| more || records.len() >= limit.max(1))
        .map(|last| {
            FleetCursor {
                ts_ms: last.record.ts_ms,
                call_id: last.record.call_id.clone(),
            }
            .to_string()
        });
    Ok(FleetPage {
        records,
        next,
        scanned_rows: read,
    })
}

#[cfg(test)]
mod tests;
