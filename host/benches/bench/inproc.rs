//! Part 1: one `echo` call through the whole pipeline in-process, stage by stage, against the same echo
//! done in plain Rust. And what a failed call (trap, fuel exhaustion, timeout) costs beyond its guest work,
//! against a normal call of the same plugin.

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};
use toolhost::exec::{CallRequest, Pipeline, StageTimes};

use crate::Options;
use crate::report::{Report, Row, Section, Spread, Target, percentile, sorted, us};
use crate::setup::{Workspace, pipeline as build_pipeline, plugin_file};

/// The target of the issue: everything but the guest's own work, median.
const OVERHEAD_TARGET_US: f64 = 50.0;

fn req(tool: &str, input: Value) -> CallRequest {
    CallRequest {
        tool: tool.into(),
        input,
        origin: "bench",
        ..CallRequest::default()
    }
}

/// The echo plugin's work, in plain Rust: parse the input, repeat the text, build the structured result.
fn native_echo(input: &Value) -> (String, Value) {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Input {
        text: String,
        #[serde(default = "one")]
        repeat: u64,
    }
    fn one() -> u64 {
        1
    }
    let i: Input = serde_json::from_value(input.clone()).expect("echo input");
    let text = i.text.repeat(i.repeat as usize);
    let structured = json!({ "text": text });
    (text, structured)
}

/// Per-call time of the native echo, timed over `n` calls at once (a clock read costs as much as the call).
fn time_native(input: &Value, n: usize) -> Duration {
    let t = Instant::now();
    for _ in 0..n {
        black_box(native_echo(black_box(input)));
    }
    t.elapsed() / n as u32
}

fn echo_workspace() -> Result<Workspace, String> {
    // A default deployment: audit log on, compile cache on, default permission mode (echo is read-only).
    Workspace::new(&[("echo", plugin_file("echo"))], "")
}

async fn calls(
    p: &Pipeline,
    tool: &str,
    input: &Value,
    n: usize,
) -> Result<Vec<StageTimes>, String> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let (o, t) = p.call_timed(req(tool, input.clone())).await;
        if o.is_error() && !tool_may_fail(tool) {
            return Err(format!("{tool} failed: {}", o.content));
        }
        out.push(t);
    }
    Ok(out)
}

fn tool_may_fail(tool: &str) -> bool {
    tool.contains("spin") || tool.ends_with("trap")
}

fn median_of(times: &[StageTimes], f: impl Fn(&StageTimes) -> Duration) -> f64 {
    percentile(&sorted(times.iter().map(|t| us(f(t)))), 50.0)
}

