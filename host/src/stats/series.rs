//! One tool's calls, errors and latency percentiles over the last hour, in 10-second intervals of
//! the wall clock, for the console's charts. Counts; no locking (the caller's lock covers it).
//!
//! Memory is bounded and paid only by tools that are called: an interval with no calls is not
//! stored, and a closed interval keeps only its counts and three percentiles (48 bytes). The open
//! interval (the one the clock is in) has the only histogram, reused from one interval to the next,
//! so recording a call never allocates; the list of closed intervals grows to at most
//! [`INTERVALS`] and is then reused too.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::histogram::LogHistogram;

/// The width of an interval, in seconds. Intervals are aligned to multiples of it since the epoch.
pub const INTERVAL_SECS: i64 = 10;

/// How many intervals are kept and shown: 360 of 10 s, the last hour.
pub const INTERVALS: usize = 360;

/// One interval of one tool: `{"t", "calls", "errors", "p50_ms", "p95_ms", "p99_ms"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The interval's start.
    pub t: DateTime<Utc>,
    /// Calls that finished in the interval.
    pub calls: u64,
    /// Of those, calls that failed, except those cancelled (as `/metrics` counts them).
    pub errors: u64,
    /// Median duration, in milliseconds: exact for one call, else within about 6%.
    pub p50_ms: f64,
    /// 95th-percentile duration, in milliseconds.
    pub p95_ms: f64,
    /// 99th-percentile duration, in milliseconds.
    pub p99_ms: f64,
}

/// A finished interval: counts, and the percentiles computed when it closed, in microseconds.
#[derive(Debug, Clone, Copy)]
struct Closed {
    index: i64,
    calls: u64,
    errors: u64,
    percentiles: [u64; 3],
}

/// The interval the clock is in.
#[derive(Debug)]
struct Open {
    index: i64,
    calls: u64,
    errors: u64,
    min_us: u64,
    max_us: u64,
    histogram: LogHistogram,
}

/// The percentiles every point shows.
const PERCENTS: [u64; 3] = [50, 95, 99];

/// One tool's recent intervals, oldest first.
#[derive(Debug)]
pub(super) struct Series {
    closed: VecDeque<Closed>,
    open: Open,
}

/// The interval `now` falls in: seconds since the epoch divided by [`INTERVAL_SECS`], rounded down.
fn index_of(now: DateTime<Utc>) -> i64 {
    now.timestamp().div_euclid(INTERVAL_SECS)
}

impl Series {
    /// A series whose first call is now: made on a tool's first call, with its one histogram.
    pub(super) fn new(now: DateTime<Utc>) -> Self {
        Self {
            closed: VecDeque::new(),
            open: Open {
                index: index_of(now),
                calls: 0,
                errors: 0,
                min_us: u64::MAX,
                max_us: 0,
                histogram: LogHistogram::default(),
            },
        }
    }

    /// Counts a call that finished `now` after `us` microseconds. A clock set back counts calls
    /// in the open interval until it catches up, rather than rewriting closed ones.
    pub(super) fn add(&mut self, now: DateTime<Utc>, failed: bool, us: u64) {
        let index = index_of(now);
        if index > self.open.index {
            self.roll(index);
        }
        let open = &mut self.open;
        open.calls += 1;
        open.errors += u64::from(failed);
        open.min_us = open.min_us.min(us);
        open.max_us = open.max_us.max(us);
        open.histogram.add(us);
    }

    /// Closes the open interval (if it had calls) and opens `index`, dropping what falls out of
    /// the last [`INTERVALS`].
    fn roll(&mut self, index: i64) {
        if let Some(closed) = self.open.close() {
            self.closed.push_back(closed);
        }
        let oldest = index - INTERVALS as i64 + 1;
        while self.closed.front().is_some_and(|c| c.index < oldest) {
            self.closed.pop_front();
        }
        self.open.index = index;
    }

    /// The points of the intervals within the last [`INTERVALS`] before `now`, oldest first.
    pub(super) fn points(&self, now: DateTime<Utc>) -> Vec<Point> {
        let oldest = index_of(now) - INTERVALS as i64 + 1;
        let open = (self.open.calls > 0).then(|| Closed {
            index: self.open.index,
            calls: self.open.calls,
            errors: self.open.errors,
            percentiles: self.open.percentiles(),
        });
        self.closed
            .iter()
            .copied()
            .chain(open)
            .filter(|c| c.index >= oldest)
            .map(Closed::point)
            .collect()
    }
}

impl Open {
    /// The interval's summary, and the interval emptied (its histogram kept for the next);
    /// `None` when it had no calls.
    fn close(&mut self) -> Option<Closed> {
        if self.calls == 0 {
            return None;
        }
        let closed = Closed {
            index: self.index,
            calls: self.calls,
            errors: self.errors,
            percentiles: self.percentiles(),
        };
        self.calls = 0;
        self.errors = 0;
        self.min_us = u64::MAX;
        self.max_us = 0;
        self.histogram.clear();
        Some(closed)
    }

    /// p50, p95, p99 in microseconds, each within the interval's fastest and slowest call.
    fn percentiles(&self) -> [u64; 3] {
        self.histogram
            .percentiles(PERCENTS, self.calls)
            .map(|p| p.clamp(self.min_us.min(self.max_us), self.max_us))
    }
}

