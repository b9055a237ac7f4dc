//! Part 12: against what users would write instead of a plugin. A Python tool as a toolhost plugin
//! against the same tool as a FastMCP server (PyPI `fastmcp`), and a JavaScript tool against the same
//! tool on the official TypeScript SDK, each over stdio, driven by the same client, alternately in each
//! round: server CPU per call and calls/s for a small and a larger file, and start-up (spawn to the
//! first `tools/list` answer; toolhost's compile cache warm). The peers run the plugins' own code
//! (`host/benches/peers/`), so that both sides do the same work and differ in how they are served:
//! a fresh sandbox per call against one unsandboxed process.
//!
//! `scripts/bench.sh` installs the peers (`.venv-peers`, `host/benches/peers/node_modules`) and names
//! the interpreters in `TOOLHOST_BENCH_PEERS_PYTHON` and `TOOLHOST_BENCH_NODE`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Options;
use crate::client::{StdioClient, calls, result};
use crate::report::{Report, Row, Section, Spread, Target};
use crate::servers::{Kind, spawn_stdio};
use crate::setup::{Workspace, plugin_file, repo_root};

/// Starts of each server per round, alternating; the round's figure is their median.
const STARTS_PER_ROUND: usize = 3;

/// One language: its plugin, its peer, and the calls both answer.
struct Lang {
    /// As the report names it.
    name: &'static str,
    peer: &'static str,
    plugin: &'static str,
    /// The peer's interpreter (from the environment) and its script, given the plugin's source dir.
    interpreter: &'static str,
    script: &'static str,
    source: &'static str,
    /// (label, file name, file text, arguments).
    cases: Vec<(String, &'static str, String, Value)>,
}

fn csv(rows: usize) -> String {
    let mut text = String::from("region,units,price,note\n");
    for i in 0..rows {
        let region = ["north", "south", "east", "west"][i % 4];
        text.push_str(&format!(
            "{region},{},{}.{},item {}\n",
            i % 17,
            i % 50,
            i % 10,
            i % 97
        ));
    }
    text
}

fn json_doc(items: usize) -> String {
    let items: Vec<Value> = (0..items)
        .map(|i| json!({ "name": format!("part-{i}"), "n": i, "tags": ["a", "b"] }))
        .collect();
    json!({ "items": items }).to_string()
}

fn langs() -> [Lang; 2] {
    [
        Lang {
            name: "Python",
            peer: "FastMCP",
            plugin: "csv_stats",
            interpreter: "TOOLHOST_BENCH_PEERS_PYTHON",
            script: "csv_stats_fastmcp.py",
            source: "plugins/examples/python/csv_stats",
            cases: [(20usize, "small.csv"), (2000, "large.csv")]
                .into_iter()
                .map(|(n, file)| {
                    (
                        format!("{n}-row CSV"),
                        file,
                        csv(n),
                        json!({ "path": file }),
                    )
                })
                .collect(),
        },
        Lang {
            name: "JavaScript",
            peer: "TypeScript SDK",
            plugin: "json_query",
            interpreter: "TOOLHOST_BENCH_NODE",
            script: "json_query_sdk.mjs",
            source: "plugins/examples/js/json_query",
            cases: [(20usize, "small.json"), (2000, "large.json")]
                .into_iter()
                .map(|(n, file)| {
                    (
                        format!("{n}-item JSON"),
                        file,
                        json_doc(n),
                        json!({ "path": file, "query": ".items[].name", "limit": 1000 }),
                    )
                })
                .collect(),
        },
    ]
}

/// Either server of a language, as it is started.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Toolhost,
    Peer,
}

fn spawn(side: Side, lang: &Lang, ws: &Workspace) -> Result<StdioClient, String> {
    match side {
        Side::Toolhost => spawn_stdio(Kind::Toolhost, ws),
        Side::Peer => {
            let interpreter = PathBuf::from(std::env::var(lang.interpreter).unwrap_or_default());
            let script = repo_root().join("host/benches/peers").join(lang.script);
            let source = repo_root().join(lang.source);
            StdioClient::spawn(
                &interpreter,
                &[script.to_str().unwrap(), source.to_str().unwrap()],
                &ws.path().join("data"),
            )
        }
    }
}

/// Spawn to the first `tools/list` answer that lists the tool, in ms. toolhost answers at once and lists
/// each plugin when it has loaded (from the compile cache, or compiled on the first start).
async fn start(side: Side, lang: &Lang, ws: &Workspace) -> Result<f64, String> {
    let t = Instant::now();
    let c = spawn(side, lang, ws)?;
    c.handshake().await?;
    loop {
        let list = result(c.call("tools/list", json!({})).await?)?;
        if list["tools"][0]["name"] == lang.plugin {
            break;
        }
        if t.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "{}: no {} tool after 300 s: {list}",
                lang.name, lang.plugin
            ));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let ms = t.elapsed().as_secs_f64() * 1e3;
    c.close().await;
    Ok(ms)
}

