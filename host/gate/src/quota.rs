//! Fair shares: how many calls a caller (or a caller's use of one tool) may start per window, how
//! many may run at once, and how much sandbox work (fuel) they may spend per window. Pure: the
//! token bucket and the settings; the pipeline keeps the buckets and decides.
//!
//! A bucket holds up to its burst and refills continuously at `amount / per`. A call takes one
//! token, or is refused with the time until one is back. Fuel is known only once a call ended, so
//! the fuel bucket is charged afterwards and may go below zero; a new call is admitted only while
//! it is above zero, which bounds the overshoot to one call's fuel per concurrent call.

use std::time::{Duration, Instant};

use serde::Deserialize;

/// `quota = { calls = 60, per-s = 60, burst = 10, in-flight = 4, fuel = 5_000_000_000 }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawQuota {
    /// Calls per window.
    pub calls: Option<u64>,
    /// The window, in seconds (default 60).
    pub per_s: Option<u64>,
    /// Calls that may start at once after a quiet spell (default: `calls`).
    pub burst: Option<u64>,
    /// Calls running at once.
    pub in_flight: Option<u32>,
    /// Fuel the calls may use per window.
    pub fuel: Option<u64>,
}

/// A quota, checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quota {
    /// Calls per window.
    pub calls: Option<Rate>,
    /// Calls running at once.
    pub in_flight: Option<u32>,
    /// Fuel per window.
    pub fuel: Option<Rate>,
}

/// So much per window, with room for `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// How much per window.
    pub amount: u64,
    /// The window.
    pub per: Duration,
    /// The most a bucket holds.
    pub burst: u64,
}

impl Rate {
    /// How long a bucket at `level` takes to refill to `cost` (at least a millisecond).
    pub fn wait(&self, level: f64, cost: f64) -> Duration {
        Duration::from_secs_f64(((cost - level) / self.per_second()).max(0.001))
    }

    /// Tokens added per second.
    pub fn per_second(&self) -> f64 {
        self.amount as f64 / self.per.as_secs_f64()
    }
}

impl Quota {
    /// Check `raw`; a bad value names its field.
    pub fn new(raw: &RawQuota) -> Result<Self, (&'static str, String)> {
        let per_s = raw.per_s.unwrap_or(60);
        if !(1..=86_400).contains(&per_s) {
            return Err(("per-s", "must be between 1 and 86400 seconds".into()));
        }
        let per = Duration::from_secs(per_s);
        let positive = |v: Option<u64>, field: &'static str| match v {
            Some(0) => Err((field, "must be greater than 0".to_owned())),
            other => Ok(other),
        };
        let calls = positive(raw.calls, "calls")?;
        let burst = positive(raw.burst, "burst")?;
        if burst.is_some() && calls.is_none() {
            return Err(("burst", "needs `calls`".into()));
        }
        if raw.in_flight == Some(0) {
            return Err(("in-flight", "must be greater than 0".into()));
        }
        let fuel = positive(raw.fuel, "fuel")?;
        if calls.is_none() && raw.in_flight.is_none() && fuel.is_none() {
            return Err((
                "calls",
                "a quota needs at least one of `calls`, `in-flight` or `fuel`".into(),
            ));
        }
        Ok(Self {
            calls: calls.map(|amount| Rate {
                amount,
                per,
                burst: burst.unwrap_or(amount),
            }),
            in_flight: raw.in_flight,
            fuel: fuel.map(|amount| Rate {
                amount,
                per,
                burst: amount,
            }),
        })
    }
}

/// A token bucket's state.
#[derive(Debug, Clone, Copy)]
pub struct Bucket {
    level: f64,
    at: Instant,
}

impl Bucket {
    /// A full bucket.
    pub fn full(rate: &Rate, now: Instant) -> Self {
        Self {
            level: rate.burst as f64,
            at: now,
        }
    }

