//! Each caller's fair share, enforced: the token buckets and running counts of one daemon. A
//! caller's `[[callers]] quota` covers all its calls; a tool's `quota` covers each caller's calls
//! of that tool. Both are checked before the call does any work and taken together or not at
//! all; fuel is charged when the call ends. Refusals are `rate_limited` with when to retry.
//!
//! The buckets live in this daemon's memory: N daemons behind a balancer each give a caller its
//! whole share (a fleet-wide budget through the state store is still to come).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use toolhost_policy::caller::Caller;
use toolhost_policy::quota::{Bucket, Quota, Rate, whole_seconds};

/// Whose share, of what: a caller's own (`tool` none) or its share of one tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    who: String,
    tool: Option<String>,
}

#[derive(Default)]
struct Share {
    calls: Option<Bucket>,
    fuel: Option<Bucket>,
    running: u32,
}

/// The buckets of every caller and tool that has a quota.
#[derive(Default)]
pub(crate) struct Quotas {
    shares: Mutex<HashMap<Key, Share>>,
}

/// Why a call was refused, and when it could be made.
pub(crate) struct Refused {
    pub(crate) message: String,
    pub(crate) retry_after: Option<Duration>,
}

/// A call admitted under its quotas: counted as running until dropped; charged its fuel at the end.
pub(crate) struct Held<'a> {
    quotas: &'a Quotas,
    held: Vec<(Key, Quota)>,
}

impl Quotas {
    /// Admit a call of `tool` by `caller` under the caller's quota and the tool's, or say which
    /// is spent and when to retry. Without either, nothing is looked at or kept.
    pub(crate) fn admit(
        &self,
        caller: Option<&Caller>,
        tool: &str,
        (of_caller, of_tool): (Option<&Quota>, Option<&Quota>),
    ) -> Result<Held<'_>, Refused> {
        if of_caller.is_none() && of_tool.is_none() {
            return Ok(Held {
                quotas: self,
                held: Vec::new(),
            });
        }
        let who = toolhost_policy::task::owner_of(caller);
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
        let now = Instant::now();
        let mut shares = self.shares.lock().unwrap_or_else(PoisonError::into_inner);
        // Every check before any taking, so that a refusal takes nothing.
        for (key, q) in &wanted {
            let share = shares.entry(key.clone()).or_default();
            let what = match &key.tool {
                None => String::new(),
                Some(t) => format!(" of '{t}'"),
            };
            if let Some(max) = q.in_flight
                && share.running >= max
            {
                return Err(Refused {
                    message: format!(
                        "Rate limited: {shown} already has {max} call(s){what} running, the most \
                         allowed at once; retry when one ends."
                    ),
                    retry_after: None,
                });
            }
            if let Some(rate) = &q.fuel {
                let bucket = share.fuel.get_or_insert_with(|| Bucket::full(rate, now));
                if let Err(wait) = bucket.check(rate, now) {
                    return Err(refused(
                        format!(
                            "{shown} used its fuel budget{what} ({} per {})",
                            rate.amount,
                            window(rate)
                        ),
                        wait,
                    ));
                }
            }
            if let Some(rate) = &q.calls {
                let mut trial = *share.calls.get_or_insert_with(|| Bucket::full(rate, now));
                if let Err(wait) = trial.take(rate, 1.0, now) {
                    return Err(refused(
                        format!(
                            "{shown} may start {} call(s){what} per {} (bursts of {})",
                            rate.amount,
                            window(rate),
                            rate.burst
                        ),
                        wait,
                    ));
                }
            }
        }
        for (key, q) in &wanted {
            let share = shares.get_mut(key).expect("checked above");
            if let (Some(rate), Some(bucket)) = (&q.calls, share.calls.as_mut()) {
                let _ = bucket.take(rate, 1.0, now);
            }
            share.running += 1;
        }
        Ok(Held {
            quotas: self,
            held: wanted,
        })
    }
}

impl Held<'_> {
    /// Charge the fuel the call used to every fuel budget it ran under.
    pub(crate) fn charge(&self, fuel: u64) {
        if fuel == 0 {
            return;
        }
        let now = Instant::now();
        let mut shares = self
            .quotas
            .shares
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (key, q) in &self.held {
            if let (Some(rate), Some(share)) = (&q.fuel, shares.get_mut(key))
                && let Some(bucket) = share.fuel.as_mut()
            {
                bucket.charge(rate, fuel as f64, now);
            }
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let mut shares = self
            .quotas
            .shares
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (key, _) in &self.held {
            if let Some(share) = shares.get_mut(key) {
                share.running = share.running.saturating_sub(1);
            }
        }
    }
}

fn window(rate: &Rate) -> String {
    match rate.per.as_secs() {
        1 => "second".to_owned(),
        60 => "minute".to_owned(),
        3600 => "hour".to_owned(),
        s => format!("{s} s"),
    }
}

fn refused(what: String, wait: Duration) -> Refused {
    Refused {
        message: format!("Rate limited: {what}; retry in {} s.", whole_seconds(wait)),
        retry_after: Some(wait),
    }
}
