//! Part 3: cold start. In-process, engine plus registry ready; and the daemon, from spawn to the first
//! answered `tools/list` over stdio (against the native rmcp server's own start). With 1 and 20 plugins
//! (distinct copies of echo and math, each with a tool prefix), with an empty and with a warm compile cache.

use std::time::Instant;

use serde_json::json;

use crate::Options;
use crate::client::result;
use crate::report::{Report, Row, Section, Spread, Target};
use crate::servers::{Kind, spawn_stdio};
use crate::setup::Workspace;

const TARGET_MS: f64 = 150.0;
/// Warm starts of each server per round, alternating; the round's figure is their median.
const STARTS_PER_ROUND: usize = 5;

/// Engine and registry ready, in ms; checks that every plugin loaded.
async fn open_registry(ws: &Workspace, n: usize) -> Result<f64, String> {
    let t = Instant::now();
    let config = ws.config()?;
    let registry = toolhost::host::Host::open_registry(config)
        .await
        .map_err(|e| e.to_string())?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let loaded = registry
        .catalog()
        .plugins
        .values()
        .filter(|s| matches!(s, toolhost::registry::PluginStatus::Loaded { .. }))
        .count();
    if loaded != n {
        return Err(format!("{loaded} of {n} plugins loaded"));
    }
    Ok(ms)
}

/// Spawn to the first `tools/list` answer, in ms, and the number of tools listed.
async fn daemon(kind: Kind, ws: &Workspace) -> Result<(f64, usize), String> {
    let t = Instant::now();
    let c = spawn_stdio(kind, ws)?;
    c.handshake().await?;
    let list = result(c.call("tools/list", json!({})).await?)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let tools = list["tools"].as_array().map_or(0, Vec::len);
    c.close().await;
    Ok((ms, tools))
}

fn clear_cache(ws: &Workspace) {
    let _ = std::fs::remove_dir_all(ws.path().join(".toolhost/cache"));
}

pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let mut s = Section::new("3. Cold start: 1 and 20 plugins, compile cache empty and warm");
    let mut cached20 = Vec::new();
    for n in [1usize, 20] {
        let ws = Workspace::with_copies(n, "")?;
        let (mut lib_cold, mut lib_warm, mut d_cold, mut d_warm, mut native) =
            (vec![], vec![], vec![], vec![], vec![]);
        let mut tools = 0;
        for _ in 0..o.rounds {
            clear_cache(&ws);
            lib_cold.push(open_registry(&ws, n).await?);
            lib_warm.push(open_registry(&ws, n).await?);
            clear_cache(&ws);
            d_cold.push(daemon(Kind::Toolhost, &ws).await?.0);
            // One start is at the mercy of the machine's noise: each round's figure is the
            // median of a few, native and toolhost alternating.
            let (mut n_starts, mut t_starts) = (vec![], vec![]);
            for _ in 0..STARTS_PER_ROUND {
                n_starts.push(daemon(Kind::Native, &ws).await?.0);
                let (ms, t) = daemon(Kind::Toolhost, &ws).await?;
                t_starts.push(ms);
                tools = t;
            }
            native.push(Spread::of(&n_starts).median);
            d_warm.push(Spread::of(&t_starts).median);
        }
        s.row(
            Row::new(
                format!("daemon to first tools/list, {n} plugins, cache warm"),
                "ms",
                d_warm.clone(),
            )
            .vs("native rmcp server", native.clone()),
        );
        s.row(
            Row::new(
                format!("daemon to first tools/list, {n} plugins, cache empty"),
                "ms",
                d_cold.clone(),
            )
            .vs("cache warm", d_warm.clone()),
        );
        s.row(
            Row::new(
                format!("in-process engine + registry, {n} plugins, cache warm"),
                "ms",
                lib_warm.clone(),
            )
            .vs("cache empty", lib_cold.clone()),
        );
        s.row(Row::new(
            format!("in-process engine + registry, {n} plugins, cache empty"),
            "ms",
            lib_cold,
        ));
        s.row(Row::new(
            format!("native rmcp server to first tools/list ({n}: n/a)"),
            "ms",
            native,
        ));
        s.note(format!("{n} plugins: {tools} tools listed."));
        if n == 20 {
            cached20 = d_warm;
        }
    }
    s.note(
        "The daemon figures are wall time from spawning `toolhost serve --stdio` to the `tools/list` answer \
         (initialize, initialized, tools/list sent as soon as possible), as a client sees it; with a warm \
         cache, each round's figure is the median of 5 starts, alternating with the native server's.",
    );
    report.add(s);
    let m = Spread::of(&cached20);
    report.target(Target {
        name: "cold start with 20 cached plugins under 150 ms to the first tools/list (issue 20)"
            .into(),
        toolhost: format!("{:.1} ms ({:.1}..{:.1})", m.median, m.min, m.max),
        baseline: format!("{TARGET_MS} ms"),
        ratio: format!("{:.2}x", m.median / TARGET_MS),
        met: m.median < TARGET_MS,
    });
    Ok(())
}
