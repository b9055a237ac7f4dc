//! The command line: flags in, one of the commands run, an exit code out.
//!
//! Exit codes: 0 success; 1 the call ran and returned an error result (or a plugin was rejected, for
//! `inspect`); 2 bad usage or configuration; 3 anything else (I/O, the plugins folder, the audit log).

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use serde_json::Value;

use toolhost::audit::{self, Filter};
use toolhost::exec::{ApprovalRequest, Approver, CallRequest, Pipeline};
use toolhost::registry::{PluginStatus, Registry};
use toolhost::sandbox::Sandbox;
use toolhost::scaffold::{self, Lang};
use toolhost::server::{ServeOptions, Server};
use toolhost_policy::config::EngineOptions;
use toolhost_policy::config::{Config, Overrides};
use toolhost_policy::gate::Mode;
use toolhost_policy::text::{multi_line, one_line};

/// Hosts AI agent tools as sandboxed WebAssembly components.
#[derive(Parser, Debug)]
#[command(name = "toolhost", version, about)]
pub(crate) struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Debug)]
struct Global {
    /// Plugins folder [default: ./plugins, or `plugins-dir` in the config].
    #[arg(long, global = true, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// Config file [default: ./toolhost.toml when present].
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Global permission mode: plan, default, accept-edits or bypass.
    #[arg(long, global = true, value_name = "MODE")]
    mode: Option<Mode>,
    /// Grant a plugin a directory, seen by the guest as ".": PLUGIN=PATH[:ro|:rw] (read-only by default).
    #[arg(long = "dir", global = true, value_name = "PLUGIN=PATH[:rw]")]
    dirs: Vec<String>,
    /// Grant a plugin an env var: PLUGIN=NAME (passed through) or PLUGIN=NAME=VALUE.
    #[arg(long = "env", global = true, value_name = "PLUGIN=NAME[=VALUE]")]
    env: Vec<String>,
    /// Audit log file [default: .toolhost/audit.jsonl next to the config].
    #[arg(long, global = true, value_name = "FILE")]
    audit: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Create a plugin project: the contract, one tool with a schema, build.sh and test.sh.
    ///
    /// The project goes into ./NAME, or into the directory given with `--dir DIR`, which must be
    /// absent or empty. For `new`, --dir names that directory; it grants nothing.
    New {
        /// The plugin's name, which is also its tool's name and its .wasm file's name.
        name: String,
        /// The language: rust, python, js or c.
        #[arg(long, value_name = "LANG")]
        lang: Lang,
    },
    /// Run the MCP daemon: on stdio by default, over Streamable HTTP with --http, or both.
    Serve {
        /// Serve MCP on stdin/stdout (the default when --http is not given).
        #[arg(long)]
        stdio: bool,
        /// Serve Streamable HTTP at /mcp (with /health and /metrics) on ADDR
        /// [default: `server.http` in the config, else 127.0.0.1:8750].
        #[arg(long, value_name = "ADDR", num_args = 0..=1)]
        http: Option<Option<String>>,
        /// Do not reload plugins when the plugins folder changes.
        #[arg(long)]
        no_watch: bool,
    },
    /// List the tools, their plugin, hints and grants (and every rejected plugin with its reason).
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Print the tool definitions for an LLM API: anthropic, openai or openai-responses.
        #[arg(long, value_name = "FORMAT", conflicts_with = "json")]
        format: Option<toolhost::batch::Format>,
    },
    /// Run the tool calls of an LLM assistant message read from stdin; print the answer for the API.
    /// Exits 1 when any call's result is an error, 2 when the message holds no batch.
    Batch {
        /// The message's API: auto (detect it), anthropic, openai or openai-responses.
        #[arg(long, value_name = "FORMAT", default_value = "auto")]
        format: toolhost::batch::FormatChoice,
        /// Read-only calls running at once.
        #[arg(long, value_name = "N", default_value_t = toolhost::batch::DEFAULT_CONCURRENCY,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
        concurrency: usize,
    },
    /// Call one tool and print its result; exits 1 when the result is an error.
    Call {
        /// The tool's name.
        tool: String,
        /// The input object as JSON, or "-" to read it from stdin.
        #[arg(long, short, default_value = "{}")]
        input: String,
        /// Print the whole outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show what a component imports and exports, and whether it fits the contract.
    Inspect {
        /// The `.wasm` file.
        file: PathBuf,
    },
    /// Read the audit log: matching records, or a per-tool summary.
    Audit {
        /// Only this tool.
        #[arg(long)]
        tool: Option<String>,
        /// Only this outcome: ok, error, cancelled, input_required or unfinished (began, never ended).
        #[arg(long)]
        outcome: Option<audit::Outcome>,
        /// Only calls that started at or after this RFC 3339 time.
        #[arg(long)]
        since: Option<chrono::DateTime<chrono::Utc>>,
        /// Only calls that started before this RFC 3339 time.
        #[arg(long)]
        until: Option<chrono::DateTime<chrono::Utc>>,
        /// Print matching records as JSONL instead of the summary.
        #[arg(long)]
        records: bool,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// An error with the exit code it maps to.
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) error: anyhow::Error,
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
        if let Command::New { name, lang } = &self.command {
            return new_project(name, *lang, &self.global.dirs);
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
            Command::New { name, lang } => new_project(&name, lang, &overrides.dirs),
            Command::Serve {
                stdio,
                http,
                no_watch,
            } => {
                let pipeline =
                    Arc::new(open_host(&config, config.server.max_concurrent_calls).await?);
                let options = ServeOptions {
                    stdio: stdio || http.is_none(),
                    http: http.is_some().then_some(config.server.http),
                    hot_reload: !no_watch,
                };
                let server = Server::new(pipeline, config.server.clone());
                toolhost::server::serve(server, options)
                    .await
                    .map_err(other)?;
                Ok(0)
            }
            Command::Inspect { file } => inspect(&config, &file),
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
                concurrency,
            } => batch(config, format, concurrency).await,
            Command::Call { tool, input, json } => {
                let input = read_input(&input)?;
                let pipeline = open_host(&config, 1).await?;
                let approver: Option<Arc<dyn Approver>> =
                    TtyApprover::open().map(|a| Arc::new(a) as _);
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
    let options = toolhost::batch::BatchOptions {
        concurrency,
        approver: TtyApprover::open().map(|a| Arc::new(a) as _),
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
        }
    });
    let batch_id = toolhost::batch::new_batch_id();
    let report =
        toolhost::batch::run(&pipeline, &batch_id, parsed, &options, &cancel, |_| {}).await;
    println!(
        "{}",
        serde_json::to_string_pretty(&report.answer()).map_err(other)?
    );
    Ok(u8::from(report.has_errors()))
}

