//! The HTTP app of the daemon, assembled: Streamable HTTP MCP at `/mcp` (from [`super::mcp`]), the
//! batch API under `/v1/` (from [`super::batch`]), the console under `/console/` (from
//! [`super::console`]), `GET /health`, `/ready` and `/metrics` (from
//! [`super::ops`]), all behind [`guarded`].
//!
//! Every route sits behind the [`Guard`] (Host, Origin, bearer token). `/mcp` is rmcp's service:
//! sessions for clients that `initialize` (each answering only the caller that opened it,
//! [`owners`]), stateless requests for 2026-07-28 clients, a body limit,
//! and an idle timeout for sessions, with each revision's rules for priming events and `DELETE`
//! ([`compat`]); its tool calls are bounded by the request timeout in the
//! handler, so that a call that runs too long is stopped and audited rather than cut off. The
//! other routes are bounded by the request timeout here. Every route's body is read under the read
//! timeout first ([`body`]), so that a client trickling a body cannot hold a slot. A top module:
//! it may import every front end, and none imports it but [`super::daemon`] and [`super::run`].

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;

use super::batch;
use super::console::{self, Console};
use super::http::auth;
use super::http::body::{self, BodyDeadlines};
use super::http::guard::{self, Guard};
use super::http::reply::error;
use super::mcp::sessions::SessionCalls;
use super::mcp::{McpServer, RequestStates, compat, legacy, owners};
use super::ops;
use super::shared::Shared;
use toolhost_config::config::ServerConfig;

/// An HTTP session that sends nothing for this long is closed (the client may `initialize` again).
const SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// Keep-alive comments on open event streams, so that proxies do not close them.
const SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Every route over `shared`, MCP's approvals sealed by `states`; cancelling `mcp_stop` ends every
/// MCP session and stream.
pub(crate) fn app(
    shared: Arc<Shared>,
    states: Arc<RequestStates>,
    console: Option<Arc<Console>>,
    config: &ServerConfig,
    mcp_stop: CancellationToken,
) -> Router {
    let guard = Arc::new(Guard::new(config));
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE_TIMEOUT);
    let sessions = Arc::new(sessions);
    let owners = Arc::new(owners::Owners::new(sessions.clone()));
    let mcp_config = StreamableHttpServerConfig::default();
    let mcp_config = match guard.rmcp_hosts() {
        Some(hosts) => mcp_config.with_allowed_hosts(hosts),
        None => mcp_config.disable_allowed_hosts(),
    };
    let mcp_config = mcp_config
        .with_allowed_origins(guard.rmcp_origins())
        .enforce_origin_validation()
        .with_max_request_body_bytes(config.max_body_bytes)
        .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
        .with_cancellation_token(mcp_stop);
    let calls = Arc::new(SessionCalls::default());
    let server = McpServer::with_shared(shared.clone(), states, Some(config.request_timeout))
        .with_sessions(calls.clone());
    let mcp = Arc::new(StreamableHttpService::new(
        move || Ok(server.clone()),
        sessions.clone(),
        mcp_config,
    ));
    // Served through a shared reference: rmcp's own `Service` clones the whole service, its
    // configuration's host and origin lists included, for every request, and each middleware
    // below clones what it wraps again (callgrind: 117 string copies per MCP request).
    let mcp = tower::service_fn(move |request: Request| {
        let mcp = mcp.clone();
        async move { Ok::<_, std::convert::Infallible>(mcp.handle(request).await) }
    });

    let plain = Router::new()
        .route("/health", get(ops::health))
        .route("/ready", get(ops::ready))
        .route("/metrics", get(ops::metrics))
        .with_state(shared.clone())
        .route_layer(middleware::from_fn_with_state(
            config.request_timeout,
            time_limit,
        ));
    // The four steps of `/mcp` as one stack, boxed once by the route: `route_layer` boxes each
    // layer's service on its own, and every request cloned the chain. Ownership first, so that
    // every step after it sees another caller's session as unknown.
    let mcp = ServiceBuilder::new()
        .layer(middleware::from_fn_with_state(owners, owners::owned))
        .layer(middleware::from_fn_with_state(
            BodyLimits {
                bytes: config.max_body_bytes,
                time: config.read_timeout,
            },
            json_rpc_errors,
        ))
        .layer(middleware::from_fn_with_state(
            compat::Sessions {
                manager: sessions,
                calls,
            },
            compat::revisions,
        ))
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            legacy::tasks,
        ))
        .service(mcp);
    let mut routes = Router::new()
        .route_service("/mcp", mcp)
        .merge(plain)
        .merge(batch::routes(shared.clone(), config));
    if let Some(console) = console {
        routes = routes.merge(console::routes(console));
    }
    let routes = routes.fallback(not_found);
    guarded(routes, guard, &shared, config)
}

