//! The cost of each language, as the guide's table reports it: component size, compile time (first
//! load, no cache), load time from the compile cache, instantiate time (pooling allocator, and on
//! demand), call time and fuel. On demand only, and single-threaded, so that the numbers are clean (the
//! guide's table is the best of three runs, cell by cell, on a machine shared with other builds):
//!
//! ```sh
//! cargo test --release --test e2e languages::measure -- --ignored --nocapture --test-threads 1
//! ```

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost::sandbox::{CallIo, Plugin, Sandbox};
use toolhost_config::config::EngineOptions;
use toolhost_config::config::{Config, Overrides, RawConfig};
use toolhost_gate::grants::{DirGrant, Grants, Limits};

use super::{C, Example, GO, JS, PYTHON};
use crate::harness::root;

/// Calls per measurement; the median is reported.
const CALLS: usize = 25;

/// One row of the table: a component and the call that exercises it.
struct Subject {
    lang: &'static str,
    tool: &'static str,
    file: PathBuf,
    input: Value,
}

fn subjects(work: &Path) -> Vec<Subject> {
    std::fs::write(
        work.join("cities.csv"),
        "city,pop\nParis,2100000\nLyon,520000\n",
    )
    .unwrap();
    std::fs::write(
        work.join("data.json"),
        r#"{"items":[{"name":"a"},{"name":"b"}]}"#,
    )
    .unwrap();
    std::fs::write(work.join("hello.txt"), "hello world\nsecond line\n").unwrap();
    let mut out = vec![Subject {
        lang: "rust",
        tool: "echo",
        file: root().join("plugins/echo.wasm"),
        input: json!({ "text": "hello" }),
    }];
    let examples: [(&Example, Value); 4] = [
        (&PYTHON, json!({ "path": "cities.csv" })),
        (
            &JS,
            json!({ "path": "data.json", "query": ".items[].name" }),
        ),
        (&C, json!({ "path": "hello.txt", "algorithm": "crc32" })),
        (&GO, json!({ "path": "hello.txt" })),
    ];
    for (ex, input) in examples {
        if let Some(file) = ex.component() {
            out.push(Subject {
                lang: ex.lang,
                tool: ex.tool,
                file,
                input,
            });
        }
    }
    out
}

/// A duration with a unit that keeps two or three significant digits: "64 s", "239 ms", "12 µs".
fn human(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    match us {
        _ if us >= 10e6 => format!("{:.0} s", us / 1e6),
        _ if us >= 1e6 => format!("{:.1} s", us / 1e6),
        _ if us >= 100e3 => format!("{:.0} ms", us / 1e3),
        _ if us >= 1e3 => format!("{:.1} ms", us / 1e3),
        _ => format!("{us:.0} µs"),
    }
}

/// A size in KB below 1 MB, else in MB with one decimal: "89 KB", "19.5 MB".
fn size(bytes: usize) -> String {
    if bytes < 1_000_000 {
        format!("{} KB", bytes.div_ceil(1000))
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Median instantiate time, median call time (the rest of the call), and fuel, over `CALLS` calls.
async fn run_calls(
    sandbox: &Sandbox,
    plugin: &Plugin,
    s: &Subject,
    grants: &Grants,
) -> (Duration, Duration, u64) {
    let (mut inst, mut call, mut fuel) = (Vec::new(), Vec::new(), 0);
    let input = s.input.to_string();
    let prepared = sandbox
        .prepare(plugin.clone(), s.tool, grants.clone(), Limits::default())
        .expect("the grants bind");
    for i in 0..=CALLS {
        let never = CancellationToken::new();
        let io = CallIo {
            files: Default::default(),
            progress: None,
            cancel: &never,
            caps: Default::default(),
            tools: None,
            credentials: Vec::new(),
        };
        let r = sandbox.call(&prepared, s.tool, input.clone(), io).await;
        match &r.result {
            Ok(Ok(_)) => {}
            other => panic!("{} failed: {other:?}\n{}", s.tool, r.stderr),
        }
        if i > 0 {
            // The first call warms the pool slot and the page cache; it is not reported.
            inst.push(r.instantiate);
            call.push(r.elapsed - r.instantiate);
            fuel = r.fuel_used;
        }
    }
    (median(inst), median(call), fuel)
}

#[tokio::test]
#[ignore = "measurement for plugins/README.md; run on demand (see the module docs)"]
async fn measure_language_costs() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let grants = Grants {
        dirs: vec![DirGrant {
            host: work.clone(),
            guest: ".".into(),
            read_only: true,
            exclude: Vec::new(),
        }],
        ..Grants::default()
    };
    // The host's defaults: the pooling allocator sized as `toolhost serve` sizes it.
    let defaults =
        Config::from_raw(RawConfig::default(), tmp.path(), &Overrides::default()).unwrap();
    let pool = defaults.engine_options().pool;
    assert!(pool.is_some(), "the default config has no instance pool");

    let mut table = String::from(
        "| language | tool | component | compile (first load, no cache) | load from cache | instantiate (pool) | instantiate (on demand) | call | fuel per call |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for s in subjects(&work) {
        let bytes = std::fs::read(&s.file).unwrap();
        let uncached = Sandbox::new(&EngineOptions {
            cache_dir: None,
            pool: None,
            open_files: None,
        })
        .unwrap();
        let t = Instant::now();
        uncached.load(&bytes).unwrap();
        let compile = t.elapsed();

        let cache = tmp.path().join(format!("cache-{}", s.lang));
        Sandbox::new(&EngineOptions {
            cache_dir: Some(cache.clone()),
            pool,
            open_files: None,
        })
        .unwrap()
        .load(&bytes)
        .unwrap();
        let pooled = Sandbox::new(&EngineOptions {
            cache_dir: Some(cache.clone()),
            pool,
            open_files: None,
        })
        .unwrap();
        let t = Instant::now();
        let plugin = pooled.load(&bytes).unwrap();
        let cached = t.elapsed();
        assert!(plugin.from_cache, "{}: not loaded from the cache", s.lang);
        let (inst_pool, call, fuel) = run_calls(&pooled, &plugin, &s, &grants).await;

        let on_demand = Sandbox::new(&EngineOptions {
            cache_dir: Some(cache),
            pool: None,
            open_files: None,
        })
        .unwrap();
        let plugin = on_demand.load(&bytes).unwrap();
        let (inst_demand, _, _) = run_calls(&on_demand, &plugin, &s, &grants).await;

        table.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} |\n",
            s.lang,
            s.tool,
            size(bytes.len()),
            human(compile),
            human(cached),
            human(inst_pool),
            human(inst_demand),
            human(call),
            fuel
        ));
    }
    let _ = writeln!(std::io::stderr(), "\n{table}");
}
