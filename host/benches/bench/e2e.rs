//! Part 2: MCP end to end, over stdio and over Streamable HTTP. Sequential calls/s and p50/p99 latency, then
//! throughput at 1, 2, 4, 8 and 32 concurrent clients; toolhost (echo plugin, default policy, audit on)
//! against the native rmcp server with the same echo in plain Rust, both driven by the same Rust client,
//! alternately in each round. The sequential calls and the most clients are also run against the floor
//! (`floor.rs`): the native server with each call in a fresh sandbox and nothing else.

use std::sync::Arc;

use crate::Options;
use crate::client::{HttpClient, cpu_seconds};
use crate::report::{Report, Row, Section, Spread, Target};
use crate::servers::{HttpServer, Kind, Pool, drive, spawn_stdio};
use crate::setup::{Workspace, plugin_file};

/// Concurrency levels of the issue.
const LEVELS: [usize; 5] = [1, 2, 4, 8, 32];

/// Figures per server, per round.
#[derive(Default)]
struct Series {
    seq: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
    levels: Vec<Vec<f64>>,
    level_p99: Vec<Vec<f64>>,
    client_cpu_us: Vec<f64>,
    server_cpu_us: Vec<f64>,
    /// calls/s with [`CORE_CLIENTS`] clients, the server's threads pinned to 1 core, then to 2.
    on_cores: Vec<[f64; 2]>,
}

/// Clients in flight while the server is pinned to 1 and then 2 cores.
const CORE_CLIENTS: usize = 8;

