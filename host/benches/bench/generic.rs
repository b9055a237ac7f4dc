//! Part `generic`: what a generic plugin's call costs (input read exactly into component values, the
//! function called through wasmtime's dynamic API, the result written back as JSON) against a
//! contract plugin's call, both in-process through the whole pipeline, rounds interleaved.

use serde_json::{Value, json};
use toolhost::exec::{CallRequest, Pipeline, StageTimes};

use crate::Options;
use crate::report::{Report, Row, Section, percentile, sorted, us};
use crate::setup::{Workspace, pipeline as build_pipeline, plugin_file};

/// A rich value of the fixture's `mirror.everything` (every kind of WIT type once).
fn everything() -> Value {
    json!({"v": {
        "b": true, "i8": -8, "n8": 8, "i16": -16, "n16": 16, "i32": -32, "n32": 32,
        "i64": -64, "n64": 64, "x32": 1.5, "x64": 2.25, "letter": "x", "text": "hello, world",
        "bytes": "AAECAwQFBgcICQ==", "sparse": [1, null, 3], "pair": [1, "one"],
        "fixed": {"tag": "polygon", "value": [{"x": 0, "y": 0}, {"x": 1, "y": 1}]},
        "unit": "cm", "style": ["bold"], "maybe": {"some": 7}, "outcome": {"ok": 1},
        "bare": {"err": null},
        "summaries": [{"count": 1, "total": 2, "label": "a", "units": ["mm"]}],
    }})
}

/// Median total and total-minus-call of `n` calls of `tool`, in microseconds.
pub(crate) async fn medians(
    p: &Pipeline,
    tool: &str,
    input: &Value,
    n: usize,
) -> Result<(f64, f64), String> {
    let mut times: Vec<StageTimes> = Vec::with_capacity(n);
    for _ in 0..n {
        let req = CallRequest {
            tool: tool.into(),
            input: input.clone(),
            origin: "bench",
            ..CallRequest::default()
        };
        let (o, t) = p.call_timed(req).await;
        if o.is_error() {
            return Err(format!("{tool} failed: {}", o.content));
        }
        times.push(t);
    }
    let median = |f: fn(&StageTimes) -> std::time::Duration| {
        percentile(&sorted(times.iter().map(|t| us(f(t)))), 50.0)
    };
    Ok((median(|t| t.total), median(|t| t.overhead())))
}

/// Part `generic`.
pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let ws = Workspace::new(
        &[
            ("echo", plugin_file("echo")),
            ("generic", plugin_file("generic")),
        ],
        // The generic tools are not read-only: no approval, so that both kinds take the same path.
        "[permissions]\nmode = \"bypass\"\n",
    )?;
    let p = build_pipeline(&ws).await?;
    let n = o.pick(2000, 300);
    let cases = [
        ("echo", json!({"text": "hello, world"})),
        ("greet", json!({"name": "hello, world"})),
        ("mirror_mirror", everything()),
    ];
    for (tool, input) in &cases {
        medians(&p, tool, input, n / 4).await?; // warm up
    }
    let mut totals = vec![Vec::new(); cases.len()];
    let mut overheads = vec![Vec::new(); cases.len()];
    for _ in 0..o.rounds {
        for (i, (tool, input)) in cases.iter().enumerate() {
            let (total, overhead) = medians(&p, tool, input, n).await?;
            totals[i].push(total);
            overheads[i].push(overhead);
        }
    }
    let mut s = Section::new(format!(
        "6. A generic plugin's call against a contract plugin's, in-process ({n} calls x {} rounds, interleaved; medians per round)",
        o.rounds
    ));
    s.row(Row::new("contract: echo, total", "us", totals[0].clone()));
    s.row(
        Row::new(
            "generic: greet (string -> string), total",
            "us",
            totals[1].clone(),
        )
        .vs("contract echo", totals[0].clone()),
    );
    s.row(
        Row::new(
            "generic: mirror (every WIT kind, both ways), total",
            "us",
            totals[2].clone(),
        )
        .vs("contract echo", totals[0].clone()),
    );
    s.row(Row::new(
        "contract: echo, total - call",
        "us",
        overheads[0].clone(),
    ));
    s.row(
        Row::new("generic: greet, total - call", "us", overheads[1].clone())
            .vs("contract echo", overheads[0].clone()),
    );
    s.row(
        Row::new("generic: mirror, total - call", "us", overheads[2].clone())
            .vs("contract echo", overheads[0].clone()),
    );
    s.note(
        "Total - call leaves the guest's run out; a generic call's conversions (JSON to component values \
         and back) fall partly in `call` (lowering and lifting happen there) and partly in validate \
         (the exact reading of the input)."
            .to_owned(),
    );
    report.add(s);
    Ok(())
}
