//! Each caller's fair share, enforced. A caller's `[[callers]] quota` covers all its calls; a
//! tool's `quota` covers each caller's calls of that tool. Both are checked before the call does
//! any work and taken together or not at all. A fuel budget is reserved at admission, the call's
//! fuel limit or what is left of the budget when that is less, and the call may use no more than
//! it reserved; the unused part goes back when it ends. Calls started together therefore never
//! spend more than the budget holds. Refusals are `rate_limited` with when to retry.
//!
//! One daemon keeps its buckets in memory ([`local`]). A fleet that shares a PostgreSQL state
//! store enforces one budget across every daemon ([`fleet`]), through a [`Ledger`] the store
//! provides; until the store is reachable, or while it fails, each daemon enforces the budget
//! alone.

mod fleet;
mod local;
mod slots;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use toolhost_gate::caller::Caller;
use toolhost_gate::quota::{Quota, Rate, whole_seconds};

use self::fleet::Fleet;
use self::local::Local;
use self::slots::Slots;

/// Buckets shared by every daemon of a fleet, kept where all of them see them (the state store).
/// Keys are opaque; every method is one atomic step.
#[async_trait]
pub trait Ledger: Send + Sync {
    /// Refill `key`'s bucket at `rate` (up to its burst; a new bucket starts full), then take as
    /// many whole tokens as are there, up to `most` (none if fewer than one is there). `most` 0
    /// only reads the level.
    async fn take(&self, key: &str, rate: &Rate, most: u64) -> Result<Taken, LedgerError>;
    /// Refill, then spend `cost` (the level may fall below zero; a negative cost gives back).
    async fn charge(&self, key: &str, rate: &Rate, cost: f64) -> Result<(), LedgerError>;
    /// Lease this daemon up to `want` more places for calls running under `key`, as many as
    /// keep the fleet's total at `most` or under; how many it got (none when all are taken).
    async fn enter(&self, key: &str, most: u32, want: u32) -> Result<u32, LedgerError>;
    /// Give `places` of this daemon's under `key` back.
    async fn leave(&self, key: &str, places: u32) -> Result<(), LedgerError>;
}

/// The longest a daemon keeps what it took from the fleet's ledger and has not used: call
/// tokens reserved, places for calls at once left spare.
pub(super) const HOLD: Duration = Duration::from_secs(1);

/// What [`Ledger::take`] took, and the level it left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Taken {
    /// Whole tokens taken.
    pub got: u64,
    /// The level after.
    pub level: f64,
}

/// The ledger could not answer (its store is down).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LedgerError(pub String);

/// Whose share, of what: a caller's own (`tool` none) or its share of one tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    who: String,
    tool: Option<String>,
}

impl Key {
    /// The ledger's name for this key's bucket of `what` (unambiguous whatever the names hold).
    fn ledger(&self, what: &str) -> String {
        serde_json::json!([what, self.who, self.tool]).to_string()
    }

    /// " of 'TOOL'" for a tool's share, nothing for the caller's own.
    fn of(&self) -> String {
        self.tool
            .as_ref()
            .map_or_else(String::new, |t| format!(" of '{t}'"))
    }
}

/// The buckets of every caller and tool that has a quota.
#[derive(Default)]
pub(crate) struct Quotas {
    local: Arc<Local>,
    fleet: OnceLock<Fleet>,
}

/// Why a call was refused, and when it could be made.
pub(crate) struct Refused {
    pub(crate) message: String,
    pub(crate) retry_after: Option<Duration>,
}

/// A call admitted under its quotas: counted as running until dropped; its fuel reservation
/// settled at the end ([`Held::settle`]), or given back whole if it never ran.
pub(crate) struct Held {
    held: Vec<(Key, Quota)>,
    by: Keeper,
    /// Fuel reserved from every fuel budget in `held`, and not settled yet.
    fuel: Option<u64>,
}

/// Who keeps a held call's counts.
enum Keeper {
    /// The call ran under no quota.
    Nothing,
    Local(Arc<Local>),
    Fleet(Arc<Slots>),
}

impl Quotas {
    /// From now on, share every budget through `ledger` (the fleet's state store).
    pub(crate) fn share(&self, ledger: Arc<dyn Ledger>) {
        let _ = self.fleet.set(Fleet::new(ledger));
    }

