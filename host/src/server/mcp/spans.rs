//! The server span of each MCP request, named and attributed as the OpenTelemetry MCP semantic
//! conventions say, and `mcp.server.operation.duration`. Only when telemetry is on.

use std::future::Future;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use toolhost_gate::caller::Caller;

use crate::telemetry;

/// The server span of an MCP request, as the MCP semantic conventions name and attribute it, under
/// the trace its `_meta.traceparent` continues.
pub(super) fn request_span(
    method: &str,
    tool: Option<&str>,
    context: &RequestContext<RoleServer>,
    caller: Option<&Caller>,
) -> opentelemetry::Context {
    use opentelemetry::KeyValue;
    let meta = |key: &str| context.meta.get(key).and_then(Value::as_str);
    let parent = telemetry::remote_parent(meta("traceparent"), meta("tracestate"));
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", method.to_owned()),
        KeyValue::new("jsonrpc.request.id", context.id.to_string()),
    ];
    if let Some(v) = context.protocol_version() {
        attributes.push(KeyValue::new("mcp.protocol.version", v.to_string()));
    }
    let session = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok());
    if let Some(id) = session {
        attributes.push(KeyValue::new("mcp.session.id", session_digest(id)));
    }
    if let Some(tool) = tool {
        attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
        attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
    }
    if let Some(c) = caller {
        attributes.push(KeyValue::new("enduser.id", c.subject.clone()));
    }
    let name = match tool {
        Some(t) => format!("{method} {t}"),
        None => method.to_owned(),
    };
    telemetry::server_span(name, &parent, attributes)
}

/// What spans say of a session: the first 16 hex digits of the SHA-256 of its id. Spans leave the
/// process (to a collector, its storage, whoever reads traces), and an id is a bearer credential for
/// a session without an owner; the digest still tells one session's requests from another's.
fn session_digest(id: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// `answer` inside the server span of MCP request `method` (when telemetry is on), its JSON-RPC
/// error code as `error.type` when it fails.
pub(super) async fn traced<T>(
    method: &str,
    context: &RequestContext<RoleServer>,
    answer: impl Future<Output = Result<T, ErrorData>>,
) -> Result<T, ErrorData> {
    if !telemetry::is_on() {
        return answer.await;
    }
    let started = std::time::Instant::now();
    let caller = caller_of(context);
    let cx = request_span(method, None, context, caller.as_deref());
    let result = answer.await;
    let code = result.as_ref().err().map(|e| e.code.0.to_string());
    end_request_span(&cx, method, None, code.as_deref(), started);
    result
}

/// End a request's span and record `mcp.server.operation.duration`.
pub(super) fn end_request_span(
    cx: &opentelemetry::Context,
    method: &str,
    tool: Option<&str>,
    error: Option<&str>,
    started: std::time::Instant,
) {
    use opentelemetry::KeyValue;
    telemetry::end_span(cx, error);
    let mut attributes = vec![KeyValue::new("mcp.method.name", method.to_owned())];
    if let Some(t) = tool {
        attributes.push(KeyValue::new("gen_ai.tool.name", t.to_owned()));
    }
    if let Some(e) = error {
        attributes.push(KeyValue::new("error.type", e.to_owned()));
    }
    telemetry::instruments()
        .operation
        .record(started.elapsed().as_secs_f64(), &attributes);
}

/// The authenticated caller of an HTTP request (put there by [`crate::server::http::auth`]);
/// `None` on stdio.
pub(super) fn caller_of(context: &RequestContext<RoleServer>) -> Option<Arc<Caller>> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Arc<Caller>>())
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::session_digest;

    #[test]
    fn spans_carry_a_digest_of_the_session_id_never_the_id() {
        let id = "6f1c1a0e-6f4e-4c53-9a57-2d0f3b8e6a11";
        let digest = session_digest(id);
        assert_eq!(digest.len(), 16);
        assert!(digest.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(!id.contains(&digest) && !digest.contains(&id[..8]));
        assert_eq!(digest, session_digest(id));
        assert_ne!(digest, session_digest("another"));
    }
}
