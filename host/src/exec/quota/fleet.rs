//! One budget for a whole fleet, through the [`Ledger`] every daemon shares.
//!
//! How exact: every call admitted anywhere took a token the ledger gave out atomically, so the
//! fleet never starts more calls than a bucket allows (its burst plus its rate over the time
//! passed). To spare a round trip per call, a daemon takes tokens in blocks (a twentieth of the
//! burst, at least one) and keeps an unused reservation at most [`HOLD`], then gives it back:
//! a bucket may refuse while tokens sit in other daemons' reservations, by at most
//! `daemons × (block − 1)` calls. Places for calls at once are leased in blocks too (see
//! [`super::slots`]). A fuel budget is reserved
//! at admission (the call's fuel limit, or what is left), the call runs under that much at most,
//! and the unused part goes back at its end: calls running together, on any daemon, never
//! overdraw it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use toolhost_gate::quota::{Quota, Rate};

use super::slots::Slots;
use super::{HOLD, Key, Ledger, LedgerError, Refused, busy, out_of_calls, out_of_fuel};

/// Tokens this daemon took from the ledger and has not used yet.
struct Reserve {
    tokens: u64,
    until: Instant,
}

/// The fleet's budgets as this daemon sees them.
pub(super) struct Fleet {
    ledger: Arc<dyn Ledger>,
    reserved: Mutex<HashMap<String, Reserve>>,
    slots: Arc<Slots>,
}

impl Fleet {
    pub(super) fn new(ledger: Arc<dyn Ledger>) -> Self {
        Self {
            slots: Arc::new(Slots::new(ledger.clone())),
            ledger,
            reserved: Mutex::default(),
        }
    }

    /// The places for calls at once this daemon holds; a held call gives its place back there.
    pub(super) fn slots(&self) -> &Arc<Slots> {
        &self.slots
    }

    /// Admit a call under every quota in `wanted` fleet-wide, or undo what was taken and say
    /// which is spent. A ledger that fails is an error (the caller falls back to this daemon's
    /// own buckets), after undoing what it can.
    pub(super) async fn admit(
        &self,
        wanted: &[(Key, Quota)],
        shown: &str,
        fuel: u64,
    ) -> Result<Result<Option<u64>, Refused>, LedgerError> {
        let mut took = Took::default();
        let result = self.admit_each(wanted, shown, fuel, &mut took).await;
        let reserve = match &result {
            Ok(Ok(())) => took.fuel.iter().map(|(_, _, got)| *got).min(),
            _ => None,
        };
        if !matches!(result, Ok(Ok(()))) {
            for (key, rate) in took.calls {
                self.put_back(key, &rate);
            }
            for id in took.entered {
                self.slots.leave(&id);
            }
        }
        // Each fuel budget keeps what the smallest reservation allows (all of it back when refused).
        for (key, rate, got) in took.fuel {
            let over = got - reserve.unwrap_or(0);
            if over > 0 {
                give_back(self.ledger.clone(), key, rate, over as f64);
            }
        }
        result.map(|r| r.map(|()| reserve))
    }

    async fn admit_each(
        &self,
        wanted: &[(Key, Quota)],
        shown: &str,
        fuel: u64,
        took: &mut Took,
    ) -> Result<Result<(), Refused>, LedgerError> {
        for (key, q) in wanted {
            if let Some(most) = q.in_flight {
                let id = key.ledger("running");
                if !self.slots.enter(&id, most).await? {
                    return Ok(Err(busy(shown, key, most)));
                }
                took.entered.push(id);
            }
            if let Some(rate) = &q.fuel {
                let id = key.ledger("fuel");
                let most = took
                    .fuel
                    .iter()
                    .map(|(_, _, got)| *got)
                    .fold(fuel, u64::min);
                let taken = self.ledger.take(&id, rate, most).await?;
                if taken.got == 0 {
                    let wait = rate.wait(taken.level, 1.0);
                    return Ok(Err(out_of_fuel(shown, key, rate, wait)));
                }
                took.fuel.push((id, *rate, taken.got));
            }
            if let Some(rate) = &q.calls {
                let id = key.ledger("calls");
                if let Err(wait) = self.take_call(&id, rate).await? {
                    return Ok(Err(out_of_calls(shown, key, rate, wait)));
                }
                took.calls.push((id, *rate));
            }
        }
        Ok(Ok(()))
    }

    /// One call's token from this daemon's reservation, or from the ledger (reserving a block).
    async fn take_call(&self, id: &str, rate: &Rate) -> Result<Result<(), Duration>, LedgerError> {
        let now = Instant::now();
        let expired = {
            let mut reserved = self.lock();
            match reserved.get_mut(id) {
                Some(r) if r.until > now && r.tokens > 0 => {
                    r.tokens -= 1;
                    return Ok(Ok(()));
                }
                Some(_) => reserved.remove(id).map_or(0, |r| r.tokens),
                None => 0,
            }
        };
        if expired > 0 {
            self.give_back(id.to_owned(), rate, expired);
        }
        let taken = self.ledger.take(id, rate, block(rate)).await?;
        if taken.got == 0 {
            return Ok(Err(rate.wait(taken.level, 1.0)));
        }
        if taken.got > 1 {
            let mut reserved = self.lock();
            let r = reserved.entry(id.to_owned()).or_insert(Reserve {
                tokens: 0,
                until: now + HOLD,
            });
            r.tokens += taken.got - 1;
        }
        Ok(Ok(()))
    }

    /// A token taken for a call that was then refused goes back to the reservation it came from
    /// (or to the ledger, when that reservation is gone).
    fn put_back(&self, id: String, rate: &Rate) {
        let mut reserved = self.lock();
        match reserved.get_mut(&id) {
            Some(r) if r.until > Instant::now() => r.tokens += 1,
            _ => {
                drop(reserved);
                self.give_back(id, rate, 1);
            }
        }
    }

    fn give_back(&self, id: String, rate: &Rate, tokens: u64) {
        give_back(self.ledger.clone(), id, *rate, tokens as f64);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Reserve>> {
        self.reserved.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What an admission took so far, to undo when it is refused.
#[derive(Default)]
struct Took {
    /// `running` counts entered.
    entered: Vec<String>,
    /// Call tokens taken.
    calls: Vec<(String, Rate)>,
    /// Fuel reserved from each fuel budget.
    fuel: Vec<(String, Rate, u64)>,
}

/// Give `amount` back to `id`'s bucket, in the background (nothing waits on the store for it).
pub(super) fn give_back(ledger: Arc<dyn Ledger>, id: String, rate: Rate, amount: f64) {
    tokio::spawn(async move {
        if let Err(e) = ledger.charge(&id, &rate, -amount).await {
            tracing::debug!("giving an unused reservation back to the fleet's quota ledger: {e}");
        }
    });
}

/// How many tokens a daemon reserves at once: a twentieth of the burst, at least one.
fn block(rate: &Rate) -> u64 {
    (rate.burst / 20).max(1)
}

#[cfg(test)]
mod tests;