type Stage = (&'static str, fn(&StageTimes) -> Duration);

const STAGES: [Stage; 11] = [
    ("begin (call id, input hash)", |t| t.begin),
    ("find", |t| t.find),
    ("validate", |t| t.validate),
    ("gate", |t| t.gate),
    (
        "instantiate (slot, input text, store, WASI ctx, instance)",
        |t| t.instantiate,
    ),
    ("of which wasmtime's instantiation", |t| t.instance),
    ("call (guest work, host calls, lift/lower)", |t| t.guest),
    ("teardown (drop store, stdio)", |t| t.teardown),
    ("of which dropping the store (slot reset)", |t| t.store_drop),
    ("shape", |t| t.shape),
    ("audit + stats", |t| t.record),
];

/// Part 1.
pub(crate) async fn pipeline(o: &Options, report: &mut Report) -> Result<(), String> {
    let ws = echo_workspace()?;
    let p = build_pipeline(&ws).await?;
    let input = json!({ "text": "hello, world" });
    let n = o.pick(2000, 300);
    calls(&p, "echo", &input, n / 2).await?; // warm up: slots, caches, allocator
    // The same echo built as it was when issue 42 was filed (wasm32-wasip2: WASI's imports and two
    // more core modules), the baseline of a fresh sandbox's cost; scripts/bench.sh builds it.
    let then = match plugin_file("echo_wasip2") {
        f if f.is_file() => {
            let ws = Workspace::new(&[("echo", f)], "")?;
            let p = build_pipeline(&ws).await?;
            calls(&p, "echo", &input, n / 2).await?;
            Some((ws, p))
        }
        _ => None,
    };
    let mut rounds: Vec<Vec<StageTimes>> = Vec::new();
    let mut then_rounds: Vec<Vec<StageTimes>> = Vec::new();
    let mut native = Vec::new();
    for _ in 0..o.rounds {
        native.push(us(time_native(&input, n * 10)));
        rounds.push(calls(&p, "echo", &input, n).await?);
        if let Some((_, p)) = &then {
            then_rounds.push(calls(p, "echo", &input, n).await?);
        }
    }
    let per_round = |f: fn(&StageTimes) -> Duration| -> Vec<f64> {
        rounds.iter().map(|r| median_of(r, f)).collect()
    };

    let mut s = Section::new(format!(
        "1. One echo call in-process through the whole pipeline ({n} calls x {} rounds; medians per round)",
        o.rounds
    ));
    let total = per_round(|t| t.total);
    for (label, f) in STAGES {
        s.row(Row::new(label, "us", per_round(f)).vs("share of total", total.clone()));
    }
    s.row(Row::new("total", "us", total.clone()).vs("native echo", native.clone()));
    let overhead = per_round(|t| t.overhead());
    s.row(
        Row::new("overhead: total - call", "us", overhead.clone())
            .vs("native echo", native.clone()),
    );
    s.row(
        Row::new(
            "floor: wasmtime's instantiation + dropping the store",
            "us",
            per_round(|t| t.instance + t.store_drop),
        )
        .vs("overhead", overhead.clone()),
    );
    s.row(Row::new(
        "native echo (serde in, repeat, json out)",
        "us",
        native.clone(),
    ));
    let all = sorted(rounds.iter().flatten().map(|t| us(t.total)));
    s.note(format!(
        "All {} calls: p50 {:.1} us, p99 {:.1} us, max {:.1} us. The stages are measured on the real call path \
         (`Pipeline::call_timed`); \"x baseline\" on a stage row is its share of the total.",
        all.len(),
        percentile(&all, 50.0),
        percentile(&all, 99.0),
        all.last().copied().unwrap_or(f64::NAN)
    ));
    s.note(format!("Engine: {}.", engine_note(&p)));
    report.add(s);
    let fresh = |t: &StageTimes| t.instantiate + t.teardown;
    let now = per_round(fresh);
    let before: Vec<f64> = then_rounds.iter().map(|r| median_of(r, fresh)).collect();
    let r = Spread::of_ratios(&now, &before);
    report.target(Target {
        name:
            "a fresh sandbox of echo (instantiate + teardown) at most a third of the issue's start"
                .into(),
        toolhost: format!("{:.2} us", Spread::of(&now).median),
        baseline: if before.is_empty() {
            "not measured: target/fixtures/echo_wasip2.wasm is built by scripts/bench.sh".into()
        } else {
            format!(
                "the same echo built for wasm32-wasip2, as then: {:.2} us",
                Spread::of(&before).median
            )
        },
        ratio: Target::ratio(r),
        met: r.median <= 1.0 / 3.0,
    });
    let m = Spread::of(&overhead);
    report.target(Target {
        name: "pipeline overhead for echo under 50 us (issue 20)".into(),
        toolhost: format!("{:.1} us ({:.1}..{:.1})", m.median, m.min, m.max),
        baseline: format!("{OVERHEAD_TARGET_US} us"),
        ratio: format!("{:.2}x", m.median / OVERHEAD_TARGET_US),
        met: m.median < OVERHEAD_TARGET_US,
    });
    Ok(())
}

pub(crate) fn engine_note(p: &Arc<Pipeline>) -> String {
    let sandbox = p.services().registry.sandbox();
    sandbox.describe_engine()
}

const TIMEOUT_MS: u64 = 20;

/// echo, and the hostile fixture three times: as is, with 20 M fuel (`fuel_*`), with a 20 ms timeout
/// (`slow_*`, its breaker off: otherwise the calls after three timeouts are refused at once, and a
/// refusal is not a timeout's clean-up).
fn hostile_workspace() -> Result<Workspace, String> {
    let hostile = plugin_file("hostile");
    let toml = format!(
        "[plugins.fuel]\nprefix = \"fuel_\"\nlimits = {{ fuel = 20000000 }}\n\
         [plugins.slow]\nprefix = \"slow_\"\nlimits = {{ timeout-ms = {TIMEOUT_MS} }}\n\
         [plugins.slow.breaker]\ndisabled = true\n"
    );
    Workspace::new(
        &[
            ("echo", plugin_file("echo")),
            ("hostile", hostile.clone()),
            ("fuel", hostile.clone()),
            ("slow", hostile),
        ],
        &toml,
    )
}

/// Part "failures": trap, fuel exhaustion and timeout against normal calls of the same plugin.
pub(crate) async fn failures(o: &Options, report: &mut Report) -> Result<(), String> {
    let ws = hostile_workspace()?;
    let p = build_pipeline(&ws).await?;
    let n = o.pick(200, 40);
    let nt = o.pick(30, 8); // timeouts take TIMEOUT_MS each
    let empty = json!({});
    let sleep = json!({ "ms": TIMEOUT_MS });
    calls(&p, "echo_input", &empty, n).await?;
    calls(&p, "trap", &empty, n / 4).await?;
    let as_long = json!({ "iterations": iterations_as_long(&p).await? });

    let (mut normal, mut trap, mut fuel, mut after_trap) = (vec![], vec![], vec![], vec![]);
    let mut spun = vec![];
    let (mut normal_total, mut trap_total) = (vec![], vec![]);
    let (mut slept, mut timed_out) = (vec![], vec![]);
    let limit = us(Duration::from_millis(TIMEOUT_MS));
    for _ in 0..o.rounds {
        let ok = calls(&p, "echo_input", &empty, n).await?;
        normal.push(median_of(&ok, StageTimes::overhead));
        normal_total.push(median_of(&ok, |t| t.total));
        let mut t = Vec::new();
        let mut next = Vec::new();
        for _ in 0..n {
            let (out, times) = p.call_timed(req("trap", empty.clone())).await;
            if out.error_kind().map(|k| k.as_str()) != Some("trap") {
                return Err(format!("trap: {}", out.content));
            }
            t.push(times);
            next.extend(calls(&p, "echo_input", &empty, 1).await?);
        }
        trap.push(median_of(&t, StageTimes::overhead));
        trap_total.push(median_of(&t, |t| t.total));
        after_trap.push(median_of(&next, |t| t.total));
        // Each fuel exhaustion beside a normal call of the same tool that runs about as long: a
        // millisecond of guest code leaves the host's caches as cold for either.
        let (mut f, mut b) = (Vec::new(), Vec::new());
        for _ in 0..n / 4 {
            f.extend(calls(&p, "fuel_spin", &empty, 1).await?);
            b.extend(calls(&p, "fuel_spin", &as_long, 1).await?);
        }
        fuel.push(median_of(&f, StageTimes::overhead));
        spun.push(median_of(&b, StageTimes::overhead));
        let s = calls(&p, "sleep", &sleep, nt).await?;
        slept.push(median_of(&s, |t| t.total) - limit);
        let to = calls(&p, "slow_spin", &empty, nt).await?;
        if let Some(o) = to.iter().find(|t| us(t.total) < limit) {
            return Err(format!("slow_spin ended before its deadline: {o:?}"));
        }
        timed_out.push(median_of(&to, |t| t.total) - limit);
    }
    let mut s = Section::new("1b. What a failed call costs beyond its guest work (hostile plugin)");
    s.row(Row::new("normal call: total - call", "us", normal.clone()));
    s.row(Row::new("trap: total - call", "us", trap.clone()).vs("normal call", normal.clone()));
    s.row(
        Row::new("trap: total", "us", trap_total.clone())
            .vs("normal call total", normal_total.clone()),
    );
    s.row(
        Row::new(
            "normal call right after a trap: total",
            "us",
            after_trap.clone(),
        )
        .vs("normal call total", normal_total.clone()),
    );
    s.row(
        Row::new(
            "a normal call as long (spin, ~20 M fuel): total - call",
            "us",
            spun.clone(),
        )
        .vs("normal call", normal.clone()),
    );
    s.row(
        Row::new("fuel exhausted (20 M): total - call", "us", fuel.clone())
            .vs("normal call", normal.clone()),
    );
    s.row(
        Row::new("fuel exhausted (20 M): total - call", "us", fuel.clone())
            .vs("a normal call as long", spun.clone()),
    );
    s.row(Row::new(
        format!("normal {TIMEOUT_MS} ms sleep: total - {TIMEOUT_MS} ms"),
        "us",
        slept.clone(),
    ));
    s.row(
        Row::new(
            format!("timeout at {TIMEOUT_MS} ms (spin): total - {TIMEOUT_MS} ms"),
            "us",
            timed_out.clone(),
        )
        .vs(format!("normal {TIMEOUT_MS} ms sleep"), slept.clone()),
    );
    s.note(
        "\"total - call\" is everything but the guest's own run: slot, store, instance, teardown, shaping, audit. \
         A trap's unwinding is inside \"call\" (wasmtime takes no backtrace); so is a timed-out guest's unwinding, so timeouts are \
         compared by total - limit against a normal call that waits on the same timer (a 20 ms sleep), and a fuel \
         exhaustion against a normal call of the same tool that spins about as long (a short call finds the host's \
         caches warmer after the previous call than one that ran 1 ms of guest code).",
    );
    report.add(s);
    let worst = [
        Spread::of(&trap).median / Spread::of(&normal).median,
        Spread::of(&fuel).median / Spread::of(&spun).median,
    ];
    let to_ratio = Spread::of(&timed_out).median / Spread::of(&slept).median;
    let next = Spread::of(&after_trap).median / Spread::of(&normal_total).median;
    report.target(Target {
        name: "a timeout, fuel exhaustion or trap costs no more than a normal call to clean up (issue 20)"
            .into(),
        toolhost: format!(
            "trap {:.2}x, fuel {:.2}x, timeout {:.2}x; the call after a trap {next:.2}x",
            worst[0], worst[1], to_ratio
        ),
        baseline: "a normal call's cost beyond the guest's run (for a fuel exhaustion, a normal call as long)"
            .into(),
        ratio: format!(
            "{:.2}x at worst",
            worst.iter().copied().fold(to_ratio, f64::max)
        ),
        met: worst.iter().all(|r| *r <= 1.10) && to_ratio <= 1.10,
    });
    Ok(())
}

/// Iterations of `fuel_spin` that end normally after about as much guest time as its fuel takes to
/// run out: scaled from a probe, then lowered until the call succeeds.
async fn iterations_as_long(p: &Pipeline) -> Result<u64, String> {
    const PROBE: u64 = 1_000_000;
    let guest = |t: &[StageTimes]| median_of(t, |t| t.guest);
    let exhausted = guest(&calls(p, "fuel_spin", &json!({}), 9).await?);
    let probe = guest(&calls(p, "fuel_spin", &json!({ "iterations": PROBE }), 9).await?);
    let mut iterations = (PROBE as f64 * exhausted / probe.max(1.0) * 0.95) as u64;
    for _ in 0..20 {
        let (out, _) = p
            .call_timed(req("fuel_spin", json!({ "iterations": iterations })))
            .await;
        if !out.is_error() {
            return Ok(iterations);
        }
        iterations = iterations * 9 / 10;
    }
    Err("fuel_spin: no iteration count ends before its fuel does".into())
}

/// `--stages TOOL INPUT N`: the stage medians of N calls of one tool (echo, or the hostile fixture's tools,
/// also as `fuel_*` and `slow_*`), for looking into one figure.
pub(crate) fn stages(tool: &str, input: &str, n: usize) -> ExitCode {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let result = rt.block_on(async {
        let input: Value = serde_json::from_str(input).map_err(|e| format!("INPUT: {e}"))?;
        let ws = hostile_workspace()?;
        let p = build_pipeline(&ws).await?;
        calls(&p, tool, &input, n.min(50)).await?;
        let times = calls(&p, tool, &input, n).await?;
        for (label, f) in STAGES {
            println!("{:>10.2} us  {label}", median_of(&times, f));
        }
        println!("{:>10.2} us  total", median_of(&times, |t| t.total));
        Ok::<_, String>(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--profile-calls N`: N echo calls in-process after a short warm-up, nothing printed but one line; run
/// twice under callgrind with different N, the difference of the instruction counts is the cost of N calls.
pub(crate) fn profile(n: usize) -> ExitCode {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let result = rt.block_on(async {
        let ws = echo_workspace()?;
        let p = build_pipeline(&ws).await?;
        let input = json!({ "text": "hello, world" });
        calls(&p, "echo", &input, 50).await?;
        let t = Instant::now();
        calls(&p, "echo", &input, n).await?;
        Ok::<_, String>(t.elapsed())
    });
    match result {
        Ok(d) => {
            println!("{n} calls in {:.1} ms", d.as_secs_f64() * 1e3);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}
