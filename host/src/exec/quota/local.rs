//! One daemon's buckets and running counts, in its memory.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use toolhost_gate::quota::{Bucket, Quota};

use super::{Key, Refused, busy, out_of_calls, out_of_fuel};

#[derive(Default)]
struct Share {
    calls: Option<Bucket>,
    fuel: Option<Bucket>,
    running: u32,
}

/// The buckets of every key this daemon has seen.
#[derive(Default)]
pub(super) struct Local {
    shares: Mutex<HashMap<Key, Share>>,
}

impl Local {
    /// Admit a call under every quota in `wanted`, or take nothing and say which is spent. A fuel
    /// budget reserves the call's `fuel` limit, or what is left of it when that is less: the
    /// amount reserved, which the call may not exceed, comes back (`None` under no fuel budget).
    pub(super) fn admit(
        &self,
        wanted: &[(Key, Quota)],
        shown: &str,
        fuel: u64,
    ) -> Result<Option<u64>, Refused> {
        let now = Instant::now();
        let mut shares = self.lock();
        let mut reserve: Option<u64> = None;
        // Every check before any taking, so that a refusal takes nothing.
        for (key, q) in wanted {
            let share = shares.entry(key.clone()).or_default();
            if let Some(most) = q.in_flight
                && share.running >= most
            {
                return Err(busy(shown, key, most));
            }
            if let Some(rate) = &q.fuel {
                let bucket = share.fuel.get_or_insert_with(|| Bucket::full(rate, now));
                let left = bucket.level(rate, now).floor();
                if left < 1.0 {
                    return Err(out_of_fuel(shown, key, rate, rate.wait(left, 1.0)));
                }
                let most = reserve.unwrap_or(fuel).min(left as u64);
                reserve = Some(most);
            }
            if let Some(rate) = &q.calls {
                let mut trial = *share.calls.get_or_insert_with(|| Bucket::full(rate, now));
                if let Err(wait) = trial.take(rate, 1.0, now) {
                    return Err(out_of_calls(shown, key, rate, wait));
                }
            }
        }
        for (key, q) in wanted {
            let share = shares.get_mut(key).expect("checked above");
            if let (Some(rate), Some(bucket)) = (&q.calls, share.calls.as_mut()) {
                let _ = bucket.take(rate, 1.0, now);
            }
            if let (Some(rate), Some(bucket), Some(fuel)) = (&q.fuel, share.fuel.as_mut(), reserve)
            {
                bucket.charge(rate, fuel as f64, now);
            }
            share.running += 1;
        }
        Ok(reserve)
    }

    /// Settle the fuel reservations in `held`: `cost` (negative gives back) to each budget.
    pub(super) fn charge(&self, held: &[(Key, Quota)], cost: f64) {
        let now = Instant::now();
        let mut shares = self.lock();
        for (key, q) in held {
            if let (Some(rate), Some(share)) = (&q.fuel, shares.get_mut(key))
                && let Some(bucket) = share.fuel.as_mut()
            {
                bucket.charge(rate, cost, now);
            }
        }
    }

    /// The calls admitted under `held` ended.
    pub(super) fn release(&self, held: &[(Key, Quota)]) {
        let mut shares = self.lock();
        for (key, _) in held {
            if let Some(share) = shares.get_mut(key) {
                share.running = share.running.saturating_sub(1);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Share>> {
        self.shares.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{at_once, fuel};
    use super::*;

    fn key(tool: Option<&str>) -> Key {
        Key {
            who: "local".into(),
            tool: tool.map(str::to_owned),
        }
    }

    #[test]
    fn a_refusal_by_a_later_quota_takes_nothing_from_an_earlier_one() {
        let local = Local::default();
        let wanted = [(key(None), fuel(1_000)), (key(Some("grep")), at_once(1))];
        assert_eq!(local.admit(&wanted, "me", 400).ok().flatten(), Some(400));
        assert!(local.admit(&wanted, "me", 400).is_err(), "one at once");
        local.release(&wanted);
        local.charge(&wanted, -400.0);
        // Had the refused call reserved its 400, only 600 would be left.
        assert_eq!(
            local.admit(&wanted, "me", 1_000).ok().flatten(),
            Some(1_000)
        );
    }

    #[test]
    fn a_release_never_counts_below_zero() {
        let local = Local::default();
        let wanted = [(key(None), at_once(1))];
        local.release(&wanted);
        assert!(local.admit(&wanted, "me", 0).is_ok());
        local.release(&wanted);
        local.release(&wanted);
        assert!(local.admit(&wanted, "me", 0).is_ok());
        assert!(
            local.admit(&wanted, "me", 0).is_err(),
            "one running, at most one"
        );
    }

    #[test]
    fn fuel_given_back_never_fills_a_budget_past_its_size() {
        let local = Local::default();
        let wanted = [(key(None), fuel(1_000))];
        assert_eq!(local.admit(&wanted, "me", 100).ok().flatten(), Some(100));
        local.charge(&wanted, -5_000.0);
        assert_eq!(
            local.admit(&wanted, "me", 5_000).ok().flatten(),
            Some(1_000)
        );
    }
}
