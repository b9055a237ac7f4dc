//! The HTTP accept loop. axum's own `serve` sets no deadline on reading a request head and accepts
//! without bound; a daemon that untrusted clients can reach needs both, or a client that sends one
//! header byte a second (slow-loris) holds a connection and a task forever, and a flood of them
//! exhausts the daemon's descriptors. Here: a header-read deadline (hyper's), a cap on open
//! connections (the rest wait in the kernel's backlog), and graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How the accept loop treats connections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    /// A request head (and, for `/mcp`, its body) must arrive within this; an idle keep-alive
    /// connection is closed after it too.
    pub(crate) read_timeout: Duration,
    /// Connections open at once; more wait to be accepted.
    pub(crate) max_connections: usize,
}

/// Serve `app` on `listener` until `stop`, then wait for open connections to finish their requests
/// (the caller bounds that wait, and ends event streams that would never finish).
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    stop: CancellationToken,
) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.read_timeout);
    let builder = Arc::new(builder);
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = stop.cancelled() => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors or memory, or a connection reset before it was accepted:
                    // none of it is fatal to the daemon. Back off a little so as not to spin.
                    tracing::warn!("cannot accept an HTTP connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let service = app
            .clone()
            .map_request(|r: Request<Incoming>| r.map(Body::new));
        let service = TowerToHyperService::new(service);
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("HTTP connection ended: {e}");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
