//! Part 4: resident memory of the daemon idle, and what each concurrent call adds, against the native
//! rmcp server. Concurrent calls are `sleep`s (the hostile fixture's, which waits in a WASI host call;
//! the native server's, a tokio sleep), so that they are all alive at once when the memory is sampled.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::Options;
use crate::client::{StdioClient, result, rss_kib, status_kib};
use crate::report::{Report, Row, Section};
use crate::servers::{Kind, spawn_stdio};
use crate::setup::{Workspace, plugin_file};

const LEVELS: [usize; 3] = [1, 8, 32];

/// Peak RSS (KiB) while `c` sleeps of `ms` run at once.
async fn peak_during(client: &Arc<StdioClient>, c: usize, ms: u64) -> Result<f64, String> {
    let tasks: Vec<_> = (0..c)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                let answer = client
                    .call(
                        "tools/call",
                        json!({ "name": "sleep", "arguments": { "ms": ms } }),
                    )
                    .await?;
                result(answer).map(|_| ())
            })
        })
        .collect();
    let started = Instant::now();
    let mut peak: f64 = 0.0;
    while started.elapsed() < Duration::from_millis(ms * 9 / 10) {
        tokio::time::sleep(Duration::from_millis(ms / 10)).await;
        peak = peak.max(rss_kib(client.pid));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(peak)
}

/// One server's figures, a value per round.
struct Figures {
    /// Idle RSS (MiB) after 50 sequential echo calls, before any concurrent call.
    idle: Vec<f64>,
    /// Idle RSS (MiB) after the bursts of concurrent calls, and its private and file-backed parts.
    after: Vec<f64>,
    anon: Vec<f64>,
    file: Vec<f64>,
    /// KiB per concurrent call, per level.
    per_call: Vec<Vec<f64>>,
}

impl Figures {
    fn new() -> Self {
        let none = Vec::new;
        Self {
            idle: none(),
            after: none(),
            anon: none(),
            file: none(),
            per_call: vec![none(); LEVELS.len()],
        }
    }
}

/// Start `kind` in `ws` and make 50 echo calls.
async fn warm(kind: Kind, ws: &Workspace) -> Result<Arc<StdioClient>, String> {
    let client = Arc::new(spawn_stdio(kind, ws)?);
    client.handshake().await?;
    result(client.call("tools/list", json!({})).await?)?;
    for _ in 0..50 {
        let args = json!({ "name": "echo", "arguments": { "text": "warm up" } });
        result(client.call("tools/call", args).await?)?;
    }
    Ok(client)
}

/// Settle, then the idle RSS in KiB. Idle means 2 s without a call: toolhost gives its free heap
/// back after a quiet second (`exec/quiet.rs`).
async fn idle_kib(client: &StdioClient) -> f64 {
    tokio::time::sleep(Duration::from_secs(2)).await;
    rss_kib(client.pid)
}

async fn close(client: Arc<StdioClient>) {
    if let Ok(c) = Arc::try_unwrap(client) {
        c.close().await;
    }
}

pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let ws = Workspace::new(
        &[
            ("echo", plugin_file("echo")),
            ("hostile", plugin_file("hostile")),
        ],
        "",
    )?;
    let ms = o.pick(800, 400);
    // A daemon starts with a warm compile cache but for its first run: fill it, so that the
    // compiler's working memory is not counted as the daemon's.
    close(warm(Kind::Toolhost, &ws).await?).await;
    let (mut native, mut toolhost, mut floor) = (Figures::new(), Figures::new(), Figures::new());
    // Each round starts fresh servers, so that every round has a figure from before any burst.
    for _ in 0..o.rounds {
        // The floor serves echo from the sandbox, but its `sleep` is the native server's: only its
        // idle figure compares.
        let client = warm(Kind::Floor, &ws).await?;
        floor.idle.push(idle_kib(&client).await / 1024.0);
        close(client).await;
        for (kind, f) in [(Kind::Native, &mut native), (Kind::Toolhost, &mut toolhost)] {
            let client = warm(kind, &ws).await?;
            let base = idle_kib(&client).await;
            f.idle.push(base / 1024.0);
            for (i, c) in LEVELS.iter().enumerate() {
                let peak = peak_during(&client, *c, ms).await?;
                f.per_call[i].push((peak - base).max(0.0) / *c as f64);
            }
            f.after.push(idle_kib(&client).await / 1024.0);
            f.anon.push(status_kib(client.pid, "RssAnon:") / 1024.0);
            f.file.push(status_kib(client.pid, "RssFile:") / 1024.0);
            close(client).await;
        }
    }
    let mut s = Section::new(
        "4. Resident memory (VmRSS) of the daemon over stdio: idle, and per concurrent call",
    );
    let idle = "idle, after 50 echo calls (echo + hostile plugins loaded)";
    s.row(
        Row::new(idle, "MiB", toolhost.idle.clone()).vs("native rmcp server", native.idle.clone()),
    );
    s.row(
        Row::new(
            "the floor (native server, echo in the sandbox), idle after 50 echo calls",
            "MiB",
            floor.idle.clone(),
        )
        .vs("native rmcp server", native.idle.clone()),
    );
    s.row(Row::new(idle, "MiB", toolhost.idle.clone()).vs("the floor", floor.idle.clone()));
    s.row(
        Row::new(
            format!("idle, after bursts of {LEVELS:?} concurrent calls"),
            "MiB",
            toolhost.after.clone(),
        )
        .vs("native rmcp server", native.after.clone()),
    );
    s.row(
        Row::new("of which private (RssAnon)", "MiB", toolhost.anon.clone())
            .vs("native rmcp server", native.anon.clone()),
    );
    s.row(
        Row::new(
            "of which mapped files, mostly the binary's code (RssFile)",
            "MiB",
            toolhost.file.clone(),
        )
        .vs("native rmcp server", native.file.clone()),
    );
    for (i, c) in LEVELS.iter().enumerate() {
        s.row(
            Row::new(
                format!("per concurrent call, {c} at once (peak - idle) / {c}"),
                "KiB",
                toolhost.per_call[i].clone(),
            )
            .vs("native rmcp server", native.per_call[i].clone()),
        );
    }
    s.note(format!(
        "Every round starts each server afresh with a warm compile cache (as a daemon starts but for its first run), \
         makes 50 echo calls and samples idle RSS (2 s after the last call), then runs the bursts and samples it again. \
         Each concurrent call is a {ms} ms sleep, so that all are alive when RSS is sampled (every {} ms). A toolhost call holds a \
         store, an instance (linear memory touched by the guest, copy-on-write from the module's image) and a fiber stack.",
        ms / 10
    ));
    report.add(s);
    Ok(())
}
