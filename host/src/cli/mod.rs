//! The command line: flags in, one of the commands run, an exit code out.
//!
//! Exit codes: 0 success; 1 the call ran and returned an error result (or a plugin was rejected, for
//! `inspect`); 2 bad usage or configuration; 3 anything else (I/O, the plugins folder, the audit log).

mod approver;
mod args;
mod publishing;
mod rendering;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use serde_json::Value;

use toolhost::audit::Filter;
use toolhost::exec::{CallRequest, Pipeline};
use toolhost::registry::Registry;
use toolhost::scaffold::{self, Lang};
use toolhost::server::{ServeOptions, Server};
use toolhost_policy::config::{Config, Overrides};
use toolhost_policy::text::multi_line;

use self::approver::TtyApprover;
pub(crate) use self::args::Cli;
use self::args::Command;
use self::rendering::{inspect, list, show_audit};

/// An error with the exit code it maps to.
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) error: anyhow::Error,
}

/// Open the state store and give the server its tasks. A store that cannot be opened is a
/// configuration error for the embedded file; a PostgreSQL server that is down is waited for in
/// the background (`/ready` answers 503 meanwhile), unless its schema is newer than this build.
async fn attach_tasks(
    server: &Server,
    config: &Config,
    opened: Result<Arc<toolhost::tasks::Tasks>, toolhost::state::StateError>,
) -> anyhow::Result<()> {
    use toolhost::state::StateError;
    server.expect_tasks();
    match opened {
        Ok(tasks) => {
            server.attach_tasks(tasks);
            Ok(())
        }
        Err(e @ (StateError::Sqlite { .. } | StateError::TooNew { .. })) => Err(e.into()),
        Err(e) => {
            tracing::warn!("{e}; serving without tasks until the state store is reachable");
            let (server, config) = (server.clone(), config.clone());
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    match toolhost::host::open_tasks(&config).await {
                        Ok(tasks) => {
                            tracing::info!("the state store is reachable: tasks are on");
                            server.attach_tasks(tasks);
                            return;
                        }
                        Err(e) => tracing::debug!("state store still unreachable: {e}"),
                    }
                }
            });
            Ok(())
        }
    }
}

fn usage(error: impl Into<anyhow::Error>) -> Failure {
    Failure {
        code: 2,
        error: error.into(),
    }
}

fn other(error: impl Into<anyhow::Error>) -> Failure {
    Failure {
        code: 3,
        error: error.into(),
    }
}