    /// Admit a call of `tool` by `caller` under the caller's quota and the tool's, or say which
    /// is spent and when to retry; a call whose fuel limit is `fuel` reserves it (or what is left)
    /// from each fuel budget ([`Held::fuel`]). Without either quota, nothing is looked at or kept.
    pub(crate) async fn admit(
        &self,
        caller: Option<&Caller>,
        tool: &str,
        (of_caller, of_tool): (Option<&Quota>, Option<&Quota>),
        fuel: u64,
    ) -> Result<Held, Refused> {
        if of_caller.is_none() && of_tool.is_none() {
            return Ok(Held {
                held: Vec::new(),
                by: Keeper::Nothing,
                fuel: None,
            });
        }
        let who = toolhost_gate::task::owner_of(caller);
        let shown = super::live::caller_name(caller);
        let mut wanted = Vec::new();
        if let Some(q) = of_caller {
            let key = Key {
                who: who.clone(),
                tool: None,
            };
            wanted.push((key, *q));
        }
        if let Some(q) = of_tool {
            let key = Key {
                who,
                tool: Some(tool.to_owned()),
            };
            wanted.push((key, *q));
        }
        if let Some(fleet) = self.fleet.get() {
            match fleet.admit(&wanted, &shown, fuel).await {
                Ok(Ok(reserved)) => {
                    return Ok(Held {
                        held: wanted,
                        by: Keeper::Fleet(fleet.slots().clone()),
                        fuel: reserved,
                    });
                }
                Ok(Err(refused)) => return Err(refused),
                Err(e) => tracing::warn!(
                    "the fleet's quota ledger did not answer ({e}); this daemon enforces the \
                     quota alone for this call"
                ),
            }
        }
        let reserved = self.local.admit(&wanted, &shown, fuel)?;
        Ok(Held {
            held: wanted,
            by: Keeper::Local(self.local.clone()),
            fuel: reserved,
        })
    }
}

impl Held {
    /// The most fuel the call may use: what it reserved, when it runs under a fuel budget.
    pub(crate) fn fuel(&self) -> Option<u64> {
        self.fuel
    }

    /// The call used `used` fuel: give back the rest of its reservation to every fuel budget.
    pub(crate) fn settle(&mut self, used: u64) {
        let Some(reserved) = self.fuel.take() else {
            return;
        };
        self.give_back(reserved as f64 - used as f64);
    }

    /// Give `amount` back to every fuel budget held (a negative amount spends).
    fn give_back(&self, amount: f64) {
        if amount == 0.0 {
            return;
        }
        match &self.by {
            Keeper::Nothing => {}
            Keeper::Local(local) => local.charge(&self.held, -amount),
            Keeper::Fleet(slots) => {
                for (key, q) in &self.held {
                    if let Some(rate) = q.fuel {
                        fleet::give_back(slots.ledger().clone(), key.ledger("fuel"), rate, amount);
                    }
                }
            }
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.held.is_empty() {
            return;
        }
        // A call that never ran (refused by a later stage) used none of what it reserved.
        if let Some(reserved) = self.fuel.take() {
            self.give_back(reserved as f64);
        }
        match &self.by {
            Keeper::Nothing => {}
            Keeper::Local(local) => local.release(&self.held),
            Keeper::Fleet(slots) => {
                for (key, q) in &self.held {
                    if q.in_flight.is_some() {
                        slots.leave(&key.ledger("running"));
                    }
                }
            }
        }
    }
}

/// "second", "minute", "hour" or "N s".
fn window(rate: &Rate) -> String {
    match rate.per.as_secs() {
        1 => "second".to_owned(),
        60 => "minute".to_owned(),
        3600 => "hour".to_owned(),
        s => format!("{s} s"),
    }
}

/// Refused: `shown` has `most` calls of `key` running.
fn busy(shown: &str, key: &Key, most: u32) -> Refused {
    Refused {
        message: format!(
            "Rate limited: {shown} already has {most} call(s){} running, the most allowed at \
             once; retry when one ends.",
            key.of()
        ),
        retry_after: None,
    }
}

/// Refused: `shown` used its fuel under `key`.
fn out_of_fuel(shown: &str, key: &Key, rate: &Rate, wait: Duration) -> Refused {
    refused(
        format!(
            "{shown} used its fuel budget{} ({} per {})",
            key.of(),
            rate.amount,
            window(rate)
        ),
        wait,
    )
}

/// Refused: `shown` started all the calls `key` allows for now.
fn out_of_calls(shown: &str, key: &Key, rate: &Rate, wait: Duration) -> Refused {
    refused(
        format!(
            "{shown} may start {} call(s){} per {} (bursts of {})",
            rate.amount,
            key.of(),
            window(rate),
            rate.burst
        ),
        wait,
    )
}

fn refused(what: String, wait: Duration) -> Refused {
    Refused {
        message: format!("Rate limited: {what}; retry in {} s.", whole_seconds(wait)),
        retry_after: Some(wait),
    }
}

#[cfg(test)]
mod tests;
