//! Per-tool summaries of audit records for `toolhost audit`, and their text table; pure.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use super::record::{AuditRecord, Outcome};
use toolhost_call::call::ErrorKind;
use toolhost_call::text::one_line;

/// What a set of records says, tool by tool. Serializes to JSON for `--json` output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// How many records were summarized.
    pub records: u64,
    /// The earliest call start, if any.
    pub first: Option<DateTime<Utc>>,
    /// The latest call start, if any.
    pub last: Option<DateTime<Utc>>,
    /// One entry per tool name, sorted by name.
    pub tools: Vec<ToolSummary>,
    /// All tools together, named `(all)`.
    pub total: ToolSummary,
}

/// The calls to one tool (or to all tools).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSummary {
    /// The tool name as callers gave it.
    pub tool: String,
    /// Calls recorded.
    pub calls: u64,
    /// Calls that succeeded.
    pub ok: u64,
    /// Calls that did not, by kind (cancellations included); `ok`, these and `unfinished` make `calls`.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Calls that began and never ended (the daemon was killed while they ran, or they still run).
    pub unfinished: u64,
    /// Sum of call durations, in microseconds.
    pub total_duration_us: u64,
    /// Mean call duration, in microseconds.
    pub mean_duration_us: u64,
    /// Median call duration (nearest rank), in microseconds.
    pub p50_duration_us: u64,
    /// 99th-percentile call duration (nearest rank), in microseconds.
    pub p99_duration_us: u64,
}

/// Summarizes records (owned or borrowed), typically those a [`Filter`](super::Filter) kept.
/// Durations are kept in full, so percentiles are exact; unfinished calls have none and are left out
/// of them. A failed record without an `error_kind` counts as `cancelled` or `internal` by its outcome.
pub fn summarize<I>(records: I) -> Summary
where
    I: IntoIterator,
    I::Item: Borrow<AuditRecord>,
{
    let mut tools: BTreeMap<String, Tally> = BTreeMap::new();
    let mut total = Tally::default();
    let mut first: Option<DateTime<Utc>> = None;
    let mut last: Option<DateTime<Utc>> = None;
    for record in records {
        let record = record.borrow();
        first = Some(first.map_or(record.ts_start, |t| t.min(record.ts_start)));
        last = Some(last.map_or(record.ts_start, |t| t.max(record.ts_start)));
        tools.entry(record.tool.clone()).or_default().add(record);
        total.add(record);
    }
    Summary {
        records: total.calls,
        first,
        last,
        tools: tools
            .into_iter()
            .map(|(tool, tally)| tally.finish(tool))
            .collect(),
        total: total.finish("(all)".to_owned()),
    }
}

#[derive(Default)]
struct Tally {
    calls: u64,
    ok: u64,
    unfinished: u64,
    errors: BTreeMap<ErrorKind, u64>,
    durations: Vec<u64>,
}

impl Tally {
    fn add(&mut self, record: &AuditRecord) {
        self.calls += 1;
        match (record.outcome, record.error_kind) {
            (Outcome::Unfinished, _) => {
                self.unfinished += 1;
                return;
            }
            (Outcome::Ok, _) => self.ok += 1,
            (_, Some(kind)) => *self.errors.entry(kind).or_default() += 1,
            (Outcome::Cancelled, None) => {
                *self.errors.entry(ErrorKind::Cancelled).or_default() += 1
            }
            (Outcome::InputRequired, None) => {
                *self.errors.entry(ErrorKind::InputRequired).or_default() += 1
            }
            (Outcome::Error, None) => *self.errors.entry(ErrorKind::Internal).or_default() += 1,
        }
        self.durations.push(record.duration_us);
    }

    fn finish(mut self, tool: String) -> ToolSummary {
        self.durations.sort_unstable();
        let timed = self.durations.len() as u64;
        let total = self
            .durations
            .iter()
            .fold(0u64, |sum, &d| sum.saturating_add(d));
        ToolSummary {
            tool,
            calls: self.calls,
            ok: self.ok,
            errors: self.errors,
            unfinished: self.unfinished,
            total_duration_us: total,
            mean_duration_us: total.checked_div(timed).unwrap_or(0),
            p50_duration_us: nearest_rank(&self.durations, 50),
            p99_duration_us: nearest_rank(&self.durations, 99),
        }
    }
}

/// The `percent`th percentile of sorted `values` by the nearest-rank method; 0 when empty.
fn nearest_rank(sorted: &[u64], percent: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let n = sorted.len() as u64;
    let rank = (percent * n).div_ceil(100).max(1);
    sorted[(rank - 1) as usize]
}

