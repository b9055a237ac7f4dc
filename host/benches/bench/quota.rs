//! Part 11: what a fair share costs. The same echo call in process, with and without a tool quota
//! that never refuses (every call takes a token and is counted while it runs), alternating rounds;
//! and, when `TOOLHOST_BENCH_STATE_URL` names a PostgreSQL (scripts/bench.sh starts a throwaway
//! one), the same quota shared by a fleet through it.

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
    // The fleet's limiter: a calls bucket reserved in blocks (a burst of 2000 reserves 100 at a
    // time); with `in-flight`, places leased from the database in blocks (a limit of 1000 leases 50
    // at a time) and kept spare between calls.
    let (shared, shared_running) = match std::env::var("TOOLHOST_BENCH_STATE_URL") {
        Ok(url) => (
            Some(fleet_pipeline(&url, "").await?),
            Some(fleet_pipeline(&url, ", in-flight = 1000").await?),
        ),
        Err(_) => (None, None),
    };
    let echo = || CallRequest {
        tool: "echo".into(),
        input: json!({ "text": "x" }),
        origin: "bench",
        ..CallRequest::default()
    };
    for p in [Some(&a), Some(&b), shared.as_ref(), shared_running.as_ref()]
        .into_iter()
        .flatten()
    {
        let out = p.call(echo()).await;
        if out.is_error() {
            return Err(out.content);
        }
    }
    let n = o.pick(2000, 500);
    let (mut without, mut with) = (vec![], vec![]);
    let (mut fleet_wide, mut fleet_running) = (vec![], vec![]);
    for _ in 0..o.rounds {
        let mut each = vec![(&a, &mut without), (&b, &mut with)];
        if let (Some(p), Some(q)) = (&shared, &shared_running) {
            each.push((p, &mut fleet_wide));
            each.push((q, &mut fleet_running));
        }
        for (p, into) in each {
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
    if !fleet_wide.is_empty() {
        s.row(
            Row::new("echo under a fleet's calls quota", "µs", fleet_wide.clone())
                .vs("no quota", without.clone()),
        );
        s.row(
            Row::new("... and a fleet's in-flight", "µs", fleet_running.clone())
                .vs("no quota", without.clone()),
        );
    }
    s.row(Row::new("echo, no quota", "µs", without.clone()));
    s.note(format!(
        "{n} sequential in-process calls per round, alternating; the quota never refuses, so the difference is the \
         limiter's own work per call: one lock, the buckets refilled and taken, the fuel charged at the end."
    ));
    if fleet_wide.is_empty() {
        s.note("no fleet row: TOOLHOST_BENCH_STATE_URL is not set (scripts/bench.sh sets it when PostgreSQL is installed)");
    } else {
        s.note(
            "the fleet's rows share the quota through a local PostgreSQL: tokens reserved 100 at a time; \
             with in-flight, places leased 50 at a time and kept spare for a second after a call ends, \
             so sequential calls reuse one place and reach the database only for the calls' tokens.",
        );
    }
    report.add(s);
    println!(
        "quota: a call under a quota {:.3}x one without",
        Spread::of(&with).median / Spread::of(&without).median
    );
    if !fleet_wide.is_empty() {
        println!(
            "quota: a call under a fleet's calls quota {:.3}x one without; with in-flight {:.3}x",
            Spread::of(&fleet_wide).median / Spread::of(&without).median,
            Spread::of(&fleet_running).median / Spread::of(&without).median
        );
    }
    println!();
    Ok(())
}

/// A pipeline whose echo quota (`calls` with a burst of 2000, plus `more`) is shared through the
/// PostgreSQL at `url`.
async fn fleet_pipeline(
    url: &str,
    more: &str,
) -> Result<std::sync::Arc<toolhost::exec::Pipeline>, String> {
    let ws = Workspace::new(
        &[("echo", plugin_file("echo"))],
        &format!(
            "[plugins.echo.tools.echo]\n\
             quota = {{ calls = 1000000000, per-s = 1, burst = 2000{more} }}\n"
        ),
    )?;
    let store = toolhost::state::open(&toolhost_config::config::StateStore::Postgres {
        url: url.to_owned(),
        ca_file: None,
    })
    .await
    .map_err(|e| e.to_string())?;
    let ledger = store.ledger("bench").ok_or("the store keeps no ledger")?;
    let p = build_pipeline(&ws).await?;
    p.services().share_quotas(ledger);
    Ok(p)
}
