//! toolhost's benchmark: what a sandboxed, validated, gated, audited call costs, each figure a ratio
//! against a baseline measured in the same run (see BENCHMARKS.md; `scripts/bench.sh` runs it).
//!
//! Parts: `pipeline` (one echo call in-process, stage by stage, against the same echo in plain Rust),
//! `failures` (what a trap, fuel exhaustion or timeout costs to clean up, against a normal call),
//! `audit` (records/s from 1 and 8 writers, with and without sync), `grep` (the fs plugin's grep
//! against the same grep in native Rust), `coldstart` (registry and daemon start to the first
//! `tools/list`, 1 and 20 plugins, cached and uncached), `memory` (daemon RSS idle and per concurrent
//! call, against a native rmcp server), `mcp` (MCP over stdio and HTTP against a native rmcp server with
//! the same echo tool, driven by the same Rust client), `generic` (a generic plugin's call against a
//! contract plugin's), `stream` (time to the last result of a streamed batch run as it arrives,
//! against collecting the message first).
//!
//! The same binary is the native baseline server: `--serve-native-stdio`, `--serve-native-http ADDR`;
//! and the floor, the native server with each echo call run in toolhost's sandbox alone:
//! `--serve-floor-stdio`, `--serve-floor-http ADDR`.

mod audit;
mod client;
mod codemode;
mod coldstart;
mod e2e;
mod floor;
mod generic;
mod grep;
mod inproc;
mod memory;
mod native;
mod peers;
mod quota;
mod report;
mod servers;
mod setup;
mod stream;
mod wasi3;
mod wassette;

use std::process::ExitCode;
use std::time::Instant;

use report::Report;

const USAGE: &str = "\
usage: bench [--quick] [--only PARTS] [--rounds N] [--json FILE] [--report FILE]
       bench --profile-calls N        (N echo calls in-process and nothing else; for callgrind)
       bench --stages TOOL INPUT N    (stage medians of N calls of one tool: echo, or hostile's, fuel_*, slow_*)
       bench --serve-native-stdio | --serve-native-http ADDR   (the native rmcp baseline server)
       bench --serve-floor-stdio | --serve-floor-http ADDR     (the same, each echo in a fresh sandbox; in a workspace)

PARTS is a comma-separated list of: pipeline, failures, audit, grep, coldstart, memory, mcp, generic,
stream, scripts, quota, peers, wasi3, wassette
(default: all; wassette only when TOOLHOST_BENCH_WASSETTE names its binary, which
scripts/bench.sh --only wassette builds outside the repository).
--report FILE: where the whole report goes, headline first (default target/bench-report.md).
--quick runs fewer, shorter rounds (a few minutes on 2 cores). Run it through scripts/bench.sh,
which builds the plugins and the release binaries first.";

/// What to run and how long.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) quick: bool,
    pub(crate) parts: Vec<String>,
    /// Rounds per figure: the min/median/max are over these.
    pub(crate) rounds: usize,
    pub(crate) json: Option<std::path::PathBuf>,
    /// The whole report, headline first.
    pub(crate) report: std::path::PathBuf,
}

impl Options {
    fn wants(&self, part: &str) -> bool {
        self.parts.iter().any(|p| p == part)
    }

    /// `full` in a full run, `quick` with `--quick`.
    pub(crate) fn pick<T>(&self, full: T, quick: T) -> T {
        if self.quick { quick } else { full }
    }
}

const PARTS: [&str; 14] = [
    "pipeline",
    "failures",
    "audit",
    "grep",
    "coldstart",
    "memory",
    "mcp",
    "generic",
    "stream",
    "scripts",
    "quota",
    "peers",
    "wasi3",
    "wassette",
];

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        quick: false,
        // Wassette is measured when asked for, or when a binary of it is at hand.
        parts: PARTS
            .iter()
            .filter(|p| **p != "wassette" || wassette::binary().is_some())
            .map(|s| s.to_string())
            .collect(),
        rounds: 0,
        json: None,
        report: setup::repo_root().join("target/bench-report.md"),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            // `cargo bench` passes this to every bench target.
            "--bench" => {}
            "--quick" => o.quick = true,
            "--only" => {
                let v = it.next().ok_or("--only needs a list")?;
                o.parts = v.split(',').map(str::trim).map(String::from).collect();
                if let Some(bad) = o.parts.iter().find(|p| !PARTS.contains(&p.as_str())) {
                    return Err(format!(
                        "unknown part {bad:?}; expected one of {}",
                        PARTS.join(", ")
                    ));
                }
            }
            "--rounds" => {
                let v = it.next().ok_or("--rounds needs a number")?;
                o.rounds = v
                    .parse()
                    .map_err(|_| format!("--rounds: {v:?} is not a number"))?;
            }
            "--json" => o.json = Some(it.next().ok_or("--json needs a file")?.into()),
            "--report" => o.report = it.next().ok_or("--report needs a file")?.into(),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if o.rounds == 0 {
        o.rounds = if o.quick { 3 } else { 7 };
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.first().map(String::as_str) {
        Some("--serve-native-stdio") => return native::serve_stdio(),
        Some("--serve-native-http") => {
            return native::serve_http(args.get(1).map_or("127.0.0.1:0", |s| s));
        }
        Some("--serve-floor-stdio") => return floor::serve(None),
        Some("--serve-floor-http") => {
            return floor::serve(Some(args.get(1).map_or("127.0.0.1:0", |s| s)));
        }
        Some("--stages") if args.len() == 4 => {
            return inproc::stages(&args[1], &args[2], args[3].parse().unwrap_or(100));
        }
        Some("--profile-calls") => {
            let n = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
            return inproc::profile(n);
        }
        _ => {}
    }
    let options = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("bench: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = setup::check_prerequisites() {
        eprintln!("bench: {e}");
        return ExitCode::from(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let started = Instant::now();
    let mut report = Report::new(&options);
    let result = runtime.block_on(async {
        if options.wants("pipeline") {
            inproc::pipeline(&options, &mut report).await?;
        }
        if options.wants("failures") {
            inproc::failures(&options, &mut report).await?;
        }
        if options.wants("audit") {
            audit::run(&options, &mut report).await?;
        }
        if options.wants("grep") {
            grep::run(&options, &mut report).await?;
        }
        if options.wants("coldstart") {
            coldstart::run(&options, &mut report).await?;
        }
        if options.wants("memory") {
            memory::run(&options, &mut report).await?;
        }
        if options.wants("mcp") {
            e2e::run(&options, &mut report).await?;
        }
        if options.wants("generic") {
            generic::run(&options, &mut report).await?;
        }
        if options.wants("stream") {
            stream::run(&options, &mut report).await?;
        }
        if options.wants("scripts") {
            codemode::run(&options, &mut report).await?;
        }
        if options.wants("quota") {
            quota::run(&options, &mut report).await?;
        }
        if options.wants("peers") {
            peers::run(&options, &mut report).await?;
        }
        if options.wants("wasi3") {
            wasi3::run(&options, &mut report).await?;
        }
        if options.wants("wassette") {
            wassette::run(&options, &mut report).await?;
        }
        Ok::<(), String>(())
    });
    report.finish(started.elapsed(), &options.report);
    if let Some(path) = &options.json
        && let Err(e) = std::fs::write(path, report.to_json())
    {
        eprintln!("bench: cannot write {}: {e}", path.display());
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}