/// `routes` behind the [`Guard`], the body deadlines and the authenticator, if any, in that
/// order. Applied once around the whole router: `Router::layer` wraps every route and the fallback
/// on its own, each in a boxed service that every request clones with all it wraps
/// (BENCHMARKS-history.md).
pub(crate) fn guarded(
    routes: Router,
    guard: Arc<Guard>,
    shared: &Shared,
    config: &ServerConfig,
) -> Router {
    let outer = ServiceBuilder::new()
        .layer(middleware::from_fn_with_state(guard, guard::guarded))
        // Inside the guard: a refused request is answered before its body is read.
        .layer(middleware::from_fn_with_state(
            body_deadlines(config),
            body::bounded,
        ));
    match auth::authenticator(shared, config) {
        Some(auth) => Router::new().fallback_service(
            outer
                .layer(middleware::from_fn_with_state(auth, auth::authenticated))
                .service(routes),
        ),
        None => Router::new().fallback_service(outer.service(routes)),
    }
}

/// Every route's body must arrive within the read timeout, and never stall for long.
pub(crate) fn body_deadlines(config: &ServerConfig) -> BodyDeadlines {
    BodyDeadlines {
        max_bytes: config.max_body_bytes,
        total: config.read_timeout,
        idle: config.read_timeout.min(body::IDLE),
        stream_total: config.request_timeout,
        stream_idle: config.read_timeout,
    }
}

/// How much of an MCP request body is read, and for how long.
#[derive(Clone, Copy)]
struct BodyLimits {
    bytes: usize,
    time: Duration,
}

/// rmcp answers a JSON POST whose body is not a JSON-RPC message with 415 and plain text; MCP asks
/// for 400 with a JSON-RPC error without id: -32700 when the body is not JSON, -32600 when it is
/// JSON but not a message. The body is read here (within the same size limit rmcp applies, and a
/// time limit, so that a client trickling its body cannot hold the request open) so that it can
/// be told which; every other answer of rmcp passes unchanged.
async fn json_rpc_errors(
    State(BodyLimits { bytes: limit, time }): State<BodyLimits>,
    request: Request,
    next: Next,
) -> Response {
    let essence = |v: &str| {
        v.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    };
    let json_post = request.method() == Method::POST
        && request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| essence(v) == "application/json");
    if !json_post {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(time, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => bytes,
        Err(_) => {
            let text = format!(
                "Request Timeout: the body did not arrive within {} ms",
                time.as_millis()
            );
            return (StatusCode::REQUEST_TIMEOUT, text).into_response();
        }
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            return if too_large {
                let text = format!("Payload Too Large: request body exceeds {limit} bytes");
                (StatusCode::PAYLOAD_TOO_LARGE, text).into_response()
            } else {
                let text = format!("cannot read the request body: {e}");
                (StatusCode::BAD_REQUEST, text).into_response()
            };
        }
    };
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    let (code, message) = match serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
        Err(e) => (-32700, format!("Parse error: {e}")),
        Ok(_) => (
            -32600,
            "Invalid Request: the body is JSON but not a JSON-RPC message".to_string(),
        ),
    };
    let error = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    (StatusCode::BAD_REQUEST, Json(error)).into_response()
}

async fn time_limit(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => error(StatusCode::REQUEST_TIMEOUT, "the request took too long"),
    }
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not found: MCP is at /mcp; see also /v1/tool-calls, /v1/tools, /console/, /health and /metrics",
    )
}
