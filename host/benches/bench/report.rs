//! Figures and how they are printed: min/median/max over rounds, each next to its ratio against the
//! baseline measured in the same round. Markdown tables on stdout as each part ends; at the end the
//! headline (every target, its baseline, its ratio, met or not), and the whole report, headline
//! first, written to a file; optionally JSON.

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

    /// The spread of `values / baseline`, round by round.
    pub(crate) fn of_ratios(values: &[f64], baseline: &[f64]) -> Self {
        Self::of(
            &values
                .iter()
                .zip(baseline)
                .map(|(v, b)| v / b)
                .collect::<Vec<_>>(),
        )
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

    fn markdown(&self) -> String {
        let mut out = format!(
            "## {}\n\n| figure | min | median | max | unit | baseline | x baseline (min / median / max) |\n\
             | --- | ---: | ---: | ---: | --- | --- | --- |\n",
            self.title
        );
        for r in &self.rows {
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
            out += &format!(
                "| {} | {} | **{}** | {} | {} | {base} | {ratio} |\n",
                r.label,
                fmt(s.min),
                fmt(s.median),
                fmt(s.max),
                r.unit
            );
        }
        for n in &self.notes {
            out += &format!("\n{n}\n");
        }
        out.push('\n');
        out
    }
}

/// Where one figure stands against a target of an issue, for the headline table.
pub(crate) struct Target {
    /// The target as the issue states it.
    pub(crate) name: String,
    /// What toolhost measured (median, with its unit).
    pub(crate) toolhost: String,
    /// What it is compared with, measured in the same run.
    pub(crate) baseline: String,
    /// toolhost / baseline, median and the rounds' range.
    pub(crate) ratio: String,
    pub(crate) met: bool,
}

impl Target {
    /// A ratio's spread as the headline shows it: `0.54x (0.43..0.61)`.
    pub(crate) fn ratio(r: Spread) -> String {
        format!("{:.2}x ({:.2}..{:.2})", r.median, r.min, r.max)
    }
}

/// Everything measured in one run.
pub(crate) struct Report {
    machine: Value,
    header: String,
    sections: Vec<Section>,
    targets: Vec<Target>,
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
        let daemon = crate::setup::toolhost_bin();
        let machine = json!({
            "cpu": first_line("/proc/cpuinfo", "model name"),
            "cores": cores,
            "memory": first_line("/proc/meminfo", "MemTotal"),
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
            "loadavg_start": loadavg(),
            "quick": options.quick,
            "rounds": options.rounds,
            "toolhost": daemon,
        });
        let header = format!(
            "machine: {} x {}, {}, Linux {}; load average at start {}; {} rounds per figure\n\n\
             the daemon: {}\n\n\
             Each figure: min / median / max over rounds; \"x baseline\" is value / baseline, round by round.\n",
            cores,
            machine["cpu"].as_str().unwrap_or("?"),
            machine["memory"].as_str().unwrap_or("?"),
            machine["kernel"].as_str().unwrap_or("?"),
            machine["loadavg_start"].as_str().unwrap_or("?"),
            options.rounds,
            daemon.display(),
        );
        println!(
            "# toolhost benchmark{}\n\n{header}",
            if options.quick { " (quick)" } else { "" }
        );
        Self {
            machine,
            header,
            sections: Vec::new(),
            targets: Vec::new(),
        }
    }

    /// Print `section` and keep it for the report and the JSON output.
    pub(crate) fn add(&mut self, section: Section) {
        print!("{}", section.markdown());
        self.sections.push(section);
    }

    /// Record where a figure stands against a target.
    pub(crate) fn target(&mut self, target: Target) {
        println!(
            "target: {}: {} against {}: {} -> {}\n",
            target.name,
            target.toolhost,
            target.baseline,
            target.ratio,
            if target.met { "MET" } else { "NOT MET" }
        );
        self.targets.push(target);
    }

    /// The headline: every target of the run, its figure, its baseline and where it stands.
    fn headline(&self) -> String {
        let mut out = String::from(
            "## Headline\n\n| target | toolhost | baseline (same run) | ratio | met |\n\
             | --- | --- | --- | --- | --- |\n",
        );
        for t in &self.targets {
            out += &format!(
                "| {} | {} | {} | {} | {} |\n",
                t.name,
                t.toolhost,
                t.baseline,
                t.ratio,
                if t.met { "**met**" } else { "not met" }
            );
        }
        out
    }

    /// Print the headline and write the whole report, headline first, to `path`.
    pub(crate) fn finish(&mut self, took: Duration, path: &std::path::Path) {
        self.machine["loadavg_end"] = json!(loadavg());
        self.machine["seconds"] = json!(took.as_secs_f64());
        let end = format!(
            "load average at end {}; {:.1} s in all\n",
            loadavg(),
            took.as_secs_f64()
        );
        let headline = if self.targets.is_empty() {
            String::new()
        } else {
            self.headline()
        };
        println!("{headline}\n{end}");
        let mut whole = format!("# toolhost benchmark\n\n{}\n{headline}\n", self.header);
        for s in &self.sections {
            whole += &s.markdown();
        }
        whole += &end;
        match std::fs::write(path, whole) {
            Ok(()) => println!(
                "the whole report, headline first: {}",
                path.canonicalize().as_deref().unwrap_or(path).display()
            ),
            Err(e) => eprintln!("bench: cannot write {}: {e}", path.display()),
        }
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
            .map(|t| {
                json!({ "target": t.name, "toolhost": t.toolhost, "baseline": t.baseline,
                        "ratio": t.ratio, "met": t.met })
            })
            .collect();
        serde_json::to_string_pretty(
            &json!({ "machine": self.machine, "sections": sections, "targets": targets }),
        )
        .unwrap_or_default()
    }
}