impl Cli {
    /// Run the command; `Ok(code)` for normal exits (0 or 1).
    pub(crate) async fn run(self) -> Result<u8, Failure> {
        // `new` only writes files: a broken toolhost.toml in the current directory must not stop it.
        if let Command::New {
            name,
            lang,
            generic,
        } = &self.command
        {
            return new_project(name, *lang, *generic, &self.global.dirs);
        }
        let g = &self.global;
        let overrides = Overrides {
            plugins_dir: g.plugins.clone(),
            mode: g.mode,
            dirs: g.dirs.clone(),
            env: g.env.clone(),
            audit_path: g.audit.clone(),
            http: match &self.command {
                Command::Serve {
                    http: Some(addr), ..
                } => addr.clone(),
                _ => None,
            },
        };
        let config = Config::load(g.config.as_deref(), &overrides).map_err(usage)?;
        match self.command {
            Command::New {
                name,
                lang,
                generic,
            } => new_project(&name, lang, generic, &overrides.dirs),
            Command::Serve {
                stdio,
                http,
                no_watch,
            } => {
                // The state store opens while the plugins load. Polled first on purpose: it hands
                // its file to the blocking pool at once, where the engine, built next on this
                // thread, would have held it back by as long as the build takes.
                let (tasks, pipeline) = tokio::join!(
                    toolhost::host::open_tasks(&config),
                    open_host(&config, config.server.max_concurrent_calls)
                );
                let pipeline = Arc::new(pipeline?);
                let options = ServeOptions {
                    stdio: stdio || http.is_none(),
                    http: http.is_some().then_some(config.server.http),
                    hot_reload: !no_watch,
                };
                let telemetry = toolhost::telemetry::start(&config.telemetry).map_err(usage)?;
                let server = Server::new(pipeline, config.server.clone());
                attach_tasks(&server, &config, tasks).await.map_err(usage)?;
                let served = toolhost::server::serve(server, options).await;
                // Spans and metrics of the last calls go out before the process does.
                if let Some(t) = &telemetry {
                    t.shutdown();
                }
                served.map_err(other)?;
                Ok(0)
            }
            Command::Inspect { file } => inspect(&config, &file),
            Command::Doc { file, wit, out } => attach_docs(&file, &wit, out.as_deref()),
            Command::Pull { names, update } => publishing::pull(&config, &names, update).await,
            Command::Push { file, target } => publishing::push(&config, &file, &target).await,
            Command::Sign { target, key } => publishing::sign(&config, &target, &key).await,
            Command::Audit {
                tool,
                outcome,
                since,
                until,
                records,
                json,
            } => {
                let filter = Filter {
                    tool,
                    outcome,
                    since,
                    until,
                    ..Filter::default()
                };
                show_audit(&config, &filter, records, json)
            }
            Command::List { json, format } => {
                let registry = open_registry(config).await?;
                match format {
                    Some(format) => {
                        let tools =
                            toolhost::batch::definitions(registry.catalog().specs(), format);
                        println!("{}", serde_json::to_string_pretty(&tools).map_err(other)?);
                        Ok(0)
                    }
                    None => list(&registry, json),
                }
            }
            Command::Batch {
                format,
                stream,
                concurrency,
            } if stream => batch_stream(config, format, concurrency).await,
            Command::Batch {
                format,
                concurrency,
                ..
            } => batch(config, format, concurrency).await,
            Command::Call { tool, input, json } => {
                let input = read_input(&input)?;
                let pipeline = open_host(&config, 1).await?;
                let approver = TtyApprover::open();
                let outcome = pipeline
                    .call(CallRequest {
                        tool,
                        input,
                        origin: "cli",
                        approver,
                        ..CallRequest::default()
                    })
                    .await;
                if json {
                    println!("{}", serde_json::to_string_pretty(&outcome).map_err(other)?);
                } else if outcome.is_error() {
                    eprintln!("{}", multi_line(&outcome.content));
                } else {
                    println!("{}", multi_line(&outcome.content));
                }
                Ok(u8::from(outcome.is_error()))
            }
        }
    }
}

/// `toolhost batch`: the message from stdin, the answer on stdout; Ctrl-C cancels the batch and
/// still prints the answer, with the calls it stopped answered as cancelled.
async fn batch(
    config: Config,
    format: toolhost::batch::FormatChoice,
    concurrency: usize,
) -> Result<u8, Failure> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the message from stdin")
        .map_err(usage)?;
    let parsed = toolhost::batch::parse_text(&text, format).map_err(usage)?;
    let pipeline = Arc::new(open_host(&config, concurrency).await?);
    let options = batch_options(concurrency);
    let cancel = cancel_on_ctrl_c();
    let batch_id = toolhost::batch::new_batch_id();
    let report =
        toolhost::batch::run(&pipeline, &batch_id, parsed, &options, &cancel, |_| {}).await;
    println!(
        "{}",
        serde_json::to_string_pretty(&report.answer()).map_err(other)?
    );
    Ok(u8::from(report.has_errors()))
}

/// `toolhost batch --stream`: the model's streaming response from stdin, read as it arrives, each
/// call started when complete; a JSON line per event on stdout as it happens, the answer last.
/// Ctrl-C stops reading and cancels the calls; every call begun is still answered.
async fn batch_stream(
    config: Config,
    format: toolhost::batch::FormatChoice,
    concurrency: usize,
) -> Result<u8, Failure> {
    use std::io::Write;
    use toolhost::batch::stream::Decoder;

    let pipeline = Arc::new(open_host(&config, concurrency).await?);
    let opened = toolhost::batch::open(Decoder::new(format), stdin_chunks())
        .await
        .context("cannot read the stream on stdin")
        .map_err(usage)?;
    let options = batch_options(concurrency);
    let cancel = cancel_on_ctrl_c();
    let batch_id = toolhost::batch::new_batch_id();
    let answer_format = opened.format();
    let print = |event: &Value| {
        let mut out = std::io::stdout().lock();
        // A reader that went away loses the lines; the calls still end and are recorded.
        let _ = writeln!(out, "{event}").and_then(|()| out.flush());
    };
    let streamed = opened
        .run(&pipeline, &batch_id, &options, &cancel, |progress| {
            print(&progress.event(answer_format).1);
        })
        .await;
    print(&toolhost::batch::answer_event(
        &streamed.report,
        Some(&streamed),
    ));
    Ok(u8::from(streamed.report.has_errors()))
}

