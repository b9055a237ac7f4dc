//! The index in memory, with the store's semantics (each call once, newest first by start time
//! and call id, the scan's conditions), for the tests of shipping and of fleet pages.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;

use super::{AuditIndex, Found, IndexError, Indexed, Scan};

/// Rows by `(ts_ms, call_id)`; `down` makes every call fail.
#[derive(Default)]
pub(crate) struct Memory {
    pub(crate) rows: Mutex<BTreeMap<(i64, String), Found>>,
    pub(crate) down: AtomicBool,
    /// Rows the scans returned, in all.
    pub(crate) scanned: AtomicUsize,
    /// The daemon that ships.
    pub(crate) daemon: String,
}

impl Memory {
    pub(crate) fn of(daemon: &str) -> Self {
        Self {
            daemon: daemon.to_owned(),
            ..Self::default()
        }
    }

    pub(crate) fn ids(&self) -> Vec<String> {
        let rows = self.rows.lock().unwrap();
        rows.keys().map(|(_, id)| id.clone()).collect()
    }
}

#[async_trait]
impl AuditIndex for Memory {
    async fn add(&self, records: &[Indexed]) -> Result<(), IndexError> {
        if self.down.load(Ordering::Acquire) {
            return Err(IndexError("down".into()));
        }
        let mut rows = self.rows.lock().unwrap();
        for r in records {
            if rows.values().any(|f| f.record.call_id == r.call_id) {
                continue;
            }
            let found = Found {
                daemon: self.daemon.clone(),
                record: r.clone(),
            };
            rows.insert((r.ts_ms, r.call_id.clone()), found);
        }
        Ok(())
    }

    async fn scan(&self, scan: &Scan) -> Result<Vec<Found>, IndexError> {
        if self.down.load(Ordering::Acquire) {
            return Err(IndexError("down".into()));
        }
        let rows = self.rows.lock().unwrap();
        let found: Vec<Found> = rows
            .iter()
            .rev()
            .filter(|((ts, id), _)| {
                scan.before
                    .as_ref()
                    .is_none_or(|(bt, bid)| (*ts, id) < (*bt, bid))
            })
            .filter(|((ts, _), _)| scan.since_ms.is_none_or(|s| *ts >= s))
            .filter(|((ts, _), _)| scan.until_ms.is_none_or(|u| *ts < u))
            .filter(|(_, f)| scan.tool.as_ref().is_none_or(|t| *t == f.record.tool))
            .take(scan.rows)
            .map(|(_, f)| f.clone())
            .collect();
        self.scanned.fetch_add(found.len(), Ordering::Relaxed);
        Ok(found)
    }
}
