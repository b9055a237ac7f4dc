//! toolhost's own HTTP answers outside MCP: the `{"error": "..."}` body every such refusal carries.
//!
//! Written once for every route and middleware. Must not decide anything: the statuses and
//! messages are their callers'; imports nothing of the server.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use serde_json::json;

/// `status` with the body `{"error": message}`.
pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}
