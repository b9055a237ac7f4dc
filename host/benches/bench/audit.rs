//! The audit log under concurrency: records per second from 1 and 8 writer threads, with and without
//! `sync = true` (fdatasync per record). Writers that serialize behind one lock for longer than a write
//! would not scale with threads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::audit::AuditLog;
use toolhost_config::config::AuditOptions;

use crate::Options;
use crate::report::{Report, Row, Section};

/// Records per second from `threads` threads writing `per` records each.
fn rate(log: &Arc<AuditLog>, threads: usize, per: usize) -> f64 {
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    let mut r = log.begin(
                        format!("{t}-{i}"),
                        "bench",
                        "echo",
                        &json!({ "text": "hello, world" }),
                    );
                    r.plugin = Some("echo".into());
                    r.finish(None, Duration::from_micros(25));
                    log.write(&r).expect("audit write");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer thread");
    }
    (threads * per) as f64 / started.elapsed().as_secs_f64()
}

pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut s = Section::new(
        "1c. Audit log: records/s from concurrent writers (one JSONL file, as the daemon writes it)",
    );
    for sync in [false, true] {
        let log = Arc::new(
            AuditLog::open(
                dir.path().join(format!("audit-{sync}.jsonl")),
                AuditOptions {
                    sync,
                    ..AuditOptions::default()
                },
            )
            .map_err(|e| e.to_string())?,
        );
        let per = if sync {
            o.pick(200, 50)
        } else {
            o.pick(20_000, 3_000)
        };
        let (mut one, mut eight) = (Vec::new(), Vec::new());
        for _ in 0..o.rounds {
            let l = log.clone();
            one.push(
                tokio::task::spawn_blocking(move || rate(&l, 1, per))
                    .await
                    .map_err(|e| e.to_string())?,
            );
            let l = log.clone();
            eight.push(
                tokio::task::spawn_blocking(move || rate(&l, 8, per / 8 * 2))
                    .await
                    .map_err(|e| e.to_string())?,
            );
        }
        let what = if sync {
            "sync = true (fdatasync)"
        } else {
            "sync = false"
        };
        s.row(Row::new(
            format!("{what}, 1 writer"),
            "records/s",
            one.clone(),
        ));
        s.row(Row::new(format!("{what}, 8 writers"), "records/s", eight).vs("1 writer", one));
    }
    s.note(
        "Each record is begun (input hashed), finished and written as the pipeline does. With sync, one \
         fdatasync covers every record written before it started, outside the write lock.",
    );
    report.add(s);
    Ok(())
}
