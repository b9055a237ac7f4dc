//! MCP 2025-11-25 tasks on the wire, where rmcp (which speaks the 2026 extension) cannot see them:
//!
//! - in: a `tools/call` with `task`, and `tasks/get` / `tasks/cancel` from a client that is not on
//!   2026-07-28, are renamed to methods of ours ([`wire::CALL_AS_TASK`], [`wire::GET`],
//!   [`wire::CANCEL`]) that the custom-request handler answers ([`answer`]);
//! - out: the `initialize` result of a 2025-11-25 session declares the `tasks` capability, and
//!   `tools/list` says each tool's `execution.taskSupport`.
//!
//! [`wire`] rewrites JSON-RPC values; the HTTP middleware here ([`tasks`]) applies it to `/mcp`
//! bodies, and [`StdioIn`] and [`StdioOut`] to the stdio transport. Nothing here runs a call.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt;
use serde_json::Value;

use self::wire::{Answer, Incoming, incoming, rewrite_response};
use crate::server::shared::Shared;

mod methods;
mod stdio;
mod wire;

pub(in crate::server::mcp) use self::methods::{LEGACY_METHODS, answer};
pub(crate) use self::stdio::{Pending, StdioIn, StdioOut};

/// `/mcp` middleware: [`wire::rewrite_request`] on the body (held in memory by then), and
/// [`rewrite_response`] on the answer when it needs it (JSON, or the events of a stream that ends
/// with it).
pub(crate) async fn tasks(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = body.collect().await.map(|b| b.to_bytes()) else {
        return next.run(Request::from_parts(parts, Body::empty())).await;
    };
    let revision = parts
        .headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Incoming {
        answer, renamed, ..
    } = incoming(&bytes, revision.as_deref());
    let bytes = renamed.map_or(bytes, Bytes::from);
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if answer == Answer::AsIs {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return Response::from_parts(parts, Body::empty());
    };
    let is_sse = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let catalog = shared.services.registry.catalog();
    let support = |name: &str| catalog.get(name).map(|t| t.plugin.policy.task);
    let rewrite = |text: &str| -> Option<String> {
        let mut message: Value = serde_json::from_str(text).ok()?;
        rewrite_response(&mut message, answer, support);
        serde_json::to_string(&message).ok()
    };
    let body = if is_sse {
        let text = String::from_utf8_lossy(&body);
        let mut out = String::with_capacity(text.len() + 128);
        for line in text.split_inclusive('\n') {
            match line
                .strip_prefix("data: ")
                .and_then(|d| rewrite(d.trim_end()))
            {
                Some(data) => {
                    out.push_str("data: ");
                    out.push_str(&data);
                    out.push('\n');
                }
                None => out.push_str(line),
            }
        }
        Bytes::from(out)
    } else {
        match std::str::from_utf8(&body).ok().and_then(rewrite) {
            Some(text) => Bytes::from(text),
            None => body,
        }
    };
    let mut parts = parts;
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}
