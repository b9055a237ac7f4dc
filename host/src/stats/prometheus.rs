//! The statistics in the Prometheus text exposition format, for the daemon's `/metrics`.

use std::fmt::Write as _;

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

impl Stats {
    /// The statistics in the Prometheus text exposition format (version 0.0.4), families
    /// `toolhost_calls_total`, `toolhost_call_errors_total`, `toolhost_call_duration_seconds`
    /// and `toolhost_fuel_consumed_total`, each with its HELP and TYPE lines.
    pub fn render_prometheus(&self) -> String {
        let tools = self.copy();
        let mut out = String::new();
        family(
            &mut out,
            "toolhost_calls_total",
            "counter",
            "Tool calls finished, by outcome.",
        );
        for (tool, t) in &tools {
            let tool = escape_label(tool);
            let error = t.calls - t.successes - t.cancelled;
            for (outcome, n) in [
                ("ok", t.successes),
                ("error", error),
                ("cancelled", t.cancelled),
            ] {
                sample(
                    &mut out,
                    "toolhost_calls_total",
                    &tool,
                    &format!("outcome=\"{outcome}\""),
                    n,
                );
            }
        }
        family(
            &mut out,
            "toolhost_call_errors_total",
            "counter",
            "Failed tool calls, by error kind.",
        );
        for (tool, t) in &tools {
            let tool = escape_label(tool);
            for (kind, n) in &t.failures {
                let kind = format!("kind=\"{}\"", kind.as_str());
                sample(&mut out, "toolhost_call_errors_total", &tool, &kind, *n);
            }
        }
        family(
            &mut out,
            "toolhost_call_duration_seconds",
            "histogram",
            "Tool call duration.",
        );
        for (tool, t) in &tools {
            let tool = escape_label(tool);
            let mut cumulative = 0;
            for ((_, le), n) in BUCKETS.iter().zip(t.buckets) {
                cumulative += n;
                sample(
                    &mut out,
                    "toolhost_call_duration_seconds_bucket",
                    &tool,
                    &format!("le=\"{le}\""),
                    cumulative,
                );
            }
            sample(
                &mut out,
                "toolhost_call_duration_seconds_bucket",
                &tool,
                "le=\"+Inf\"",
                t.calls,
            );
            let _ = writeln!(
                out,
                "toolhost_call_duration_seconds_sum{{tool=\"{tool}\"}} {}",
                t.total_us as f64 / 1e6
            );
            sample(
                &mut out,
                "toolhost_call_duration_seconds_count",
                &tool,
                "",
                t.calls,
            );
        }
        family(
            &mut out,
            "toolhost_fuel_consumed_total",
            "counter",
            "Fuel consumed by tool calls.",
        );
        for (tool, t) in &tools {
            sample(
                &mut out,
                "toolhost_fuel_consumed_total",
                &escape_label(tool),
                "",
                t.fuel,
            );
        }
        out
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// One sample line; `tool` is already escaped, `extra` is `""` or more `name="value"` labels.
fn sample(out: &mut String, name: &str, tool: &str, extra: &str, value: u64) {
    let comma = if extra.is_empty() { "" } else { "," };
    let _ = writeln!(out, "{name}{{tool=\"{tool}\"{comma}{extra}}} {value}");
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
    use crate::exec::ErrorKind;

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
