//! A fleet's ledger for the tests, with the state store's semantics.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use toolhost_gate::quota::{Bucket, Rate};

use super::super::{Ledger, LedgerError, Taken};

/// A fleet's ledger in memory, as the state store keeps it: buckets refilled by the clock, counts
/// of running calls; every step atomic. `down` makes every step fail.
#[derive(Default)]
pub(in crate::exec::quota) struct FakeLedger {
    buckets: Mutex<HashMap<String, Bucket>>,
    running: Mutex<HashMap<String, u32>>,
    pub(in crate::exec::quota) down: AtomicBool,
    /// `take`s asked so far.
    pub(in crate::exec::quota) takes: AtomicUsize,
    /// `enter`s asked so far.
    pub(in crate::exec::quota) enters: AtomicUsize,
}

impl FakeLedger {
    fn up(&self) -> Result<(), LedgerError> {
        if self.down.load(Ordering::Acquire) {
            return Err(LedgerError("the store is down".into()));
        }
        Ok(())
    }

    /// The level of `key`'s bucket now (`None` before its first use).
    pub(in crate::exec::quota) fn level(&self, key: &str, rate: &Rate) -> Option<f64> {
        let mut buckets = self.buckets.lock().unwrap();
        buckets.get_mut(key).map(|b| b.level(rate, Instant::now()))
    }

    /// Places leased under `key`, fleet-wide.
    pub(in crate::exec::quota) fn running(&self, key: &str) -> u32 {
        self.running.lock().unwrap().get(key).copied().unwrap_or(0)
    }
}

#[async_trait]
impl Ledger for FakeLedger {
    async fn take(&self, key: &str, rate: &Rate, most: u64) -> Result<Taken, LedgerError> {
        self.up()?;
        self.takes.fetch_add(1, Ordering::AcqRel);
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap();
        let bucket = buckets
            .entry(key.to_owned())
            .or_insert_with(|| Bucket::full(rate, now));
        let level = bucket.level(rate, now);
        let got = (level.max(0.0).floor() as u64).min(most);
        bucket.charge(rate, got as f64, now);
        Ok(Taken {
            got,
            level: bucket.level(rate, now),
        })
    }

    async fn charge(&self, key: &str, rate: &Rate, cost: f64) -> Result<(), LedgerError> {
        self.up()?;
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap();
        buckets
            .entry(key.to_owned())
            .or_insert_with(|| Bucket::full(rate, now))
            .charge(rate, cost, now);
        Ok(())
    }

    async fn enter(&self, key: &str, most: u32, want: u32) -> Result<u32, LedgerError> {
        self.up()?;
        self.enters.fetch_add(1, Ordering::AcqRel);
        let mut running = self.running.lock().unwrap();
        let n = running.entry(key.to_owned()).or_default();
        let got = want.min(most.saturating_sub(*n));
        *n += got;
        Ok(got)
    }

    async fn leave(&self, key: &str, places: u32) -> Result<(), LedgerError> {
        self.up()?;
        let mut running = self.running.lock().unwrap();
        if let Some(n) = running.get_mut(key) {
            *n = n.saturating_sub(places);
        }
        Ok(())
    }
}