/// Pin every thread of process `pid` to `cpus` (`taskset -a -p -c`); new threads inherit it.
fn pin(pid: u32, cpus: &str) -> Result<(), String> {
    let out = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .output()
        .map_err(|e| format!("taskset: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "taskset -a -p -c {cpus} {pid}: {}",
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

async fn transport(o: &Options, report: &mut Report, http: bool) -> Result<(), String> {
    let ws = Workspace::new(&[("echo", plugin_file("echo"))], "")?;
    let name = if http { "Streamable HTTP" } else { "stdio" };
    let mut servers = Vec::new();
    let mut keep = Vec::new();
    // The floor runs the sequential calls and the most clients only: it tells what a fresh sandbox
    // per call costs.
    for kind in [Kind::Native, Kind::Toolhost, Kind::Floor] {
        let (pool, pid) = if http {
            let server = HttpServer::start(kind, &ws).await?;
            let mut v = Vec::new();
            for _ in 0..LEVELS[LEVELS.len() - 1] {
                v.push(HttpClient::connect(&server.addr).await?);
            }
            let pid = server.pid;
            keep.push(server);
            (Pool::Http(v), pid)
        } else {
            let c = spawn_stdio(kind, &ws)?;
            c.handshake().await?;
            let pid = c.pid;
            (Pool::Stdio(Arc::new(c)), pid)
        };
        servers.push((kind, pool, pid, Series::default()));
    }
    let n = o.pick(2000, 300);
    for (_, pool, _, _) in servers.iter_mut() {
        let c = pool.take(1);
        let (_, c) = drive(c, n / 4).await?; // warm up
        pool.give(c);
    }
    let me = std::process::id().to_string();
    for _ in 0..o.rounds {
        for (kind, pool, pid, series) in servers.iter_mut() {
            let (cpu_me, cpu_srv) = (cpu_seconds(&me), cpu_seconds(&pid.to_string()));
            let (run, back) = drive(pool.take(1), n).await?;
            pool.give(back);
            series
                .client_cpu_us
                .push((cpu_seconds(&me) - cpu_me) * 1e6 / n as f64);
            series
                .server_cpu_us
                .push((cpu_seconds(&pid.to_string()) - cpu_srv) * 1e6 / n as f64);
            series.seq.push(run.calls_per_s);
            series.p50.push(run.p50_us);
            series.p99.push(run.p99_us);
            let floor = *kind == Kind::Floor;
            let mut per_level = Vec::new();
            let mut per_level_p99 = Vec::new();
            for c in LEVELS {
                // The floor at the most clients only: what a fresh sandbox per call leaves of
                // native's throughput there, the bound on toolhost's.
                if floor && c != LEVELS[LEVELS.len() - 1] {
                    per_level.push(f64::NAN);
                    per_level_p99.push(f64::NAN);
                    continue;
                }
                let per = (n / c).max(o.pick(20, 10));
                let (run, back) = drive(pool.take(c), per).await?;
                pool.give(back);
                per_level.push(run.calls_per_s);
                per_level_p99.push(run.p99_us);
            }
            series.levels.push(per_level);
            series.level_p99.push(per_level_p99);
            if floor {
                continue;
            }
            // 1 -> 2 cores: the same load with the server held to one core, then given two.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            if cores >= 2 {
                let mut on = [0.0; 2];
                for (slot, cpus) in ["0", "0,1"].into_iter().enumerate() {
                    pin(*pid, cpus)?;
                    let (run, back) = drive(pool.take(CORE_CLIENTS), n / CORE_CLIENTS).await?;
                    pool.give(back);
                    on[slot] = run.calls_per_s;
                }
                pin(*pid, &format!("0-{}", cores - 1))?;
                series.on_cores.push(on);
            }
        }
    }
    let (native, toolhost, floor) = (&servers[0].3, &servers[1].3, &servers[2].3);
    let part = if http { "2b" } else { "2a" };
    let mut s = Section::new(format!(
        "{part}. MCP over {name}: echo, sequential ({n} calls per round)"
    ));
    s.row(
        Row::new("toolhost calls/s", "calls/s", toolhost.seq.clone())
            .vs("native rmcp", native.seq.clone()),
    );
    s.row(
        Row::new("toolhost p50 latency", "us", toolhost.p50.clone())
            .vs("native rmcp", native.p50.clone()),
    );
    s.row(
        Row::new("toolhost p99 latency", "us", toolhost.p99.clone())
            .vs("native rmcp", native.p99.clone()),
    );
    s.row(Row::new(
        "native rmcp calls/s",
        "calls/s",
        native.seq.clone(),
    ));
    s.row(
        Row::new(
            "client CPU per call (driving toolhost)",
            "us",
            toolhost.client_cpu_us.clone(),
        )
        .vs(
            "toolhost server CPU per call",
            toolhost.server_cpu_us.clone(),
        ),
    );
    s.row(
        Row::new(
            "client CPU per call (driving native)",
            "us",
            native.client_cpu_us.clone(),
        )
        .vs("native server CPU per call", native.server_cpu_us.clone()),
    );
    s.row(
        Row::new("floor calls/s", "calls/s", floor.seq.clone())
            .vs("native rmcp", native.seq.clone()),
    );
    s.row(
        Row::new(
            "toolhost calls/s, against the floor",
            "calls/s",
            toolhost.seq.clone(),
        )
        .vs("floor", floor.seq.clone()),
    );
    s.row(
        Row::new(
            "floor server CPU per call",
            "us",
            floor.server_cpu_us.clone(),
        )
        .vs("native server CPU per call", native.server_cpu_us.clone()),
    );
    s.row(
        Row::new(
            "toolhost server CPU per call",
            "us",
            toolhost.server_cpu_us.clone(),
        )
        .vs("floor server CPU per call", floor.server_cpu_us.clone()),
    );
    s.note("CPU from /proc (10 ms ticks): the client must cost less than the server it measures.");
    s.note(
        "The floor is the native server with each echo call run in toolhost's sandbox alone: a fresh \
         store and instance per call, the plugin's limits and WASI context, and nothing of the pipeline \
         (no validation, gate, audit, stats or shaping). What any server pays to sandbox each call.",
    );
    report.add(s);

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut s = Section::new(format!(
        "{part}'. MCP over {name}: throughput with concurrent clients ({})",
        if http {
            "one session and connection per client"
        } else {
            "one stdio session, N requests in flight"
        }
    ));
    let level =
        |series: &Series, i: usize| series.levels.iter().map(|l| l[i]).collect::<Vec<f64>>();
    let p99 =
        |series: &Series, i: usize| series.level_p99.iter().map(|l| l[i]).collect::<Vec<f64>>();
    for (i, c) in LEVELS.iter().enumerate() {
        s.row(
            Row::new(
                format!("toolhost, {c} clients"),
                "calls/s",
                level(toolhost, i),
            )
            .vs("native rmcp", level(native, i)),
        );
    }
    for (i, c) in LEVELS.iter().enumerate().skip(1) {
        s.row(
            Row::new(
                format!("toolhost scaling, {c} vs 1 client"),
                "calls/s",
                level(toolhost, i),
            )
            .vs("toolhost, 1 client", level(toolhost, 0)),
        );
        s.row(
            Row::new(
                format!("native scaling, {c} vs 1 client"),
                "calls/s",
                level(native, i),
            )
            .vs("native, 1 client", level(native, 0)),
        );
    }
    for (i, c) in LEVELS.iter().enumerate() {
        s.row(
            Row::new(
                format!("toolhost p99 latency, {c} clients"),
                "us",
                p99(toolhost, i),
            )
            .vs("native rmcp", p99(native, i)),
        );
    }
    let most = LEVELS.len() - 1;
    s.row(
        Row::new(
            format!("floor calls/s, {} clients", LEVELS[most]),
            "calls/s",
            level(floor, most),
        )
        .vs("native rmcp", level(native, most)),
    );
    s.row(
        Row::new(
            format!(
                "toolhost calls/s, {} clients, against the floor",
                LEVELS[most]
            ),
            "calls/s",
            level(toolhost, most),
        )
        .vs("floor", level(floor, most)),
    );
    s.note(format!(
        "{cores} cores, shared by the client and the server."
    ));
    report.add(s);

    if !toolhost.on_cores.is_empty() {
        let on =
            |series: &Series, i: usize| series.on_cores.iter().map(|c| c[i]).collect::<Vec<f64>>();
        let mut s = Section::new(format!(
            "{part}''. MCP over {name}: from 1 to 2 cores ({CORE_CLIENTS} clients, the server's threads pinned with taskset)"
        ));
        for (i, label) in ["1 core", "2 cores"].iter().enumerate() {
            s.row(
                Row::new(format!("toolhost on {label}"), "calls/s", on(toolhost, i))
                    .vs("native rmcp", on(native, i)),
            );
        }
        s.row(
            Row::new("toolhost, 2 cores vs 1", "calls/s", on(toolhost, 1))
                .vs("toolhost on 1 core", on(toolhost, 0)),
        );
        s.row(
            Row::new("native rmcp, 2 cores vs 1", "calls/s", on(native, 1))
                .vs("native on 1 core", on(native, 0)),
        );
        s.note("The client is not pinned: on a 2-core machine it shares the second core with the server.");
        report.add(s);
    }

    if !http {
        let r = Spread::of_ratios(&toolhost.seq, &native.seq);
        report.target(Target {
            name: "MCP stdio echo at least 0.8x native rmcp's calls/s, sequentially (issue 20)"
                .into(),
            toolhost: format!("{:.0} calls/s", Spread::of(&toolhost.seq).median),
            baseline: format!("native rmcp {:.0} calls/s", Spread::of(&native.seq).median),
            ratio: Target::ratio(r),
            met: r.median >= 0.8,
        });
    }
    let at = LEVELS.iter().position(|&c| c >= cores).unwrap_or(1);
    let t_scale = Spread::of(&level(toolhost, at)).median / Spread::of(&level(toolhost, 0)).median;
    let n_scale = Spread::of(&level(native, at)).median / Spread::of(&level(native, 0)).median;
    report.target(Target {
        name: format!("MCP {name}: scaling with cores at least native's"),
        toolhost: format!("{} clients give {t_scale:.2}x the calls/s of 1", LEVELS[at]),
        baseline: format!("native rmcp {n_scale:.2}x ({cores} cores, shared with the client)"),
        ratio: format!("{:.2}x", t_scale / n_scale),
        met: t_scale >= 0.9 * n_scale,
    });
    if http {
        let (mine, theirs, floor) = (
            level(toolhost, most),
            level(native, most),
            Spread::of(&level(floor, most)).median,
        );
        let r = Spread::of_ratios(&mine, &theirs);
        let native = Spread::of(&theirs).median;
        report.target(Target {
            name: format!(
                "MCP HTTP with {} clients: at least 0.8x native rmcp's calls/s",
                LEVELS[most]
            ),
            toolhost: format!("{:.0} calls/s", Spread::of(&mine).median),
            baseline: format!(
                "native rmcp {native:.0} calls/s (the floor, a fresh sandbox per call and nothing else: {floor:.0}, {:.2}x native)",
                floor / native
            ),
            ratio: Target::ratio(r),
            met: r.median >= 0.8,
        });
    }
    for (_, pool, _, _) in servers {
        if let Pool::Stdio(c) = pool
            && let Ok(c) = Arc::try_unwrap(c)
        {
            c.close().await;
        }
    }
    for s in keep {
        s.stop().await;
    }
    Ok(())
}

pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    transport(o, report, false).await?;
    transport(o, report, true).await
}
