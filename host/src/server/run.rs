//! `toolhost serve`: run the transports, hot reload, and shut down gracefully. The top of the
//! server: it wires every front end, and nothing imports it but the facade.
//!
//! On SIGINT or SIGTERM, the pipeline stops admitting new calls (refusals are recorded), lets
//! work in flight finish for `server.shutdown-grace-ms`, then cancels the rest (the sandbox
//! interrupts them promptly and the pipeline records them as cancelled), and only then closes
//! the MCP sessions. When the stdio client closes stdin, the calls it sent still run to their end and
//! are answered (`printf <requests> | toolhost serve --stdio` gets every answer); with no HTTP served
//! the daemon exits right after. Such a client follows with SIGTERM and, about 2 s later, SIGKILL: a
//! SIGTERM after stdin closed gives calls at most [`CLIENT_LEAVING_GRACE`] before they are
//! cancelled and recorded, well inside that second. The audit
//! log is written per line: every running call has its begin line on disk (in the kernel) before its
//! plugin starts, so even a SIGKILL during the grace period leaves a trace of each call.

use std::net::SocketAddr;
use std::time::Duration;

use rmcp::ServiceExt;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::app;
use super::daemon::Server;
use super::http::listener::{self, ConnLimits};
use super::mcp::legacy;
use super::mcp::stdio::FinishOnEof;
use super::mcp::{Lines, McpServer};
use crate::registry::{PluginStatus, Registry, Start};

/// How long the transports get to close after the sessions are ended.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// How long the last answers get to reach their clients before the sessions end.
const FLUSH_WAIT: Duration = Duration::from_millis(300);
/// The shutdown grace once the stdio client has closed stdin, at most: such a client sends SIGTERM
/// and then SIGKILL about 2 s later, and every call's end record must be written before that.
const CLIENT_LEAVING_GRACE: Duration = Duration::from_millis(300);

/// What `toolhost serve` runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Serve MCP on stdin and stdout.
    pub stdio: bool,
    /// Serve Streamable HTTP (and `/health`, `/metrics`) on this address.
    pub http: Option<SocketAddr>,
    /// Reload plugins when the plugins folder changes (the host watches it: [`Host::watch`]).
    ///
    /// [`Host::watch`]: crate::host::Host::watch
    pub hot_reload: bool,
}

/// Why the daemon could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The HTTP address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// Signal handlers cannot be installed.
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    /// Nothing to serve.
    #[error("nothing to serve: enable stdio, HTTP or both")]
    NoTransport,
}

/// Tell the person starting the daemon where the console is, and on loopback without `[auth]`
/// give them the one-time link that signs a browser in.
async fn announce_console(console: &super::console::Console, local: SocketAddr, auth: bool) {
    if auth {
        crate::diagnostics::say(&format!(
            "toolhost: console at http://{local}/console/ (sign in with your identity provider)"
        ));
    } else if local.ip().is_loopback() {
        match console.sign_in_path().await {
            Ok(path) => crate::diagnostics::say(&format!(
                "toolhost: console sign-in link (once): http://{local}{path}"
            )),
            Err(e) => crate::diagnostics::say(&format!(
                "toolhost: console at http://{local}/console/; no sign-in link, as the state store \
                 did not answer ({e}): `toolhost console-link` mints one"
            )),
        }
    } else {
        crate::diagnostics::say(&format!(
            "toolhost: console at http://{local}/console/ for operators' bearer tokens (no sign-in link off loopback)"
        ));
    }
}

