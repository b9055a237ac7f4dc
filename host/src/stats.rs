//! Live per-tool call statistics for the CLI, the daemon's `/metrics` and the console's charts
//! ([`Stats::series`]); counts, never decides.

mod histogram;
mod prometheus;
mod series;

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};

use self::histogram::{LogHistogram, nearest_rank};
use self::prometheus::BUCKETS;
pub use self::prometheus::Exposition;
use self::series::Series;
pub use self::series::{INTERVAL_SECS, INTERVALS, Point};
use toolhost_call::call::ErrorKind;

/// The one label under which calls that named no tool of the catalogue are counted (an unknown or
/// hidden name, or a call refused before the lookup): no tool name holds parentheses, so it
/// cannot be mistaken for one. Keeps the label sets of `/metrics` bounded by the catalogue.
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// Durations kept exactly per tool; past this many calls percentiles come from the histogram.
const EXACT_SAMPLES: usize = 256;

/// Call statistics per tool. Thread-safe through `&self`; share it in an `Arc`.
/// Recording a call takes one short lock and allocates only for a tool's first call.
#[derive(Debug, Default)]
pub struct Stats {
    tools: Mutex<BTreeMap<String, Tool>>,
}

/// What is kept for one tool: totals since start, and the last hour by interval. Apart, so that a
/// snapshot copies the totals only.
#[derive(Debug)]
struct Tool {
    tally: Tally,
    series: Series,
}

/// One tool's statistics at the moment of a [`Stats::snapshot`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStats {
    /// The tool name.
    pub tool: String,
    /// Calls finished.
    pub calls: u64,
    /// Calls that succeeded.
    pub successes: u64,
    /// Calls that failed, by kind; `successes` plus these is `calls`.
    pub failures: BTreeMap<ErrorKind, u64>,
    /// Sum of call durations.
    pub total_duration: Duration,
    /// Mean call duration.
    pub mean_duration: Duration,
    /// Median call duration: exact for the first 256 calls, then within about 6%.
    pub p50: Duration,
    /// 99th-percentile call duration: exact for the first 256 calls, then within about 6%.
    pub p99: Duration,
    /// Fuel consumed by all calls that reported it.
    pub fuel_consumed: u64,
}

#[derive(Debug, Clone, Default)]
struct Tally {
    calls: u64,
    successes: u64,
    cancelled: u64,
    failures: BTreeMap<ErrorKind, u64>,
    total_us: u64,
    fuel: u64,
    min_us: u64,
    max_us: u64,
    /// Every duration, while there are at most `EXACT_SAMPLES`.
    exact: Vec<u64>,
    /// Every duration, once there are more; allocated at that point.
    histogram: Option<LogHistogram>,
    /// Calls per Prometheus bucket (not cumulative); the last slot is above the largest bound.
    buckets: [u64; BUCKETS.len() + 1],
}

impl Stats {
    /// New, empty statistics.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one finished call to `tool`, in its totals and in the interval of the wall clock
    /// it finished in.
    pub fn record(
        &self,
        tool: &str,
        outcome: Result<(), ErrorKind>,
        duration: Duration,
        fuel: Option<u64>,
    ) {
        self.record_with(tool, outcome, duration, fuel, Utc::now);
    }

    /// [`record`](Self::record) at the instant `now`, for tests of the series.
    #[cfg(test)]
    fn record_at(
        &self,
        tool: &str,
        outcome: Result<(), ErrorKind>,
        duration: Duration,
        now: DateTime<Utc>,
    ) {
        self.record_with(tool, outcome, duration, None, || now);
    }

    /// Reads the clock under the lock, so calls land in intervals in the order they are counted
    /// (a call never finds its interval closed by a call that took the lock before it).
    fn record_with(
        &self,
        tool: &str,
        outcome: Result<(), ErrorKind>,
        duration: Duration,
        fuel: Option<u64>,
        clock: impl FnOnce() -> DateTime<Utc>,
    ) {
        let us = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        // As `/metrics` counts them: a cancelled call is not an error.
        let failed = outcome.is_err_and(|kind| kind != ErrorKind::Cancelled);
        let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        let now = clock();
        match tools.get_mut(tool) {
            Some(entry) => {
                entry.tally.add(outcome, us, fuel);
                entry.series.add(now, failed, us);
            }
            None => {
                let mut entry = Tool {
                    tally: Tally::default(),
                    series: Series::new(now),
                };
                entry.tally.add(outcome, us, fuel);
                entry.series.add(now, failed, us);
                tools.insert(tool.to_owned(), entry);
            }
        }
    }

    /// Each tool's calls, errors and latency percentiles per interval of [`INTERVAL_SECS`], over
    /// the last [`INTERVALS`], oldest first: one point per interval in which the tool was called.
    /// Tools not called in that time are left out. `errors` counts failures of every kind but
    /// `cancelled`, as `/metrics` does (`input_required` is an error there too).
    pub fn series(&self) -> BTreeMap<String, Vec<Point>> {
        self.series_at(Utc::now())
    }

    /// [`series`](Self::series) as of `now`. Percentiles of closed intervals were computed when
    /// they closed, so the lock is held for a copy of small values and one histogram per tool.
    fn series_at(&self, now: DateTime<Utc>) -> BTreeMap<String, Vec<Point>> {
        let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        tools
            .iter()
            .map(|(name, tool)| (name.clone(), tool.series.points(now)))
            .filter(|(_, points)| !points.is_empty())
            .collect()
    }

    /// Every tool's statistics, sorted by tool name.
    pub fn snapshot(&self) -> Vec<ToolStats> {
        self.copy()
            .into_iter()
            .map(|(tool, tally)| tally.summarize(tool))
            .collect()
    }

