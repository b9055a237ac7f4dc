//! Figures and how they are printed: min/median/max over rounds, each next to its ratio against the
//! baseline measured in the same round. Markdown tables on stdout, optionally JSON to a file.

use std::time::Duration;

use serde_json::{Value, json};

use crate::Options;

/// Minimum, median and maximum of some values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spread {
    pub(crate) min: f64,
    pub(crate) median: f64,
    pub(crate) max: f64,
}

impl Spread {
    pub(crate) fn of(values: &[f64]) -> Self {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Self {
                min: f64::NAN,
                median: f64::NAN,
                max: f64::NAN,
            };
        }
        v.sort_by(f64::total_cmp);
        Self {
            min: v[0],
            median: percentile(&v, 50.0),
            max: v[v.len() - 1],
        }
    }
}

/// The `p`th percentile of sorted values (nearest rank, interpolated between neighbours).
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

/// Sorted copy, for percentiles.
pub(crate) fn sorted(values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Microseconds, as a float.
pub(crate) fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// One figure: a value per round and, when it has one, the baseline measured in the same round.
pub(crate) struct Row {
    label: String,
    unit: &'static str,
    values: Vec<f64>,
    baseline: Option<(String, Vec<f64>)>,
}

impl Row {
    pub(crate) fn new(label: impl Into<String>, unit: &'static str, values: Vec<f64>) -> Self {
        Self {
            label: label.into(),
            unit,
            values,
            baseline: None,
        }
    }

    /// Compare with `baseline`, round by round: the ratio column is value / baseline.
    pub(crate) fn vs(mut self, name: impl Into<String>, baseline: Vec<f64>) -> Self {
        self.baseline = Some((name.into(), baseline));
        self
    }

    fn ratios(&self) -> Option<Vec<f64>> {
        let (_, base) = self.baseline.as_ref()?;
        Some(self.values.iter().zip(base).map(|(v, b)| v / b).collect())
    }
}

/// A table of rows under a heading, printed as soon as it is complete.
pub(crate) struct Section {
    title: String,
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Section {
    pub(crate) fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, row: Row) {
        self.rows.push(row);
    }

    pub(crate) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

/// Everything measured in one run.
pub(crate) struct Report {
    machine: Value,
    sections: Vec<Section>,
    targets: Vec<(String, String, bool)>,
}

fn fmt(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn first_line(path: &str, key: &str) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with(key))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default()
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

impl Report {
    pub(crate) fn new(options: &Options) -> Self {
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        let machine = json!({
            "cpu": first_line("/proc/cpuinfo", "model name"),
            "cores": cores,
            "memory": first_line("/proc/meminfo", "MemTotal"),
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
            "loadavg_start": loadavg(),
            "quick": options.quick,
            "rounds": options.rounds,
        });
        println!(
            "# toolhost benchmark{}\n",
            if options.quick { " (quick)" } else { "" }
        );
        println!(
            "machine: {} x {}, {}, Linux {}; load average at start {}; {} rounds per figure\n",
            cores,
            machine["cpu"].as_str().unwrap_or("?"),
            machine["memory"].as_str().unwrap_or("?"),
            machine["kernel"].as_str().unwrap_or("?"),
            machine["loadavg_start"].as_str().unwrap_or("?"),
            options.rounds,
        );
        println!(
            "Each figure: min / median / max over rounds; \"x baseline\" is value / baseline, round by round.\n"
        );
        Self {
            machine,
            sections: Vec::new(),
            targets: Vec::new(),
        }
    }

    /// Print `section` and keep it for the JSON output.
    pub(crate) fn add(&mut self, section: Section) {
        println!("## {}\n", section.title);
        println!(
            "| figure | min | median | max | unit | baseline | x baseline (min / median / max) |"
        );
        println!("| --- | ---: | ---: | ---: | --- | --- | --- |");
        for r in &section.rows {
            let s = Spread::of(&r.values);
            let (base, ratio) = match (&r.baseline, r.ratios()) {
                (Some((name, b)), Some(q)) => {
                    let b = Spread::of(b);
                    let q = Spread::of(&q);
                    (
                        format!("{name}: {} {}", fmt(b.median), r.unit),
                        format!("{} / **{}** / {}", fmt(q.min), fmt(q.median), fmt(q.max)),
                    )
                }
                _ => ("".into(), "".into()),
            };
            let label = &r.label;
            println!(
                "| {label} | {} | **{}** | {} | {} | {base} | {ratio} |",
                fmt(s.min),
                fmt(s.median),
                fmt(s.max),
                r.unit
            );
        }
        for n in &section.notes {
            println!("\n{n}");
        }
        println!();
        self.sections.push(section);
    }

    /// Record where a figure stands against a target of the issue.
    pub(crate) fn target(&mut self, name: &str, standing: String, met: bool) {
        println!(
            "target: {name}: {standing} -> {}\n",
            if met { "MET" } else { "NOT MET" }
        );
        self.targets.push((name.into(), standing, met));
    }

    pub(crate) fn finish(&mut self, took: Duration) {
        self.machine["loadavg_end"] = json!(loadavg());
        self.machine["seconds"] = json!(took.as_secs_f64());
        if !self.targets.is_empty() {
            println!("## Targets\n");
            for (name, standing, met) in &self.targets {
                println!(
                    "- {}: {name}: {standing}",
                    if *met { "MET" } else { "NOT MET" }
                );
            }
            println!();
        }
        println!(
            "load average at end {}; {:.1} s in all",
            loadavg(),
            took.as_secs_f64()
        );
    }

    pub(crate) fn to_json(&self) -> String {
        let sections: Vec<Value> = self
            .sections
            .iter()
            .map(|s| {
                let rows: Vec<Value> = s
                    .rows
                    .iter()
                    .map(|r| {
                        let v = Spread::of(&r.values);
                        let mut row = json!({
                            "figure": r.label, "unit": r.unit, "values": r.values,
                            "min": v.min, "median": v.median, "max": v.max,
                        });
                        if let (Some((name, b)), Some(q)) = (&r.baseline, r.ratios()) {
                            let q = Spread::of(&q);
                            row["baseline"] = json!({ "name": name, "values": b });
                            row["ratio"] =
                                json!({ "min": q.min, "median": q.median, "max": q.max });
                        }
                        row
                    })
                    .collect();
                json!({ "title": s.title, "rows": rows, "notes": s.notes })
            })
            .collect();
        let targets: Vec<Value> = self
            .targets
            .iter()
            .map(|(n, s, m)| json!({ "target": n, "standing": s, "met": m }))
            .collect();
        serde_json::to_string_pretty(
            &json!({ "machine": self.machine, "sections": sections, "targets": targets }),
        )
        .unwrap_or_default()
    }
}
