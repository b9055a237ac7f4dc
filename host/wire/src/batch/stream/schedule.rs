//! When each call of a stream may start, as its calls arrive one at a time. Pure: it is told which
//! calls arrived and which finished, and answers which may start; running them is the host's.
//!
//! The rule is [`partition`]'s, applied as calls come: calls start in index order; a shared
//! (read-only) call starts while earlier shared calls run, up to the concurrency limit; an
//! exclusive call starts once everything before it has finished, and nothing after it starts
//! before it has finished. Unlike [`partition`], shared calls are not held back to start in groups:
//! a shared call takes the place of one that finished, so `[read a, read b, read c]` with a limit
//! of 2 starts `c` as soon as `a` or `b` is done.
//!
//! [`partition`]: super::super::partition

use std::collections::{BTreeMap, HashMap};

use super::super::plan::Sharing;

/// The state of a stream's calls: which arrived, which run, which may start next.
#[derive(Debug, Clone)]
pub struct Schedule {
    limit: usize,
    /// The first index not started: every call before it has started.
    next: usize,
    /// Calls that arrived and have not started.
    waiting: BTreeMap<usize, Sharing>,
    /// Calls that run.
    running: HashMap<usize, Sharing>,
}

impl Schedule {
    /// A schedule of at most `limit` calls at once (0 is taken as 1).
    pub fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            next: 0,
            waiting: BTreeMap::new(),
            running: HashMap::new(),
        }
    }

    /// Call `index` arrived (its `Ready` event), shared or exclusive; returns the calls that may
    /// start now, in index order. A call that arrives twice, or after it started, is ignored.
    pub fn arrive(&mut self, index: usize, sharing: Sharing) -> Vec<usize> {
        if index >= self.next {
            self.waiting.entry(index).or_insert(sharing);
        }
        self.start()
    }

    /// Call `index` finished; returns the calls that may start now, in index order. A call that
    /// is not running is ignored.
    pub fn finish(&mut self, index: usize) -> Vec<usize> {
        if self.running.remove(&index).is_none() {
            return Vec::new();
        }
        self.start()
    }

    /// How many calls run.
    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// How many calls have started (calls `0..started()`).
    pub fn started(&self) -> usize {
        self.next
    }

    /// Starts every call the rule allows now.
    fn start(&mut self) -> Vec<usize> {
        let mut started = Vec::new();
        while let Some(&sharing) = self.waiting.get(&self.next) {
            let exclusive_running = self.running.values().any(|s| *s == Sharing::Exclusive);
            let may = match sharing {
                Sharing::Shared => !exclusive_running && self.running.len() < self.limit,
                Sharing::Exclusive => self.running.is_empty(),
            };
            if !may {
                break;
            }
            self.waiting.remove(&self.next);
            self.running.insert(self.next, sharing);
            started.push(self.next);
            self.next += 1;
        }
        started
    }
}

#[cfg(test)]
#[path = "schedule/tests.rs"]
mod tests;