    fn refill(&mut self, rate: &Rate, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + elapsed * rate.per_second()).min(rate.burst as f64);
        self.at = now.max(self.at);
    }

    /// Take `cost`, or say how long until it could be taken.
    pub fn take(&mut self, rate: &Rate, cost: f64, now: Instant) -> Result<(), Duration> {
        self.refill(rate, now);
        if self.level >= cost {
            self.level -= cost;
            return Ok(());
        }
        Err(self.wait(rate, cost))
    }

    /// What is there now, refilled: for a reservation of whatever is left.
    pub fn level(&mut self, rate: &Rate, now: Instant) -> f64 {
        self.refill(rate, now);
        self.level
    }

    /// Spend `cost` known afterwards; the level may go below zero. A negative cost gives back,
    /// never past the burst.
    pub fn charge(&mut self, rate: &Rate, cost: f64, now: Instant) {
        self.refill(rate, now);
        self.level = (self.level - cost).min(rate.burst as f64);
    }

    fn wait(&self, rate: &Rate, cost: f64) -> Duration {
        rate.wait(self.level, cost)
    }
}

/// `wait` in whole seconds, rounded up and at least one: what a retry time says.
pub fn whole_seconds(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(amount: u64, per_s: u64, burst: u64) -> Rate {
        Rate {
            amount,
            per: Duration::from_secs(per_s),
            burst,
        }
    }

    #[test]
    fn a_bucket_lets_a_burst_through_then_refills_at_its_rate() {
        let r = rate(60, 60, 3);
        let t0 = Instant::now();
        let mut b = Bucket::full(&r, t0);
        for _ in 0..3 {
            b.take(&r, 1.0, t0).unwrap();
        }
        let wait = b.take(&r, 1.0, t0).unwrap_err();
        assert!((wait.as_secs_f64() - 1.0).abs() < 1e-6, "{wait:?}");
        b.take(&r, 1.0, t0 + Duration::from_millis(1000)).unwrap();
        assert!(b.take(&r, 1.0, t0 + Duration::from_millis(1000)).is_err());
        // A long pause refills only up to the burst.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..3 {
            b.take(&r, 1.0, later).unwrap();
        }
        assert!(b.take(&r, 1.0, later).is_err());
    }

    #[test]
    fn fuel_reserved_and_given_back_never_passes_the_burst_and_an_overdraw_waits() {
        let r = rate(1000, 10, 1000);
        let t0 = Instant::now();
        let mut b = Bucket::full(&r, t0);
        assert_eq!(b.level(&r, t0), 1000.0);
        b.charge(&r, 1000.0, t0);
        b.charge(&r, -300.0, t0);
        assert_eq!(b.level(&r, t0), 300.0);
        b.charge(&r, -5000.0, t0);
        assert_eq!(b.level(&r, t0), 1000.0, "given back only up to the burst");
        b.charge(&r, 1500.0, t0);
        let wait = r.wait(b.level(&r, t0), 1.0);
        assert!((wait.as_secs_f64() - 5.01).abs() < 0.01, "{wait:?}");
        assert!(b.level(&r, t0 + Duration::from_millis(5100)) >= 1.0);
    }

    #[test]
    fn quotas_are_checked_naming_the_field() {
        let q = Quota::new(&RawQuota {
            calls: Some(10),
            ..RawQuota::default()
        })
        .unwrap();
        assert_eq!(q.calls.unwrap().burst, 10);
        assert_eq!(q.calls.unwrap().per, Duration::from_secs(60));
        for (raw, field) in [
            (RawQuota::default(), "calls"),
            (
                RawQuota {
                    calls: Some(0),
                    ..RawQuota::default()
                },
                "calls",
            ),
            (
                RawQuota {
                    burst: Some(5),
                    in_flight: Some(1),
                    ..RawQuota::default()
                },
                "burst",
            ),
            (
                RawQuota {
                    calls: Some(1),
                    per_s: Some(0),
                    ..RawQuota::default()
                },
                "per-s",
            ),
            (
                RawQuota {
                    in_flight: Some(0),
                    ..RawQuota::default()
                },
                "in-flight",
            ),
        ] {
            assert_eq!(Quota::new(&raw).unwrap_err().0, field, "{raw:?}");
        }
    }
}