impl Closed {
    fn point(self) -> Point {
        let ms = |us: u64| us as f64 / 1000.0;
        Point {
            t: DateTime::from_timestamp(self.index * INTERVAL_SECS, 0).unwrap_or_default(),
            calls: self.calls,
            errors: self.errors,
            p50_ms: ms(self.percentiles[0]),
            p95_ms: ms(self.percentiles[1]),
            p99_ms: ms(self.percentiles[2]),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use toolhost_call::call::ErrorKind;

    use super::*;
    use crate::stats::Stats;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn rolls_over_at_ten_second_boundaries_of_the_epoch() {
        let stats = Stats::new();
        let ms = Duration::from_millis;
        stats.record_at("t", Ok(()), ms(5), at("2025-06-01T12:00:00Z"));
        stats.record_at(
            "t",
            Err(ErrorKind::Timeout),
            ms(7),
            at("2025-06-01T12:00:09.999Z"),
        );
        stats.record_at(
            "t",
            Err(ErrorKind::Cancelled),
            ms(9),
            at("2025-06-01T12:00:10Z"),
        );
        stats.record_at("t", Err(ErrorKind::Trap), ms(9), at("2025-06-01T12:00:45Z"));
        let series = stats.series_at(at("2025-06-01T12:00:50Z"));
        let summary: Vec<_> = series["t"]
            .iter()
            .map(|p| (p.t.to_rfc3339(), p.calls, p.errors))
            .collect();
        assert_eq!(
            summary,
            [
                ("2025-06-01T12:00:00+00:00".to_owned(), 2, 1),
                ("2025-06-01T12:00:10+00:00".to_owned(), 1, 0),
                ("2025-06-01T12:00:40+00:00".to_owned(), 1, 1),
            ]
        );
        let json = serde_json::to_value(&series["t"][1]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"t": "2025-06-01T12:00:10Z", "calls": 1, "errors": 0,
                "p50_ms": 9.0, "p95_ms": 9.0, "p99_ms": 9.0})
        );
    }

    #[test]
    fn keeps_the_last_360_intervals() {
        let stats = Stats::new();
        let start = at("2025-06-01T00:00:00Z");
        let every = |i: i64| start + chrono::Duration::seconds(i * INTERVAL_SECS);
        for i in 0..500 {
            stats.record_at("busy", Ok(()), Duration::from_millis(1), every(i));
        }
        let now = every(499);
        let points = &stats.series_at(now)["busy"];
        assert_eq!(points.len(), INTERVALS);
        assert_eq!(points[0].t, every(500 - INTERVALS as i64));
        assert_eq!(points.last().unwrap().t, now);
        let tools = stats.tools.lock().unwrap();
        assert_eq!(tools["busy"].series.closed.len(), INTERVALS - 1);
        drop(tools);
        // An hour later, with no calls since, the tool has nothing to show.
        let later = stats.series_at(every(499 + INTERVALS as i64));
        assert!(later.is_empty(), "{later:?}");
        assert_eq!(
            stats.series_at(every(498 + INTERVALS as i64))["busy"].len(),
            1
        );
    }

    #[test]
    fn computes_percentiles_per_interval() {
        let stats = Stats::new();
        let t0 = at("2025-06-01T12:00:00Z");
        for ms in (1..=100).rev() {
            stats.record_at("t", Ok(()), Duration::from_millis(ms), t0);
        }
        stats.record_at(
            "t",
            Ok(()),
            Duration::from_micros(1234),
            t0 + chrono::Duration::seconds(10),
        );
        let check = |points: &[Point]| {
            let within = |got: f64, want: f64| (got - want).abs() / want <= 0.0625;
            let p = &points[0];
            assert!(
                within(p.p50_ms, 50.0) && within(p.p95_ms, 95.0) && within(p.p99_ms, 99.0),
                "{p:?}"
            );
            assert!(
                p.p50_ms < p.p95_ms && p.p95_ms <= p.p99_ms && p.p99_ms <= 100.0,
                "{p:?}"
            );
            assert_eq!((points[1].p50_ms, points[1].p99_ms), (1.234, 1.234));
        };
        // The second interval open, then closed by a later call.
        check(&stats.series_at(t0 + chrono::Duration::seconds(15))["t"]);
        stats.record_at(
            "t",
            Ok(()),
            Duration::ZERO,
            t0 + chrono::Duration::seconds(30),
        );
        let points = &stats.series_at(t0 + chrono::Duration::seconds(35))["t"];
        assert_eq!(points.len(), 3);
        check(points);
    }

    #[test]
    fn tools_and_intervals_without_calls_cost_nothing() {
        let stats = Stats::new();
        assert!(stats.series().is_empty());
        let t0 = at("2025-06-01T12:00:00Z");
        stats.record_at("t", Ok(()), Duration::ZERO, t0);
        stats.record_at(
            "t",
            Ok(()),
            Duration::ZERO,
            t0 + chrono::Duration::seconds(1000),
        );
        let tools = stats.tools.lock().unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools["t"].series.closed.len(), 1);
        drop(tools);
        let points = &stats.series_at(t0 + chrono::Duration::seconds(1000))["t"];
        assert_eq!(points.len(), 2);
    }

    #[test]
    fn a_clock_set_back_counts_in_the_open_interval() {
        let stats = Stats::new();
        let t0 = at("2025-06-01T12:00:30Z");
        stats.record_at("t", Ok(()), Duration::ZERO, t0);
        stats.record_at(
            "t",
            Ok(()),
            Duration::ZERO,
            t0 - chrono::Duration::seconds(20),
        );
        let points = &stats.series_at(t0)["t"];
        assert_eq!((points.len(), points[0].calls, points[0].t), (1, 2, t0));
    }
}
