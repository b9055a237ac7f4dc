//! Places for calls at once, leased from the fleet's ledger in blocks.
//!
//! Counting each call's start and end in the shared store cost two transactions a call. Instead
//! a daemon leases places from the ledger a block at a time (a twentieth of the limit, at least
//! one), runs its calls in them, and keeps up to a block of them spare until [`HOLD`] has passed
//! since its last call ended, so that a steady stream of calls reaches the store only when it
//! grows. How exact: the ledger never leases more places than the limit, so the fleet never runs
//! more calls at once than it allows; a call may be refused while places sit spare in other
//! daemons, at most `daemons × block` of them, each for at most [`HOLD`]. A daemon that dies keeps
//! its places until the fleet's sweep notices its silence.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::time::Instant;

use super::{HOLD, Ledger, LedgerError};

/// This daemon's places under each `running` key of the ledger.
pub(super) struct Slots {
    ledger: Arc<dyn Ledger>,
    leases: Mutex<HashMap<String, Lease>>,
}

/// Places leased under one key.
struct Lease {
    leased: u32,
    used: u32,
    /// The most places kept spare.
    block: u32,
    /// When a call last ended here.
    last: Instant,
    /// A task waits to give the spare places back once [`HOLD`] has passed since `last`.
    armed: bool,
}

impl Lease {
    fn spare(&self) -> u32 {
        self.leased.saturating_sub(self.used)
    }

    /// Give up the places spare beyond a block (two calls that leased at once hold two blocks).
    fn excess(&mut self) -> u32 {
        let over = self.spare().saturating_sub(self.block);
        self.leased -= over;
        over
    }
}

impl Slots {
    pub(super) fn new(ledger: Arc<dyn Ledger>) -> Self {
        Self {
            ledger,
            leases: Mutex::default(),
        }
    }

    pub(super) fn ledger(&self) -> &Arc<dyn Ledger> {
        &self.ledger
    }

    /// Take a place under `id` for one call, from this daemon's spare places or by leasing a
    /// block from the ledger; `false` when `most` calls already run fleet-wide.
    pub(super) async fn enter(self: &Arc<Self>, id: &str, most: u32) -> Result<bool, LedgerError> {
        if let Some(lease) = self.lock().get_mut(id)
            && lease.used < lease.leased
        {
            lease.used += 1;
            return Ok(true);
        }
        let block = block(most);
        let got = self.ledger.enter(id, most, block).await?;
        if got == 0 {
            return Ok(false);
        }
        let over = {
            let mut leases = self.lock();
            let lease = leases.entry(id.to_owned()).or_insert(Lease {
                leased: 0,
                used: 0,
                block,
                last: Instant::now(),
                armed: false,
            });
            lease.leased += got;
            lease.used += 1;
            lease.excess()
        };
        self.give_back(id.to_owned(), over);
        Ok(true)
    }

    /// A call under `id` ended: its place stays spare for a while (up to a block of them).
    pub(super) fn leave(self: &Arc<Self>, id: &str) {
        let (over, arm) = {
            let mut leases = self.lock();
            let Some(lease) = leases.get_mut(id) else {
                return;
            };
            lease.used = lease.used.saturating_sub(1);
            lease.last = Instant::now();
            let over = lease.excess();
            let arm = lease.spare() > 0 && !lease.armed;
            lease.armed |= arm;
            (over, arm)
        };
        self.give_back(id.to_owned(), over);
        if arm {
            self.expire(id.to_owned());
        }
    }

    /// Once [`HOLD`] has passed since a call under `id` last ended, give its spare places back.
    fn expire(self: &Arc<Self>, id: String) {
        let slots = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                let due = match slots.lock().get(&id) {
                    Some(lease) => lease.last + HOLD,
                    None => return,
                };
                tokio::time::sleep_until(due).await;
                let spare = {
                    let mut leases = slots.lock();
                    let Some(lease) = leases.get_mut(&id) else {
                        return;
                    };
                    if Instant::now() < lease.last + HOLD {
                        continue;
                    }
                    let spare = lease.spare();
                    lease.leased = lease.used;
                    lease.armed = false;
                    if lease.leased == 0 {
                        leases.remove(&id);
                    }
                    spare
                };
                slots.give_back(id, spare);
                return;
            }
        });
    }

    /// Give `places` under `id` back to the ledger, in the background.
    fn give_back(&self, id: String, places: u32) {
        if places == 0 {
            return;
        }
        let ledger = self.ledger.clone();
        tokio::spawn(async move {
            if let Err(e) = ledger.leave(&id, places).await {
                tracing::warn!("the fleet's quota ledger missed the end of {places} call(s): {e}");
            }
        });
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Lease>> {
        self.leases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Places leased and in use under `id`.
    #[cfg(test)]
    pub(super) fn held(&self, id: &str) -> (u32, u32) {
        self.lock()
            .get(id)
            .map_or((0, 0), |lease| (lease.leased, lease.used))
    }
}

/// How many places a daemon leases at once: a twentieth of the limit, at least one.
pub(super) fn block(most: u32) -> u32 {
    (most / 20).max(1)
}

#[cfg(test)]
mod tests;
