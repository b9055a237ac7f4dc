//! The `toolhost` binary: parse flags, log to stderr, run the command, turn its failure into a
//! message and the exit code the failure's type maps to ([`cli::Failure::exit_code`]).

#![forbid(unsafe_code)]

mod cli;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    if cli.serves() {
        toolhost::diagnostics::never_wait();
    }
    // Logs go to stderr only: stdout belongs to results and, for `serve --stdio`, to MCP messages.
    // A line stderr cannot take at once is dropped and counted, never waited for (a reader that
    // went away or stopped reading must not stop the daemon: `toolhost::diagnostics`).
    // One event, one line: plugin text in a message cannot forge lines or steer the terminal.
    // Colour only for a terminal: a file or a log collector would get escape codes.
    tracing_subscriber::fmt()
        .with_writer(|| toolhost_call::text::LogWriter(toolhost::diagnostics::Stderr))
        .fmt_fields(fields())
        .with_timer(Clock)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            EnvFilter::try_from_env("TOOLHOST_LOG")
                .unwrap_or_else(|_| EnvFilter::new(cli.default_log())),
        )
        .init();
    // Files plugins open and HTTP connections are all the daemon's own descriptors, and a soft limit
    // of 1024 is common: take what the hard limit allows (each call is capped by the sandbox).
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => tracing::debug!("open-files limit: {n}"),
        Err(e) => tracing::warn!("cannot raise the open-files limit: {e}"),
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    // A worker per core, as tokio's default, from the count the daemon asks for once (unless
    // TOKIO_WORKER_THREADS says otherwise, which tokio reads itself).
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(toolhost::system::cores());
    }
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            toolhost::diagnostics::say(&format!("toolhost: cannot start the async runtime: {e}"));
            toolhost::diagnostics::flush(EXIT_GRACE);
            return ExitCode::from(3);
        }
    };
    let code = match runtime.block_on(cli.run()) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            let code = failure.exit_code();
            // Exit 0 for a failure is a reader that closed stdout: nothing worth saying.
            if code != 0 {
                let message = chain(&anyhow::Error::from(failure));
                toolhost::diagnostics::say(&format!(
                    "toolhost: {}",
                    toolhost_call::text::multi_line(&message)
                ));
            }
            ExitCode::from(code)
        }
    };
    // Every call has been answered and recorded by now. A blocking thread still busy may be stuck in
    // the kernel for good (a call's file operation on a hung mount, abandoned at its deadline):
    // dropping the runtime would wait for it forever.
    runtime.shutdown_timeout(EXIT_GRACE);
    // The daemon's log is written by a thread of its own: a moment for its last lines (a reader
    // that stopped reading does not hold the exit).
    toolhost::diagnostics::flush(EXIT_GRACE);
    code
}

/// The failure and its causes, one after another, as anyhow shows a chain; a cause that its
/// effect's message already ends with (an error type that both shows and exposes its source) is
/// said once, not twice.
fn chain(failure: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in failure.chain() {
        let text = cause.to_string();
        if message.ends_with(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

/// Fields as the default formatter writes them (the message, then `name=value` for the rest,
/// `log.*` metadata left out), each value's ESC escaped a piece at a time: the default escapes
/// character by character, about 3% of a served call's instructions for its one log line (issue 42).
fn fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> {
    use std::fmt::Write as _;
    use tracing_subscriber::field::MakeExt as _;
    tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
        let mut w = toolhost_call::text::EscEscaped(w);
        match field.name() {
            "message" => write!(w, "{value:?}"),
            name if name.starts_with("log.") => Ok(()),
            name => write!(w, "{}={value:?}", name.trim_start_matches("r#")),
        }
    })
    .delimited(" ")
}

/// The log's timestamps, written as tracing's default clock writes them (RFC 3339, UTC, microseconds)
/// through the audit log's digit-by-digit form: tracing's own goes through `fmt::write`, a fifth of a
/// call's log line (issue 42).
struct Clock;

impl tracing_subscriber::fmt::time::FormatTime for Clock {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        let now = chrono::Utc::now();
        match toolhost_call::text::rfc3339_micros(&now) {
            Some(digits) => w.write_str(std::str::from_utf8(&digits).map_err(|_| std::fmt::Error)?),
            None => w.write_str(&now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        }
    }
}

/// How long the process waits at exit for blocking threads still running: every call is recorded
/// by then, and what may still run (a plugin's compile, whose cache file is written by rename) can
/// be left; a stdio client sends SIGKILL about 2 s after SIGTERM.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(100);
