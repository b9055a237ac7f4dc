//! Part 10: code mode. One job done two ways over MCP stdio: "count the lines matching a pattern in
//! each of 20 files and return the three largest counts", as the tool calls a model makes one by
//! one (list the folder, grep each file, count, sort, in the client) and as one `run_script`
//! call doing the same inside the sandbox. Reported: the bytes the model reads, the round trips,
//! the wall time. And in process, what a tool call made from a script costs against the same call
//! made by a front end.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Value, json};
use toolhost::exec::CallRequest;

use crate::Options;
use crate::client::result;
use crate::report::{Report, Row, Section, Spread};
use crate::servers::{Kind, spawn_stdio};
use crate::setup::{Workspace, pipeline as build_pipeline, plugin_file};

const FILES: usize = 20;
const PATTERN: &str = "needle";

/// The job as one script: the same calls, made inside the sandbox.
const SCRIPT: &str = "
const { entries } = await tools.list_dir({ path: '.' });
const counts = [];
for (const e of entries) {
  const out = await tools.grep({ path: e.name, pattern: 'needle' });
  counts.push([e.name, out.startsWith('no matches') ? 0 : out.split('\\n').length]);
}
return counts.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 3);";

/// How one way did the job: the top three (file, count), the bytes the model read, the round trips.
type Done = (Vec<(String, usize)>, usize, usize);

/// `FILES` files of text in `ws`'s `corpus/`, file `i` holding `3 * i + 1` needle lines among others.
fn corpus(ws: &Workspace) -> Result<(), String> {
    for i in 0..FILES {
        let mut text = String::new();
        for n in 0..200 {
            if n % 7 == 0 && n / 7 <= 3 * i {
                text.push_str(&format!("line {n}: a needle in the hay\n"));
            } else {
                text.push_str(&format!(
                    "line {n}: nothing to see here, only hay and more hay\n"
                ));
            }
        }
        ws.write(&format!("corpus/file{i:02}.txt"), &text)?;
    }
    Ok(())
}

