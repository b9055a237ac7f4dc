//! Part 11: what a fair share costs. The same echo call in process, with and without a tool quota
//! that never refuses (every call takes a token and is counted while it runs), alternating rounds.

use std::time::Instant;

use serde_json::json;
use toolhost::exec::CallRequest;

use crate::Options;
use crate::report::{Report, Row, Section, Spread};
use crate::setup::{Workspace, pipeline as build_pipeline, plugin_file};

pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let plain = Workspace::new(&[("echo", plugin_file("echo"))], "")?;
    let limited = Workspace::new(
        &[("echo", plugin_file("echo"))],
        "[plugins.echo.tools.echo]\n\
         quota = { calls = 1000000000, per-s = 1, in-flight = 1000, fuel = 1000000000000000 }\n",
    )?;
    let (a, b) = (
        build_pipeline(&plain).await?,
        build_pipeline(&limited).await?,
    );
    let echo = || CallRequest {
        tool: "echo".into(),
        input: json!({ "text": "x" }),
        origin: "bench",
        ..CallRequest::default()
    };
    for p in [&a, &b] {
        let out = p.call(echo()).await;
        if out.is_error() {
            return Err(out.content);
        }
    }
    let n = o.pick(2000, 500);
    let (mut without, mut with) = (vec![], vec![]);
    for _ in 0..o.rounds {
        for (p, into) in [(&a, &mut without), (&b, &mut with)] {
            let t = Instant::now();
            for _ in 0..n {
                p.call(echo()).await;
            }
            into.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
        }
    }
    let mut s =
        Section::new("11. fair shares: an echo call under a tool quota (calls, in-flight, fuel)");
    s.row(Row::new("echo under a quota", "µs", with.clone()).vs("no quota", without.clone()));
    s.row(Row::new("echo, no quota", "µs", without.clone()));
    s.note(format!(
        "{n} sequential in-process calls per round, alternating; the quota never refuses, so the difference is the \
         limiter's own work per call: one lock, the buckets refilled and taken, the fuel charged at the end."
    ));
    report.add(s);
    println!(
        "quota: a call under a quota {:.3}x one without\n",
        Spread::of(&with).median / Spread::of(&without).median
    );
    Ok(())
}