/// Why a language cannot be measured here, if it cannot.
fn missing(lang: &Lang) -> Option<String> {
    if !plugin_file(lang.plugin).is_file() {
        return Some(format!(
            "plugins/{}.wasm is not built (scripts/toolchains.sh --langs {}, then scripts/build-plugins.sh)",
            lang.plugin,
            if lang.name == "Python" {
                "python"
            } else {
                "js"
            }
        ));
    }
    match std::env::var(lang.interpreter) {
        Ok(p) if PathBuf::from(&p).is_file() => None,
        _ => Some(format!(
            "{} is not set: run the part through scripts/bench.sh",
            lang.interpreter
        )),
    }
}

pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let mut s = Section::new(
        "12. Against what users would write instead: a Python and a JavaScript tool as plugins vs \
         FastMCP and the TypeScript SDK, over stdio",
    );
    let mut targets = Vec::new();
    for lang in langs() {
        if let Some(why) = missing(&lang) {
            s.note(format!("{}: not measured: {why}.", lang.name));
            continue;
        }
        let toml = format!(
            "[plugins.{}]\ndirs = [{{ host = \"data\", mode = \"ro\" }}]\n",
            lang.plugin
        );
        let ws = Workspace::new(&[(lang.plugin, plugin_file(lang.plugin))], &toml)?;
        for (_, file, text, _) in &lang.cases {
            ws.write(&format!("data/{file}"), text)?;
        }
        // The first start compiles the plugin into the cache; every later one loads it.
        start(Side::Toolhost, &lang, &ws).await?;
        let (mut starts, mut peer_starts) = (vec![], vec![]);
        let n = o.pick(200, 50);
        let mut per_case: Vec<[Vec<f64>; 4]> =
            lang.cases.iter().map(|_| Default::default()).collect();
        let (th, peer) = (
            spawn(Side::Toolhost, &lang, &ws)?,
            spawn(Side::Peer, &lang, &ws)?,
        );
        th.handshake().await?;
        peer.handshake().await?;
        for (_, _, _, args) in &lang.cases {
            // Warm up, and check that both give the same answer.
            let (_, _, mine) = calls(&th, n / 4 + 1, lang.plugin, args).await?;
            let (_, _, theirs) = calls(&peer, n / 4 + 1, lang.plugin, args).await?;
            if mine != theirs {
                return Err(format!(
                    "{}: toolhost and {} answer differently:\n{mine}\n---\n{theirs}",
                    lang.plugin, lang.peer
                ));
            }
        }
        for _ in 0..o.rounds {
            for (i, (_, _, _, args)) in lang.cases.iter().enumerate() {
                let (cpu, rate, _) = calls(&th, n, lang.plugin, args).await?;
                let (peer_cpu, peer_rate, _) = calls(&peer, n, lang.plugin, args).await?;
                let f = &mut per_case[i];
                f[0].push(cpu);
                f[1].push(peer_cpu);
                f[2].push(rate);
                f[3].push(peer_rate);
            }
            let (mut mine, mut theirs) = (vec![], vec![]);
            for _ in 0..STARTS_PER_ROUND {
                mine.push(start(Side::Toolhost, &lang, &ws).await?);
                theirs.push(start(Side::Peer, &lang, &ws).await?);
            }
            starts.push(Spread::of(&mine).median);
            peer_starts.push(Spread::of(&theirs).median);
        }
        th.close().await;
        peer.close().await;
        for ((label, ..), [cpu, peer_cpu, rate, peer_rate]) in lang.cases.iter().zip(per_case) {
            let ratio = Spread::of_ratios(&cpu, &peer_cpu);
            targets.push(Target {
                name: format!(
                    "{} tool, server CPU per call ({label}): at most the unsandboxed server's",
                    lang.name
                ),
                toolhost: format!("{:.0} us", Spread::of(&cpu).median),
                baseline: format!("{} {:.0} us", lang.peer, Spread::of(&peer_cpu).median),
                ratio: Target::ratio(ratio),
                met: ratio.median <= 1.0,
            });
            s.row(
                Row::new(
                    format!("{}: server CPU per call, {label}", lang.name),
                    "us",
                    cpu,
                )
                .vs(lang.peer, peer_cpu),
            );
            s.row(
                Row::new(format!("{}: calls/s, {label}", lang.name), "calls/s", rate)
                    .vs(lang.peer, peer_rate),
            );
        }
        let start_ratio = Spread::of_ratios(&starts, &peer_starts);
        targets.push(Target {
            name: format!(
                "{} tool, spawn to the first tools/list: at most the unsandboxed server's",
                lang.name
            ),
            toolhost: format!("{:.1} ms", Spread::of(&starts).median),
            baseline: format!("{} {:.0} ms", lang.peer, Spread::of(&peer_starts).median),
            ratio: Target::ratio(start_ratio),
            met: start_ratio.median <= 1.0,
        });
        s.row(
            Row::new(
                format!("{}: spawn to first tools/list (cache warm)", lang.name),
                "ms",
                starts,
            )
            .vs(lang.peer, peer_starts),
        );
    }
    s.note(
        "Both sides run the same tool code (the plugin's own Python module or query language) on the \
         same files, and answer the same text (checked). toolhost runs each call in a fresh sandbox \
         with its default policy and audit log; the peer is one process that keeps its state between \
         calls and has no sandbox. Server CPU is user + system time of the whole server process.",
    );
    report.add(s);
    for t in targets {
        report.target(t);
    }
    Ok(())
}
