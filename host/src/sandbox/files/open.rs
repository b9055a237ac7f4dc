//! The descriptors one call holds, each with its unit of the daemon-wide [`FileBudget`], so no
//! call can take the descriptors others need.

use std::collections::HashMap;
use std::sync::Arc;

use wasmtime_wasi::p2::{FsError, FsResult};

use super::super::budget::{BudgetExhausted, FileBudget, FileUnit};

/// The descriptors one call holds, each with its unit of the budget; dropped with the call's store.
pub(crate) struct OpenFiles {
    budget: Arc<FileBudget>,
    /// Units of the granted directories, preopened for the call.
    preopens: Vec<FileUnit>,
    /// Units of descriptors the guest opened, by table index; given back when the guest drops one.
    pub(super) opened: HashMap<u32, FileUnit>,
}

impl OpenFiles {
    /// Nothing held yet.
    pub(crate) fn new(budget: Arc<FileBudget>) -> Self {
        Self {
            budget,
            preopens: Vec::new(),
            opened: HashMap::new(),
        }
    }

    /// Take the units of `count` preopened directories, before they are opened.
    pub(crate) fn preopen(&mut self, count: usize) -> Result<(), BudgetExhausted> {
        for _ in 0..count {
            let unit = self.budget.take(self.held())?;
            self.preopens.push(unit);
        }
        Ok(())
    }

    pub(super) fn held(&self) -> usize {
        self.preopens.len() + self.opened.len()
    }

    /// A unit for one more descriptor, or why there is none.
    pub(super) fn unit(&self) -> Result<FileUnit, BudgetExhausted> {
        self.budget.take(self.held())
    }

    pub(super) fn take(&self) -> FsResult<FileUnit> {
        self.budget.take(self.held()).map_err(FsError::trap)
    }
}