/// Serve until a signal (or, on stdio alone, until the client closes stdin).
pub async fn serve(server: Server, options: ServeOptions) -> Result<(), ServeError> {
    if !options.stdio && options.http.is_none() {
        return Err(ServeError::NoTransport);
    }
    let Server {
        shared,
        states,
        config,
        console,
    } = server;
    let services = shared.services.clone();
    let gauged = services.clone();
    crate::telemetry::observe_running(move || gauged.running() as u64);
    let stop = CancellationToken::new();
    let mcp_stop = CancellationToken::new();
    let loaded_stop = CancellationToken::new();
    let accepting = CancellationToken::new();

    let mut sigint = signal(SignalKind::interrupt()).map_err(ServeError::Signals)?;
    let mut sigterm = signal(SignalKind::terminate()).map_err(ServeError::Signals)?;
    tokio::spawn({
        let stop = stop.clone();
        async move {
            let name = tokio::select! {
                _ = sigint.recv() => "SIGINT",
                _ = sigterm.recv() => "SIGTERM",
            };
            tracing::info!("{name}: shutting down");
            stop.cancel();
        }
    });

    let tools = services.registry.catalog().tools.len();
    announce_loaded(services.registry.clone(), loaded_stop.clone());
    let http_task = match options.http {
        None => None,
        Some(addr) => {
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|source| ServeError::Bind { addr, source })?;
            let local = listener
                .local_addr()
                .map_err(|source| ServeError::Bind { addr, source })?;
            // On stderr: the one line a person starting the daemon needs (and tests read the port from).
            crate::diagnostics::say(&format!(
                "toolhost: serving {tools} tools over MCP at http://{local}/mcp"
            ));
            if services.registry.catalog().is_loading() {
                crate::diagnostics::say(&format!(
                    "toolhost: plugins are loading; each serves when it is ready (a first start \
                     compiles them: seconds to a minute). Progress: http://{local}/ready"
                ));
            }
            if let Some(console) = &console {
                services
                    .questions
                    .locate(format!("http://{local}/console/"));
                announce_console(console, local, services.config.auth.is_some()).await;
            }
            let app = app::app(
                shared.clone(),
                states.clone(),
                console.clone(),
                &config,
                mcp_stop.clone(),
            );
            let limits = ConnLimits {
                read_timeout: config.read_timeout,
                max_connections: config.max_connections,
            };
            // Connections are still accepted while calls drain: new calls are refused as busy
            // and `/ready` answers 503, so a load balancer sees the daemon leave.
            Some(tokio::spawn(listener::serve(
                listener,
                app,
                limits,
                accepting.clone(),
            )))
        }
    };

    let stdin_closed = CancellationToken::new();
    let stdio_task: Option<JoinHandle<()>> = options.stdio.then(|| {
        // When its client closes stdin, the stdio session's calls finish, then the session ends.
        let (session, running) = (services.admission.shutdown_token(), TaskTracker::new());
        let server = McpServer::with_shared(shared.clone(), states.clone(), None)
            .with_calls(session.clone(), running.clone());
        let (stdin, stdout) = super::mcp::stdin::streams();
        // 2025-11-25 tasks on the wire (see `legacy`): requests renamed in, results amended out.
        let pending = legacy::Pending::default();
        let stdin = FinishOnEof::new(stdin, (session, stdin_closed.clone()), running);
        let stdin = legacy::StdioIn::new(stdin, pending.clone());
        let stdout = legacy::StdioOut::new(stdout, pending, shared.clone());
        let ct = mcp_stop.child_token();
        let stop = stop.clone();
        let alone = options.http.is_none();
        tracing::info!("serving {tools} tools over MCP on stdio");
        tokio::spawn(async move {
            match server.serve_with_ct(Lines::new(stdin, stdout), ct).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => tracing::error!("MCP over stdio ended before it started: {e}"),
            }
            if alone {
                // The client closed stdin: it is gone, and so is the reason to run.
                stop.cancel();
            }
        })
    });

    stop.cancelled().await;
    loaded_stop.cancel();
    let grace = if stdin_closed.is_cancelled() {
        config.shutdown_grace.min(CLIENT_LEAVING_GRACE)
    } else {
        config.shutdown_grace
    };
    if services.admission.drain(grace).await {
        // Answers to the calls that just ended are on their way to the clients; ending the
        // sessions now would cut their streams before the last message is written.
        tokio::time::sleep(FLUSH_WAIT).await;
    }
    accepting.cancel();
    mcp_stop.cancel();

    if let Some(task) = http_task {
        match tokio::time::timeout(CLOSE_WAIT, task).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("the HTTP server task failed: {e}"),
            Err(_) => tracing::warn!("HTTP connections still open after shutdown; closing them"),
        }
    }
    if let Some(task) = stdio_task
        && tokio::time::timeout(CLOSE_WAIT, task).await.is_err()
    {
        tracing::warn!("the stdio session did not close in time");
    }
    Ok(())
}

/// Say on stderr when the first load of the plugins has ended, and how it went: the line a person
/// starting the daemon waits for (and tests wait for before they call).
fn announce_loaded(registry: Arc<Registry>, stop: CancellationToken) {
    let started = std::time::Instant::now();
    tokio::spawn(async move {
        let catalog = registry.settled(&stop).await;
        if catalog.start != Start::Done {
            return;
        }
        let rejected = catalog
            .plugins
            .values()
            .filter(|s| matches!(s, PluginStatus::Rejected { .. }))
            .count();
        let loaded = catalog.plugins.len() - rejected;
        let rejected = match rejected {
            0 => String::new(),
            n => format!("; {n} rejected (`toolhost list` says why)"),
        };
        crate::diagnostics::say(&format!(
            "toolhost: plugins loaded: {} tools from {loaded} plugins in {:.1} s{rejected}",
            catalog.tools.len(),
            started.elapsed().as_secs_f64()
        ));
    });
}
