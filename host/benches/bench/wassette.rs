//! Part 14: against the closest peer, Microsoft's Wassette, on the same component. Both serve
//! `plugins/echo.wasm` over MCP stdio, driven by the same client, alternately in each round: server
//! CPU per call and calls/s. Wassette also instantiates a fresh store per call (without a pooling
//! allocator, fuel or deadlines); it serves the contract's exported `call` function as a tool of its
//! own naming, which runs the same guest code as toolhost's `echo`.
//!
//! Wassette's source is fetched and built outside the repository (`scripts/bench.sh --only
//! wassette` does it, or `TOOLHOST_BENCH_WASSETTE` names a binary); none of its code is in toolhost.
//! Both run with their default logging: toolhost writes its audit log and one log line per call.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::Options;
use crate::client::{StdioClient, calls, result};
use crate::report::{Report, Row, Section, Spread, Target};
use crate::servers::{Kind, spawn_stdio};
use crate::setup::{Workspace, plugin_file};

/// The Wassette binary to measure, if there is one.
pub(crate) fn binary() -> Option<PathBuf> {
    std::env::var_os("TOOLHOST_BENCH_WASSETTE")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
}

fn spawn_wassette(bin: &Path, ws: &Workspace) -> Result<StdioClient, String> {
    let dir = ws.path().join("wassette-plugins");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    std::fs::copy(plugin_file("echo"), dir.join("echo.wasm")).map_err(|e| e.to_string())?;
    StdioClient::spawn(
        bin,
        &["serve", "--stdio", "--plugin-dir", dir.to_str().unwrap()],
        ws.path(),
    )
}

fn version(bin: &Path) -> String {
    std::process::Command::new(bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let Some(bin) = binary() else {
        let mut s = Section::new("14. Against Wassette on the same component: not measured");
        s.note(
            "TOOLHOST_BENCH_WASSETTE names no binary: run `scripts/bench.sh --only wassette`, which \
             builds Wassette outside the repository.",
        );
        report.add(s);
        return Ok(());
    };
    let ws = Workspace::new(&[("echo", plugin_file("echo"))], "")?;
    let th = spawn_stdio(Kind::Toolhost, &ws)?;
    let peer = spawn_wassette(&bin, &ws)?;
    th.handshake().await?;
    peer.handshake().await?;
    // Wassette names each export itself (`toolhost_plugin_tool_0_1_0_call` in 0.2.0): the
    // contract's `call`, which runs the same guest code as toolhost's `echo`.
    let list = result(peer.call("tools/list", json!({})).await?)?;
    let tool = list["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .find(|n| n.ends_with("_call"))
        .ok_or_else(|| format!("Wassette lists no tool for the contract's call: {list}"))?
        .to_owned();
    let mine = json!({ "text": "hello, world" });
    let theirs = json!({ "name": "echo", "input": mine.to_string() });
    // CPU comes in 10 ms ticks: enough calls that a round of toolhost's holds about seventy of them
    // (4,000 calls held about 25, a 4% step in the ratio).
    let n = o.pick(12_000, 3_000);
    // Warm up, and check that both answer with the echo.
    for (server, name, args) in [(&th, "echo", &mine), (&peer, tool.as_str(), &theirs)] {
        let (_, _, text) = calls(server, n / 4, name, args).await?;
        if !text.contains("hello, world") {
            return Err(format!("{name}: unexpected answer {text}"));
        }
    }
    let (mut cpu, mut peer_cpu, mut rate, mut peer_rate) = (vec![], vec![], vec![], vec![]);
    for _ in 0..o.rounds {
        let (c, r, _) = calls(&th, n, "echo", &mine).await?;
        let (pc, pr, _) = calls(&peer, n, &tool, &theirs).await?;
        cpu.push(c);
        rate.push(r);
        peer_cpu.push(pc);
        peer_rate.push(pr);
    }
    th.close().await;
    peer.close().await;

    let who = version(&bin);
    let mut s = Section::new(format!(
        "14. Against Wassette ({who}) on the same component: echo over MCP stdio ({n} calls x {} rounds)",
        o.rounds
    ));
    let ratio = Spread::of_ratios(&cpu, &peer_cpu);
    s.row(
        Row::new("toolhost server CPU per call", "us", cpu.clone())
            .vs("Wassette", peer_cpu.clone()),
    );
    s.row(Row::new("toolhost calls/s", "calls/s", rate).vs("Wassette", peer_rate));
    s.note(
        "The same plugins/echo.wasm in both, the same client, alternating. Server CPU is user + system \
         time of the whole server process from /proc (10 ms ticks). toolhost validates, gates, runs the \
         call in a fresh pooled instance with fuel, deadlines and a memory limit, and writes the audit \
         log; Wassette builds a linker and a store and instantiates the component for every call.",
    );
    report.add(s);
    report.target(Target {
        name: "against the closest peer: at most a fifth of Wassette's server CPU per call".into(),
        toolhost: format!("{:.1} us", Spread::of(&cpu).median),
        baseline: format!("{who} {:.1} us", Spread::of(&peer_cpu).median),
        ratio: Target::ratio(ratio),
        met: ratio.median <= 0.2,
    });
    Ok(())
}