/// The summary as a text table for a terminal: one row per tool, then `(all)`.
pub fn render_table(summary: &Summary) -> String {
    let (Some(first), Some(last)) = (summary.first, summary.last) else {
        return "no audit records\n".to_owned();
    };
    let mut out = format!(
        "{} records, calls started {} .. {}\n\n",
        summary.records,
        first.to_rfc3339_opts(SecondsFormat::Secs, true),
        last.to_rfc3339_opts(SecondsFormat::Secs, true),
    );
    // Tool names are as callers gave them: shown escaped, so that none can steer the terminal.
    let width = summary
        .tools
        .iter()
        .map(|t| one_line(&t.tool).chars().count())
        .chain([summary.total.tool.len(), 4])
        .max()
        .unwrap_or(4);
    let _ = writeln!(
        out,
        "{:<width$}  {:>7}  {:>7}  {:>7}  {:>10}  {:>8}  {:>8}  {:>8}  {:>8}  ERRORS",
        "TOOL", "CALLS", "OK", "FAILED", "UNFINISHED", "MEAN", "P50", "P99", "TOTAL"
    );
    for tool in summary.tools.iter().chain([&summary.total]) {
        let failed: u64 = tool.errors.values().sum();
        let kinds: Vec<String> = tool
            .errors
            .iter()
            .map(|(kind, n)| format!("{}={n}", kind.as_str()))
            .collect();
        let _ = writeln!(
            out,
            "{:<width$}  {:>7}  {:>7}  {:>7}  {:>10}  {:>8}  {:>8}  {:>8}  {:>8}  {}",
            one_line(&tool.tool),
            tool.calls,
            tool.ok,
            failed,
            tool.unfinished,
            format_us(tool.mean_duration_us),
            format_us(tool.p50_duration_us),
            format_us(tool.p99_duration_us),
            format_us(tool.total_duration_us),
            kinds.join(" "),
        );
    }
    out
}

/// A duration in microseconds, in the unit that reads best: `850µs`, `12.3ms`, `4.20s`.
fn format_us(us: u64) -> String {
    match us {
        0..1_000 => format!("{us}µs"),
        1_000..1_000_000 => format!("{:.1}ms", us as f64 / 1e3),
        _ => format!("{:.2}s", us as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::record::tests::sample;

    fn call(tool: &str, error_kind: Option<ErrorKind>, duration_us: u64) -> AuditRecord {
        AuditRecord {
            tool: tool.into(),
            outcome: Outcome::from_error_kind(error_kind),
            error_kind,
            duration_us,
            ..sample()
        }
    }

    #[test]
    fn summarizes_counts_and_exact_percentiles_per_tool() {
        let mut records: Vec<_> = (1..=100).map(|ms| call("echo", None, ms * 1000)).collect();
        records.push(call("fetch", Some(ErrorKind::Timeout), 5_000_000));
        records.push(call("fetch", Some(ErrorKind::Timeout), 5_000_000));
        records.push(call("fetch", Some(ErrorKind::Cancelled), 10));
        let summary = summarize(&records);

        assert_eq!(summary.records, 103);
        let names: Vec<_> = summary.tools.iter().map(|t| t.tool.as_str()).collect();
        assert_eq!(names, ["echo", "fetch"]);

        let echo = &summary.tools[0];
        assert_eq!((echo.calls, echo.ok), (100, 100));
        assert!(echo.errors.is_empty());
        assert_eq!(echo.total_duration_us, 5_050_000);
        assert_eq!(echo.mean_duration_us, 50_500);
        assert_eq!(echo.p50_duration_us, 50_000);
        assert_eq!(echo.p99_duration_us, 99_000);

        let fetch = &summary.tools[1];
        assert_eq!((fetch.calls, fetch.ok), (3, 0));
        assert_eq!(
            fetch.errors,
            BTreeMap::from([(ErrorKind::Timeout, 2), (ErrorKind::Cancelled, 1)])
        );
        assert_eq!(fetch.p50_duration_us, 5_000_000);
        assert_eq!(summary.total.calls, 103);
        assert_eq!(summary.total.ok, 100);
    }

    #[test]
    fn counts_unfinished_calls_apart_and_leaves_them_out_of_durations() {
        let mut killed = call("sleep", None, 0);
        killed.outcome = Outcome::Unfinished;
        let summary = summarize([call("sleep", None, 2000), killed]);
        let sleep = &summary.tools[0];
        assert_eq!((sleep.calls, sleep.ok, sleep.unfinished), (2, 1, 1));
        assert!(sleep.errors.is_empty());
        assert_eq!(sleep.p50_duration_us, 2000);
        assert_eq!(summary.records, 2);
        let table = render_table(&summary);
        assert!(table.contains("UNFINISHED"), "{table}");
    }

    #[test]
    fn summarizes_nothing_to_zeros() {
        let summary = summarize(Vec::<AuditRecord>::new());
        assert_eq!(summary.records, 0);
        assert_eq!(summary.total.p99_duration_us, 0);
        assert_eq!(render_table(&summary), "no audit records\n");
    }

    #[test]
    fn renders_a_row_per_tool_and_a_total() {
        let records = [
            call("echo", None, 850),
            call("fetch_url", Some(ErrorKind::Denied), 12_300),
        ];
        let table = render_table(&summarize(records));
        let rows: Vec<_> = table.lines().collect();
        assert!(rows[0].starts_with("2 records"), "{table}");
        assert!(rows[2].starts_with("TOOL"), "{table}");
        assert!(
            rows[3].starts_with("echo ") && rows[3].contains("850µs"),
            "{table}"
        );
        assert!(
            rows[4].starts_with("fetch_url") && rows[4].ends_with("denied=1"),
            "{table}"
        );
        assert!(
            rows[5].starts_with("(all)") && rows[5].contains("12.3ms"),
            "{table}"
        );
    }

    #[test]
    fn serializes_error_kinds_as_names() {
        let summary = summarize([call("t", Some(ErrorKind::OutOfFuel), 1)]);
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["tools"][0]["errors"]["out_of_fuel"], 1);
    }
}