    /// A copy of the tallies, so that summarizing and formatting happen outside the lock.
    fn copy(&self) -> Vec<(String, Tally)> {
        let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        tools
            .iter()
            .map(|(tool, entry)| (tool.clone(), entry.tally.clone()))
            .collect()
    }
}

impl Tally {
    fn add(&mut self, outcome: Result<(), ErrorKind>, us: u64, fuel: Option<u64>) {
        match outcome {
            Ok(()) => self.successes += 1,
            Err(kind) => {
                *self.failures.entry(kind).or_default() += 1;
                if kind == ErrorKind::Cancelled {
                    self.cancelled += 1;
                }
            }
        }
        self.min_us = if self.calls == 0 {
            us
        } else {
            self.min_us.min(us)
        };
        self.max_us = self.max_us.max(us);
        self.calls += 1;
        self.total_us = self.total_us.saturating_add(us);
        self.fuel = self.fuel.saturating_add(fuel.unwrap_or(0));
        let bucket = BUCKETS.partition_point(|&(bound, _)| bound < us);
        self.buckets[bucket] += 1;
        match &mut self.histogram {
            Some(histogram) => histogram.add(us),
            None if self.exact.len() < EXACT_SAMPLES => self.exact.push(us),
            None => {
                let mut histogram = LogHistogram::default();
                for &sample in &self.exact {
                    histogram.add(sample);
                }
                histogram.add(us);
                self.exact = Vec::new();
                self.histogram = Some(histogram);
            }
        }
    }

    fn summarize(mut self, tool: String) -> ToolStats {
        let (p50, p99) = match &self.histogram {
            Some(histogram) => (
                histogram
                    .percentile(50, self.calls)
                    .clamp(self.min_us, self.max_us),
                histogram
                    .percentile(99, self.calls)
                    .clamp(self.min_us, self.max_us),
            ),
            None => {
                self.exact.sort_unstable();
                (nearest_rank(&self.exact, 50), nearest_rank(&self.exact, 99))
            }
        };
        ToolStats {
            tool,
            calls: self.calls,
            successes: self.successes,
            failures: self.failures,
            total_duration: Duration::from_micros(self.total_us),
            mean_duration: Duration::from_micros(
                self.total_us.checked_div(self.calls).unwrap_or(0),
            ),
            p50: Duration::from_micros(p50),
            p99: Duration::from_micros(p99),
            fuel_consumed: self.fuel,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn percentiles_are_exact_for_small_counts() {
        let stats = Stats::new();
        for ms in (1..=100).rev() {
            stats.record("echo", Ok(()), Duration::from_millis(ms), Some(10));
        }
        let [echo] = stats.snapshot().try_into().unwrap();
        assert_eq!(echo.calls, 100);
        assert_eq!(echo.p50, Duration::from_millis(50));
        assert_eq!(echo.p99, Duration::from_millis(99));
        assert_eq!(echo.mean_duration, Duration::from_micros(50_500));
        assert_eq!(echo.total_duration, Duration::from_millis(5050));
        assert_eq!(echo.fuel_consumed, 1000);
    }

    #[test]
    fn percentiles_stay_within_bucket_error_for_large_counts() {
        let stats = Stats::new();
        for us in 1..=10_000 {
            stats.record("t", Ok(()), Duration::from_micros(us), None);
        }
        let [t] = stats.snapshot().try_into().unwrap();
        let within =
            |got: Duration, want: f64| (got.as_micros() as f64 - want).abs() / want <= 0.0625;
        assert!(within(t.p50, 5000.0), "p50 {:?}", t.p50);
        assert!(within(t.p99, 9900.0), "p99 {:?}", t.p99);
    }

    #[test]
    fn counts_failures_by_kind_and_sorts_tools() {
        let stats = Stats::new();
        stats.record(
            "zeta",
            Err(ErrorKind::Timeout),
            Duration::from_secs(1),
            None,
        );
        stats.record("alpha", Ok(()), Duration::ZERO, None);
        stats.record(
            "zeta",
            Err(ErrorKind::Timeout),
            Duration::from_secs(1),
            None,
        );
        stats.record("zeta", Err(ErrorKind::Denied), Duration::ZERO, None);
        let snapshot = stats.snapshot();
        let names: Vec<_> = snapshot.iter().map(|t| t.tool.as_str()).collect();
        assert_eq!(names, ["alpha", "zeta"]);
        assert_eq!(
            snapshot[1].failures,
            BTreeMap::from([(ErrorKind::Denied, 1), (ErrorKind::Timeout, 2)])
        );
        assert_eq!(snapshot[1].successes, 0);
    }

    #[test]
    fn counts_every_call_recorded_concurrently() {
        let stats = Arc::new(Stats::new());
        let handles: Vec<_> = (0..8u64)
            .map(|t| {
                let stats = Arc::clone(&stats);
                std::thread::spawn(move || {
                    for i in 0..1000u64 {
                        let tool = ["a", "b", "c"][((t + i) % 3) as usize];
                        let outcome = if i % 10 == 0 {
                            Err(ErrorKind::Trap)
                        } else {
                            Ok(())
                        };
                        stats.record(tool, outcome, Duration::from_micros(i), Some(1));
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let snapshot = stats.snapshot();
        assert_eq!(snapshot.iter().map(|t| t.calls).sum::<u64>(), 8000);
        assert_eq!(snapshot.iter().map(|t| t.successes).sum::<u64>(), 7200);
        assert_eq!(snapshot.iter().map(|t| t.fuel_consumed).sum::<u64>(), 8000);
        let traps: u64 = snapshot.iter().map(|t| t.failures[&ErrorKind::Trap]).sum();
        assert_eq!(traps, 800);
    }
}
