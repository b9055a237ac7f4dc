//! The Prometheus text exposition format, written in one place ([`Exposition`]): the statistics'
//! families here, and the daemon's gauges through the same writer. Formats; never counts.

use std::fmt::{Display, Write as _};

use super::Stats;

/// Upper bounds of the Prometheus duration buckets: microseconds, and the `le` label text.
pub(super) const BUCKETS: [(u64, &str); 15] = [
    (1_000, "0.001"),
    (2_500, "0.0025"),
    (5_000, "0.005"),
    (10_000, "0.01"),
    (25_000, "0.025"),
    (50_000, "0.05"),
    (100_000, "0.1"),
    (250_000, "0.25"),
    (500_000, "0.5"),
    (1_000_000, "1"),
    (2_500_000, "2.5"),
    (5_000_000, "5"),
    (10_000_000, "10"),
    (30_000_000, "30"),
    (60_000_000, "60"),
];

/// Text in the Prometheus exposition format (version 0.0.4), written family by family: the one
/// writer of `/metrics`, for the call statistics here and the daemon's own gauges.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// Nothing written yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Start a family: its HELP and TYPE lines (`kind` is `counter`, `gauge` or `histogram`).
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One sample line; label values are escaped here, names are the caller's constants.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) {
        self.text.push_str(name);
        if !labels.is_empty() {
            let labels: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                .collect();
            let _ = write!(self.text, "{{{}}}", labels.join(","));
        }
        let _ = writeln!(self.text, " {value}");
    }

    /// The text written so far.
    pub fn into_text(self) -> String {
        self.text
    }
}

impl Stats {
    /// The statistics in the Prometheus text exposition format (version 0.0.4), families
    /// `toolhost_calls_total`, `toolhost_call_errors_total`, `toolhost_call_duration_seconds`
    /// and `toolhost_fuel_consumed_total`, each with its HELP and TYPE lines.
    pub fn render_prometheus(&self) -> String {
        let mut out = Exposition::new();
        self.write_prometheus(&mut out);
        out.into_text()
    }

    /// The same families, written to `out`.
    pub fn write_prometheus(&self, out: &mut Exposition) {
        self.write_prometheus_for(out, |_| true);
    }

    /// The same families for the tools `shows` lets through (a caller's view: `/metrics` shows a
    /// caller the tools its profile lets it see, as `/health` does). Families are declared even
    /// when no tool is shown.
    pub fn write_prometheus_for(&self, out: &mut Exposition, shows: impl Fn(&str) -> bool) {
        let mut tools = self.copy();
        tools.retain(|(tool, _)| shows(tool));
        out.family(
            "toolhost_calls_total",
            "counter",
            "Tool calls finished, by outcome.",
        );
        for (tool, t) in &tools {
            let error = t.calls - t.successes - t.cancelled;
            for (outcome, n) in [
                ("ok", t.successes),
                ("error", error),
                ("cancelled", t.cancelled),
            ] {
                out.sample(
                    "toolhost_calls_total",
                    &[("tool", tool), ("outcome", outcome)],
                    n,
                );
            }
        }
        out.family(
            "toolhost_call_errors_total",
            "counter",
            "Failed tool calls, by error kind.",
        );
        for (tool, t) in &tools {
            for (kind, n) in &t.failures {
                out.sample(
                    "toolhost_call_errors_total",
                    &[("tool", tool), ("kind", kind.as_str())],
                    n,
                );
            }
        }
        out.family(
            "toolhost_call_duration_seconds",
            "histogram",
            "Tool call duration.",
        );
        for (tool, t) in &tools {
            let mut cumulative = 0;
            for ((_, le), n) in BUCKETS.iter().zip(t.buckets) {
                cumulative += n;
                out.sample(
                    "toolhost_call_duration_seconds_bucket",
                    &[("tool", tool), ("le", le)],
                    cumulative,
                );
            }
            out.sample(
                "toolhost_call_duration_seconds_bucket",
                &[("tool", tool), ("le", "+Inf")],
                t.calls,
            );
            out.sample(
                "toolhost_call_duration_seconds_sum",
                &[("tool", tool)],
                t.total_us as f64 / 1e6,
            );
            out.sample(
                "toolhost_call_duration_seconds_count",
                &[("tool", tool)],
                t.calls,
            );
        }
        out.family(
            "toolhost_fuel_consumed_total",
            "counter",
            "Fuel consumed by tool calls.",
        );
        for (tool, t) in &tools {
            out.sample("toolhost_fuel_consumed_total", &[("tool", tool)], t.fuel);
        }
    }
}

/// A label value escaped per the text format: backslash, double quote and newline.
fn escape_label(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use super::*;
    use toolhost_call::call::ErrorKind;

    #[test]
    fn renders_prometheus_text_with_escaped_labels() {
        let stats = Stats::new();
        stats.record("we\"ird\\na\nme", Ok(()), Duration::from_millis(3), Some(7));
        stats.record(
            "echo",
            Err(ErrorKind::OutOfFuel),
            Duration::from_secs(120),
            Some(5),
        );
        stats.record(
            "echo",
            Err(ErrorKind::Cancelled),
            Duration::from_micros(1),
            None,
        );
        let text = stats.render_prometheus();

        assert!(
            text.contains("toolhost_calls_total{tool=\"we\\\"ird\\\\na\\nme\",outcome=\"ok\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_calls_total{tool=\"echo\",outcome=\"error\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_calls_total{tool=\"echo\",outcome=\"cancelled\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_call_errors_total{tool=\"echo\",kind=\"out_of_fuel\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_call_duration_seconds_bucket{tool=\"echo\",le=\"0.001\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_call_duration_seconds_bucket{tool=\"echo\",le=\"60\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_call_duration_seconds_bucket{tool=\"echo\",le=\"+Inf\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_call_duration_seconds_sum{tool=\"echo\"} 120.000001\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_call_duration_seconds_count{tool=\"echo\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_fuel_consumed_total{tool=\"echo\"} 5\n"),
            "{text}"
        );

        // Every sample belongs to a family declared above it with both HELP and TYPE.
        let mut helped = BTreeSet::new();
        let mut typed = BTreeSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                helped.insert(rest.split(' ').next().unwrap().to_owned());
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                typed.insert(rest.split(' ').next().unwrap().to_owned());
            } else {
                let name = line.split('{').next().unwrap();
                let family = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|suffix| name.strip_suffix(suffix))
                    .filter(|base| typed.contains(*base))
                    .unwrap_or(name);
                assert!(helped.contains(family) && typed.contains(family), "{line}");
            }
        }
        assert_eq!(helped.len(), 4);
        assert_eq!(helped, typed);
    }
}
