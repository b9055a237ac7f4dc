//! toolhost's own HTTP answers outside MCP: the `{"error": "..."}` body every such refusal carries,
//! and the middleware that puts every route behind the [`Guard`] and answers its refusals.
//!
//! Written once for the daemon's router and the batch API's own router. Must not decide anything: the
//! checks are the guard's, the statuses and messages their callers'.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Json, Response};
use serde_json::json;

use super::guard::Guard;

/// `status` with the body `{"error": message}`.
pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// Middleware: a request the guard refuses is answered here (with a log line when Host or Origin
/// is refused); others go on.
pub(crate) async fn guarded(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let Err(refusal) = guard.check(request.headers(), request.uri()) else {
        return next.run(request).await;
    };
    let (status, message) = refusal.status_and_message();
    if status == StatusCode::FORBIDDEN {
        tracing::warn!(path = %request.uri().path(), "refused: {message}");
    }
    error(status, message)
}
