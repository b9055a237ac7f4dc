//! Part 4: resident memory of the daemon idle, and what each concurrent call adds, against the native
//! rmcp server. Concurrent calls are `sleep`s (the hostile fixture's, which waits in a WASI host call;
//! the native server's, a tokio sleep), so that they are all alive at once when the memory is sampled.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::Options;
use crate::client::{StdioClient, result, rss_kib, status_kib};
use crate::e2e::{Kind, spawn_stdio};
use crate::report::{Report, Row, Section};
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

pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let ws = Workspace::new(
        &[
            ("echo", plugin_file("echo")),
            ("hostile", plugin_file("hostile")),
        ],
        "",
    )?;
    let ms = o.pick(800, 400);
    let mut figures = Vec::new();
    for kind in [Kind::Native, Kind::Toolhost] {
        if kind == Kind::Toolhost {
            // A daemon starts with a warm compile cache but for its first run: fill it, so that
            // the compiler's working memory is not counted as the daemon's.
            let first = spawn_stdio(kind, &ws)?;
            first.handshake().await?;
            result(first.call("tools/list", json!({})).await?)?;
            first.close().await;
        }
        let client = Arc::new(spawn_stdio(kind, &ws)?);
        client.handshake().await?;
        result(client.call("tools/list", json!({})).await?)?;
        for _ in 0..50 {
            result(
                client
                    .call(
                        "tools/call",
                        json!({ "name": "echo", "arguments": { "text": "warm up" } }),
                    )
                    .await?,
            )?;
        }
        let (mut idle, mut per_call) = (Vec::new(), vec![Vec::new(); LEVELS.len()]);
        let (mut anon, mut file) = (Vec::new(), Vec::new());
        for _ in 0..o.rounds {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let base = rss_kib(client.pid);
            idle.push(base / 1024.0);
            anon.push(status_kib(client.pid, "RssAnon:") / 1024.0);
            file.push(status_kib(client.pid, "RssFile:") / 1024.0);
            for (i, c) in LEVELS.iter().enumerate() {
                let peak = peak_during(&client, *c, ms).await?;
                per_call[i].push((peak - base).max(0.0) / *c as f64);
            }
        }
        figures.push((idle, per_call, anon, file));
        if let Ok(c) = Arc::try_unwrap(client) {
            c.close().await;
        }
    }
    let (native, toolhost) = (&figures[0], &figures[1]);
    let mut s = Section::new(
        "4. Resident memory (VmRSS) of the daemon over stdio: idle, and per concurrent call",
    );
    s.row(
        Row::new(
            "idle, after 50 calls (echo + hostile plugins loaded)",
            "MiB",
            toolhost.0.clone(),
        )
        .vs("native rmcp server", native.0.clone()),
    );
    s.row(
        Row::new("of which private (RssAnon)", "MiB", toolhost.2.clone())
            .vs("native rmcp server", native.2.clone()),
    );
    s.row(
        Row::new(
            "of which mapped files, mostly the binary's code (RssFile)",
            "MiB",
            toolhost.3.clone(),
        )
        .vs("native rmcp server", native.3.clone()),
    );
    for (i, c) in LEVELS.iter().enumerate() {
        s.row(
            Row::new(
                format!("per concurrent call, {c} at once (peak - idle) / {c}"),
                "KiB",
                toolhost.1[i].clone(),
            )
            .vs("native rmcp server", native.1[i].clone()),
        );
    }
    s.note(format!(
        "The daemon starts with its compile cache filled by an earlier run, as it does but for its first start. \
         Each call is a {ms} ms sleep, so that all are alive when RSS is sampled (every {} ms). A toolhost call holds a \
         store, an instance (linear memory touched by the guest, copy-on-write from the module's image) and a fiber stack.",
        ms / 10
    ));
    report.add(s);
    Ok(())
}