/// `new`: the global `--dir` (a grant, PLUGIN=PATH, for the other commands) names the project's directory.
fn new_project(name: &str, lang: Lang, dirs: &[String]) -> Result<u8, Failure> {
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
    let project = scaffold::create(name, lang, &dir).map_err(|e| match e {
        scaffold::ScaffoldError::Io { .. } => other(e),
        _ => usage(e),
    })?;
    let shown = project.dir.display();
    println!("created the {lang} plugin '{}' in {shown}:", project.name);
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

fn list(registry: &Registry, json: bool) -> Result<u8, Failure> {
    let catalog = registry.catalog();
    let config = registry.config();
    if json {
        let tools: Vec<Value> = catalog
            .tools
            .values()
            .map(|t| {
                let p = &t.plugin.policy;
                serde_json::json!({
                    "name": t.spec.name,
                    "plugin": t.plugin.name,
                    "title": t.spec.title,
                    "description": t.spec.description,
                    "hints": t.spec.hints,
                    "permission_subject": t.spec.permission_subject,
                    "input_schema": t.spec.input_schema,
                    "output_schema": t.spec.output_schema,
                    "grants": {
                        "dirs": p.grants.dirs.iter().map(|d| serde_json::json!({
                            "host": d.host, "guest": d.guest, "read_only": d.read_only,
                        })).collect::<Vec<_>>(),
                        "env": p.grants.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                    },
                })
            })
            .collect();
        let out = serde_json::json!({ "tools": tools, "plugins": catalog.plugins });
        println!("{}", serde_json::to_string_pretty(&out).map_err(other)?);
        return Ok(0);
    }
    let mut out = String::new();
    for t in catalog.tools.values() {
        let h = t.spec.hints;
        let hints: Vec<&str> = [
            (h.read_only, "read-only"),
            (h.destructive, "destructive"),
            (h.idempotent, "idempotent"),
            (h.open_world, "open-world"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        let grants: Vec<String> = t
            .plugin
            .policy
            .grants
            .dirs
            .iter()
            .map(|d| {
                format!(
                    "{}:{}",
                    one_line(&d.host.display().to_string()),
                    if d.read_only { "ro" } else { "rw" }
                )
            })
            .chain(
                t.plugin
                    .policy
                    .grants
                    .env
                    .iter()
                    .map(|(k, _)| format!("env:{}", one_line(k))),
            )
            .collect();
        out.push_str(&format!(
            "{:<20} {:<10} [{}] grants: {}\n    {}\n",
            t.spec.name,
            one_line(&t.plugin.name),
            hints.join(", "),
            if grants.is_empty() {
                "none".into()
            } else {
                grants.join(", ")
            },
            one_line(t.spec.description.lines().next().unwrap_or_default())
        ));
    }
    for (name, status) in &catalog.plugins {
        match status {
            PluginStatus::Rejected { reason, .. } => {
                out.push_str(&format!(
                    "plugin {} rejected: {}\n",
                    one_line(name),
                    one_line(reason)
                ));
            }
            PluginStatus::Loaded { hidden, .. } => {
                for (tool, owner) in hidden {
                    out.push_str(&format!(
                        "plugin {}: tool {tool} hidden (plugin {} provides it; set a prefix)\n",
                        one_line(name),
                        one_line(owner)
                    ));
                }
            }
        }
    }
    if catalog.tools.is_empty() {
        let dir = config.plugins_dir.display().to_string();
        out.push_str(&format!("no tools in {}\n", one_line(&dir)));
    }
    print!("{out}");
    Ok(0)
}

fn inspect(config: &Config, file: &std::path::Path) -> Result<u8, Failure> {
    let bytes = std::fs::read(file)
        .with_context(|| format!("cannot read {}", file.display()))
        .map_err(usage)?;
    let sandbox = Sandbox::new(&EngineOptions::default()).map_err(other)?;
    let _ = config;
    // Every name here comes from the file: shown escaped.
    let shown = file.display().to_string();
    let shown = one_line(&shown);
    match sandbox.inspect(&bytes) {
        Err(e) => {
            println!("{shown}: {}", one_line(&e.to_string()));
            Ok(1)
        }
        Ok(i) => {
            println!("{shown}");
            println!("imports:");
            for name in &i.imports {
                println!("  {}", one_line(name));
            }
            println!("exports:");
            for name in &i.exports {
                println!("  {}", one_line(name));
            }
            match &i.problem {
                None => {
                    println!("fits the toolhost:plugin@0.1.0 contract");
                    Ok(0)
                }
                Some(p) => {
                    println!("does not load: {}", one_line(p));
                    Ok(1)
                }
            }
        }
    }
}

fn show_audit(config: &Config, filter: &Filter, records: bool, json: bool) -> Result<u8, Failure> {
    let path = config
        .audit_path
        .as_ref()
        .ok_or_else(|| usage(anyhow::anyhow!("the audit log is disabled in the config")))?;
    let reader = audit::read_records(path).map_err(other)?;
    let mut kept = Vec::new();
    for r in reader {
        match r {
            Ok(rec) if filter.matches(&rec) => kept.push(rec),
            Ok(_) => {}
            Err(e) => tracing::warn!("{}", one_line(&e.to_string())),
        }
    }
    let mut out = std::io::stdout().lock();
    if records {
        for r in &kept {
            writeln!(out, "{}", serde_json::to_string(r).map_err(other)?).map_err(other)?;
        }
    } else {
        let summary = audit::summarize(kept.iter());
        if json {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&summary).map_err(other)?
            )
            .map_err(other)?;
        } else {
            write!(out, "{}", audit::render_table(&summary)).map_err(other)?;
        }
    }
    Ok(0)
}

/// Asks on the controlling terminal, so that `ask` rules work from a shell even when stdin is a pipe.
struct TtyApprover {
    tty: std::sync::Mutex<std::fs::File>,
}

impl TtyApprover {
    fn open() -> Option<Self> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        Some(Self {
            tty: std::sync::Mutex::new(tty),
        })
    }
}

impl Approver for TtyApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        Box::pin(async move {
            let Ok(mut tty) = self.tty.lock() else {
                return false;
            };
            let _ = write!(tty, "{}\n[y/N] ", request.question());
            let mut answer = [0u8; 1];
            matches!(tty.read(&mut answer), Ok(1) if answer[0] == b'y' || answer[0] == b'Y')
        })
    }
}
