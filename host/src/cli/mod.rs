//! The command line: flags in, a [`Host`] opened for the command, its results rendered on stdout,
//! and an exit code out. No wiring here: the host is opened by [`toolhost::host`], and the exit
//! code of a failure follows from its type ([`Failure::exit_code`]).

mod approver;
mod args;
mod failure;
mod granting;
mod linking;
mod listing;
mod progress;
mod publishing;
mod rendering;

use std::fmt::Display;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use toolhost::audit::Filter;
use toolhost::exec::CallRequest;
use toolhost::host::Host;
use toolhost::scaffold::{self, Lang};
use toolhost::server::ServeOptions;
use toolhost_call::text::multi_line;
use toolhost_config::config::{Config, Overrides};

use self::approver::TtyApprover;
pub(crate) use self::args::Cli;
use self::args::Command;
pub(crate) use self::failure::Failure;
use self::failure::usage;
use self::listing::list;
use self::rendering::{inspect, show_audit};

impl Cli {
    /// The log filter when `TOOLHOST_LOG` is unset: warnings, and for `serve` toolhost's own info
    /// lines (each plugin's compile and load, one line per call: [`toolhost::exec::CALL_LOG`]);
    /// a one-shot command prints its outcome itself.
    pub(crate) fn default_log(&self) -> String {
        match self.command {
            Command::Serve { .. } => "warn,toolhost=info".to_owned(),
            _ => "warn".to_owned(),
        }
    }

    /// Whether this is the daemon, whose log must never wait for stderr's reader.
    pub(crate) fn serves(&self) -> bool {
        matches!(self.command, Command::Serve { .. })
    }

    /// Run the command; `Ok(code)` for normal exits (0 or 1).
    pub(crate) async fn run(self) -> Result<u8, Failure> {
        // `new` only writes files: a broken toolhost.toml in the current directory must not stop it.
        if let Command::New {
            name,
            lang,
            generic,
            wasi,
        } = &self.command
        {
            return new_project(name, *lang, *generic, wasi, &self.global.dirs);
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
        // `grant` and `revoke` check the file they write, not the one there is.
        if let Command::Grant { .. } | Command::Revoke { .. } = &self.command {
            return granting::run(&self.command, g, &overrides);
        }
        let config = Config::load(g.config.as_deref(), &overrides)?;
        match self.command {
            Command::New {
                name,
                lang,
                generic,
                wasi,
            } => new_project(&name, lang, generic, &wasi, &overrides.dirs),
            Command::Serve {
                stdio,
                http,
                no_watch,
            } => {
                let options = ServeOptions {
                    stdio: stdio || http.is_none(),
                    http: http.is_some().then_some(config.server.http),
                    hot_reload: !no_watch,
                };
                let host = Host::open_daemon(config).await?;
                let served = host.serve(options).await;
                host.shutdown().await;
                served?;
                Ok(0)
            }
            command @ (Command::Grant { .. } | Command::Revoke { .. }) => {
                granting::run(&command, g, &overrides)
            }
            Command::ConsoleLink { url } => linking::mint(&config, url.as_deref()).await,
            Command::Inspect { file } => inspect(&file),
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
                let registry = Host::unloaded_registry(config)?;
                progress::load(&registry).await?;
                match format {
                    Some(format) => {
                        let tools =
                            toolhost::batch::definitions(registry.catalog().specs(), format);
                        print_json(&tools)?;
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
                let slots = sandboxes(1, &config);
                let host = Host::open(config, slots).await?;
                let approver = TtyApprover::open();
                let outcome = host
                    .pipeline()
                    .call(CallRequest {
                        tool,
                        input,
                        origin: "cli",
                        approver,
                        ..CallRequest::default()
                    })
                    .await;
                if json {
                    print_json(&outcome)?;
                } else if outcome.is_error() {
                    eprintln!("{}", multi_line(&outcome.content));
                } else {
                    print(multi_line(&outcome.content))?;
                }
                Ok(u8::from(outcome.is_error()))
            }
        }
    }
}

/// One line on stdout, flushed, so that a reader gone away is seen here (and exits 0).
fn print(text: impl Display) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// `value` as pretty JSON on stdout.
fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    print(serde_json::to_string_pretty(value).map_err(Failure::Render)?)
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
        .map_err(|source| Failure::Read {
            what: "the message from stdin".into(),
            source,
        })?;
    let parsed = toolhost::batch::parse_text(&text, format)?;
    let slots = sandboxes(concurrency, &config);
    let host = Host::open(config, slots).await?;
    let options = batch_options(concurrency);
    let cancel = cancel_on_ctrl_c();
    let batch_id = toolhost::batch::new_batch_id();
    let report = toolhost::batch::run(
        host.pipeline(),
        &batch_id,
        parsed,
        &options,
        &cancel,
        |_| {},
    )
    .await;
    print_json(&report.answer())?;
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

    let slots = sandboxes(concurrency, &config);
    let host = Host::open(config, slots).await?;
    let opened = toolhost::batch::open(Decoder::new(format), stdin_chunks())
        .await
        .map_err(Failure::Stream)?;
    let print = |event: &Value| {
        let mut out = std::io::stdout().lock();
        // A reader that went away loses the lines; the calls still end and are recorded.
        let _ = writeln!(out, "{event}").and_then(|()| out.flush());
    };
    let options = toolhost::batch::BatchOptions {
        progress: Some(std::sync::Arc::new(move |index, id, name, p| {
            print(&toolhost::batch::progress_event(index, id, name, &p));
        })),
        ..batch_options(concurrency)
    };
    let cancel = cancel_on_ctrl_c();
    let batch_id = toolhost::batch::new_batch_id();
    let answer_format = opened.format();
    let streamed = opened
        .run(host.pipeline(), &batch_id, &options, &cancel, |progress| {
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
/// The sandboxes `calls` calls at once need: one each, and one more per level of the tool calls
/// they may make from inside the sandbox (a calling call waits in its own).
fn sandboxes(calls: usize, config: &Config) -> usize {
    calls * (1 + config.deepest_nesting() as usize)
}

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
                #[expect(
                    clippy::exit,
                    reason = "a second Ctrl-C is the user's way out of a batch that will not stop"
                )]
                std::process::exit(130);
            }
        }
    });
    cancel
}