fn text_of(r: &Value) -> String {
    r["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let ws = Workspace::new(
        &[
            ("fs", plugin_file("fs")),
            ("echo", plugin_file("echo")),
            ("run_script", plugin_file("run_script")),
        ],
        "[plugins.fs]\ndirs = [{ host = \"corpus\" }]\n\
         [plugins.run_script]\ncall-tools = [\"*\"]\npermissions = { allow = [\"run_script\"] }\n\
         limits = { nested-calls = 10000 }\n",
    )?;
    corpus(&ws)?;

    // Over MCP: the model's way and the script's way, alternating, same session.
    let client = spawn_stdio(Kind::Toolhost, &ws)?;
    client.handshake().await?;
    let call = async |name: &str, args: Value| -> Result<Value, String> {
        let r = result(
            client
                .call("tools/call", json!({ "name": name, "arguments": args }))
                .await?,
        )?;
        if r["isError"] == true {
            return Err(format!("{name}: {}", text_of(&r)));
        }
        Ok(r)
    };
    let one_by_one = async || -> Result<Done, String> {
        let listing = call("list_dir", json!({ "path": "." })).await?;
        let mut bytes = text_of(&listing).len();
        let mut trips = 1;
        let mut counts = BTreeMap::new();
        for i in 0..FILES {
            let name = format!("file{i:02}.txt");
            let out = text_of(&call("grep", json!({ "path": name, "pattern": PATTERN })).await?);
            bytes += out.len();
            trips += 1;
            let n = if out.starts_with("no matches") {
                0
            } else {
                out.lines().count()
            };
            counts.insert(name, n);
        }
        let mut top: Vec<(String, usize)> = counts.into_iter().collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        top.truncate(3);
        Ok((top, bytes, trips))
    };
    let scripted = async || -> Result<Done, String> {
        let r = call("run_script", json!({ "code": SCRIPT })).await?;
        let top = r["structuredContent"]["result"]
            .as_array()
            .ok_or("run_script returned no result")?
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap_or_default().to_owned(),
                    p[1].as_u64().unwrap_or_default() as usize,
                )
            })
            .collect();
        Ok((top, text_of(&r).len(), 1))
    };
    // Same answer both ways (the first calls also load and warm both plugins).
    let (a, b) = (one_by_one().await?, scripted().await?);
    if a.0 != b.0 {
        return Err(format!("the two ways disagree: {:?} vs {:?}", a.0, b.0));
    }
    let (mut direct_ms, mut script_ms) = (vec![], vec![]);
    for _ in 0..o.rounds {
        let t = Instant::now();
        one_by_one().await?;
        direct_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        scripted().await?;
        script_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    client.close().await;

    // In process: a script's echo calls against the same calls from a front end.
    let p = build_pipeline(&ws).await?;
    let n = o.pick(200, 50);
    let echo = || CallRequest {
        tool: "echo".into(),
        input: json!({ "text": "x" }),
        origin: "bench",
        ..CallRequest::default()
    };
    let script = |calls: usize| CallRequest {
        tool: "run_script".into(),
        input: json!({ "code": format!("for (let i = 0; i < {calls}; i++) await tools.echo({{ text: 'x' }}); return 1") }),
        origin: "bench",
        ..CallRequest::default()
    };
    for req in [echo(), script(1)] {
        let out = p.call(req).await;
        if out.is_error() {
            return Err(out.content);
        }
    }
    let (mut top_us, mut nested_us) = (vec![], vec![]);
    for _ in 0..o.rounds {
        let t = Instant::now();
        for _ in 0..n {
            p.call(echo()).await;
        }
        top_us.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
        let t = Instant::now();
        p.call(script(0)).await;
        let empty = t.elapsed().as_secs_f64() * 1e6;
        let t = Instant::now();
        let out = p.call(script(n)).await;
        if out.is_error() {
            return Err(out.content);
        }
        nested_us.push((t.elapsed().as_secs_f64() * 1e6 - empty) / n as f64);
    }

    let mut s = Section::new(format!(
        "10. code mode: count /{PATTERN}/ in each of {FILES} files, top 3 (MCP stdio), and a nested call's cost"
    ));
    s.row(
        Row::new("run_script, one call", "ms", script_ms.clone())
            .vs("one by one", direct_ms.clone()),
    );
    s.row(Row::new(
        "tool calls one by one (list_dir + grep each)",
        "ms",
        direct_ms.clone(),
    ));
    s.row(
        Row::new("bytes the model reads, run_script", "B", vec![b.1 as f64])
            .vs("one by one", vec![a.1 as f64]),
    );
    s.row(
        Row::new("round trips, run_script", "", vec![b.2 as f64])
            .vs("one by one", vec![a.2 as f64]),
    );
    s.row(
        Row::new(
            "echo called from a script (per call)",
            "µs",
            nested_us.clone(),
        )
        .vs("from a front end", top_us.clone()),
    );
    s.row(Row::new(
        "echo called by a front end (per call)",
        "µs",
        top_us.clone(),
    ));
    s.note(format!(
        "The one-by-one column is only the transport and the tools: a model would also spend a turn per round trip. \
         Nested calls: {n} sequential echo calls from one script, less an empty script's time, against {n} calls from the \
         in-process front end; every nested call runs the whole pipeline (validation, the gate, a fresh sandbox, an audit record)."
    ));
    report.add(s);
    println!(
        "code mode: run_script {:.2}x the one-by-one wall time, {:.3}x the bytes, 1 round trip vs {}; a nested call {:.2}x a top-level one\n",
        Spread::of(&script_ms).median / Spread::of(&direct_ms).median,
        b.1 as f64 / a.1 as f64,
        a.2,
        Spread::of(&nested_us).median / Spread::of(&top_us).median,
    );
    Ok(())
}