/// Stdin as it arrives, read on a thread of its own: a blocking read cannot be cancelled, and a
/// tokio blocking task would hold the runtime's shutdown until stdin closes.
fn stdin_chunks() -> impl futures_util::Stream<Item = std::io::Result<bytes::Bytes>> + Unpin + Send
{
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0; 64 << 10];
        loop {
            let chunk = match stdin.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => Ok(bytes::Bytes::copy_from_slice(&buf[..n])),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
            let failed = chunk.is_err();
            if tx.blocking_send(chunk).is_err() || failed {
                return;
            }
        }
    });
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// How the CLI runs a batch: `concurrency` reads at once, questions asked on the terminal.
fn batch_options(concurrency: usize) -> toolhost::batch::BatchOptions {
    toolhost::batch::BatchOptions {
        concurrency,
        approver: TtyApprover::open(),
        ..toolhost::batch::BatchOptions::default()
    }
}

/// A token cancelled by Ctrl-C; a second Ctrl-C ends the process at once (exit 130).
fn cancel_on_ctrl_c() -> tokio_util::sync::CancellationToken {
    let cancel = tokio_util::sync::CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    cancel
}

/// `doc`: FILE with the WIT's doc comments, written to OUT or in place (through a temporary file
/// beside it, renamed over it, so that a failure leaves FILE as it was).
fn attach_docs(file: &Path, wit: &Path, out: Option<&Path>) -> Result<u8, Failure> {
    let bytes = std::fs::read(file)
        .with_context(|| format!("cannot read {}", file.display()))
        .map_err(usage)?;
    let documented = scaffold::attach_docs(&bytes, wit).map_err(usage)?;
    let target = out.unwrap_or(file);
    let staged = target.with_extension("wasm.doc-tmp");
    std::fs::write(&staged, &documented)
        .and_then(|()| std::fs::rename(&staged, target))
        .with_context(|| format!("cannot write {}", target.display()))
        .map_err(other)?;
    println!(
        "{}: doc comments from {} attached",
        target.display(),
        wit.display()
    );
    Ok(0)
}

/// `new`: the global `--dir` (a grant, PLUGIN=PATH, for the other commands) names the project's directory.
fn new_project(name: &str, lang: Lang, generic: bool, dirs: &[String]) -> Result<u8, Failure> {
    let dir = match dirs {
        [] => PathBuf::from(name),
        [dir] if !dir.contains('=') => PathBuf::from(dir),
        _ => {
            return Err(usage(anyhow::anyhow!(
                "`new` takes at most one --dir DIR, the directory to create the project in \
                 (PLUGIN=PATH grants are for the other commands)"
            )));
        }
    };
    let project = scaffold::create(name, lang, generic, &dir).map_err(|e| match e {
        scaffold::ScaffoldError::Io { .. } => other(e),
        _ => usage(e),
    })?;
    let shown = project.dir.display();
    let kind = if generic { "generic " } else { "" };
    println!(
        "created the {kind}{lang} plugin '{}' in {shown}:",
        project.name
    );
    for file in &project.files {
        println!("  {}", file.display());
    }
    println!("{}", lang.toolchain());
    println!(
        "next: cd {shown} && ./build.sh   (writes {}.wasm; copy it into your plugins folder)",
        project.name
    );
    println!("      ./test.sh                  (builds, then calls the tool through toolhost)");
    Ok(0)
}

/// The plugins alone ([`toolhost::host::open_registry`]), for `list`.
async fn open_registry(config: Config) -> Result<Registry, Failure> {
    toolhost::host::open_registry(config).await.map_err(other)
}

/// The host `config` describes ([`toolhost::host::open`]), running `max_calls` calls at once.
async fn open_host(config: &Config, max_calls: usize) -> Result<Pipeline, Failure> {
    toolhost::host::open(config.clone(), max_calls)
        .await
        .map_err(other)
}

fn read_input(arg: &str) -> Result<Value, Failure> {
    let text = if arg == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read the input from stdin")
            .map_err(usage)?;
        s
    } else {
        arg.to_string()
    };
    serde_json::from_str(&text)
        .with_context(|| "the input is not valid JSON")
        .map_err(usage)
}