/// `doc`: FILE with the WIT's doc comments, written to OUT or in place (through a temporary file
/// beside it, renamed over it, so that a failure leaves FILE as it was).
fn attach_docs(file: &Path, wit: &Path, out: Option<&Path>) -> Result<u8, Failure> {
    let bytes = std::fs::read(file).map_err(|source| Failure::Read {
        what: file.display().to_string(),
        source,
    })?;
    let documented = scaffold::attach_docs(&bytes, wit)?;
    let target = out.unwrap_or(file);
    let staged = target.with_extension("wasm.doc-tmp");
    std::fs::write(&staged, &documented)
        .and_then(|()| std::fs::rename(&staged, target))
        .map_err(|source| Failure::Write {
            what: target.display().to_string(),
            source,
        })?;
    print(format_args!(
        "{}: doc comments from {} attached",
        target.display(),
        wit.display()
    ))?;
    Ok(0)
}

/// `new`: the global `--dir` (a grant, PLUGIN=PATH, for the other commands) names the project's directory.
fn new_project(
    name: &str,
    lang: Lang,
    generic: bool,
    wasi: &str,
    dirs: &[String],
) -> Result<u8, Failure> {
    let kind = match (generic, wasi) {
        (false, "0.3") => scaffold::Kind::Wasi3,
        (true, "0.3") => {
            return Err(usage(
                "`--generic` and `--wasi 0.3` do not go together yet: a generic project is WASI 0.2",
            ));
        }
        (true, _) => scaffold::Kind::Generic,
        (false, _) => scaffold::Kind::Contract,
    };
    let dir = match dirs {
        [] => PathBuf::from(name),
        [dir] if !dir.contains('=') => PathBuf::from(dir),
        _ => {
            return Err(usage(
                "`new` takes at most one --dir DIR, the directory to create the project in \
                 (PLUGIN=PATH grants are for the other commands)",
            ));
        }
    };
    let project = scaffold::create(name, lang, kind, &dir)?;
    let shown = project.dir.display();
    let kind = match kind {
        scaffold::Kind::Contract => "",
        scaffold::Kind::Generic => "generic ",
        scaffold::Kind::Wasi3 => "WASI 0.3 ",
    };
    let mut out = format!(
        "created the {kind}{lang} plugin '{}' in {shown}:\n",
        project.name
    );
    for file in &project.files {
        out.push_str(&format!("  {}\n", file.display()));
    }
    out.push_str(&format!("{}\n", lang.toolchain()));
    out.push_str(&format!(
        "next: cd {shown} && ./build.sh   (writes {}.wasm; copy it into your plugins folder)\n",
        project.name
    ));
    out.push_str("      ./test.sh                  (builds, then calls the tool through toolhost)");
    print(out)?;
    Ok(0)
}

/// The call's input: `arg` itself, or stdin for "-".
fn read_input(arg: &str) -> Result<Value, Failure> {
    let text = if arg == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|source| Failure::Read {
                what: "the input from stdin".into(),
                source,
            })?;
        s
    } else {
        arg.to_string()
    };
    serde_json::from_str(&text).map_err(Failure::Json)
}
