//! MCP 2025-11-25 tasks on the wire, where rmcp (which speaks the 2026 extension) cannot see them:
//!
//! - in: a `tools/call` with `task`, and `tasks/get` / `tasks/cancel` from a client that is not on
//!   2026-07-28, are renamed to methods of ours ([`CALL_AS_TASK`], [`GET`], [`CANCEL`]) that the
//!   custom-request handler answers ([`super::tasks::legacy`]);
//! - out: the `initialize` result of a 2025-11-25 session declares the `tasks` capability, and
//!   `tools/list` says each tool's `execution.taskSupport`.
//!
//! [`rewrite_request`] and [`rewrite_response`] work on JSON-RPC values; the HTTP middleware
//! applies them to `/mcp` bodies. Nothing here runs a call.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt;
use serde_json::{Value, json};

use super::shared::Shared;
use toolhost_policy::task::TaskSupport;

/// `tools/call` with `task`, renamed.
pub(crate) const CALL_AS_TASK: &str = "toolhost/legacy/tasks/call";
/// 2025-11-25 `tasks/get`, renamed.
pub(crate) const GET: &str = "toolhost/legacy/tasks/get";
/// 2025-11-25 `tasks/cancel`, renamed.
pub(crate) const CANCEL: &str = "toolhost/legacy/tasks/cancel";

/// The revision that replaced these tasks with the extension.
const EXTENSION_ERA: &str = "2026-07-28";

/// What a response needs, given its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Nothing.
    AsIs,
    /// An `initialize` result: declare tasks if the session is on 2025-11-25.
    Initialize,
    /// A `tools/list` result: say each tool's task support.
    ToolList,
}

/// The revision a request declares for itself in `_meta` (2026-07-28 requests carry it), if any.
fn declared_revision(message: &Value) -> Option<&str> {
    message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
}

/// Whether a message may need [`rewrite_request`]: a cheap look at the bytes, so that the many
/// messages that do not (every `tools/call` without `task`) are not parsed twice.
fn worth_parsing(bytes: &[u8]) -> bool {
    const NEEDLES: [&[u8]; 4] = [b"tasks/", b"\"task\"", b"initialize", b"tools/list"];
    NEEDLES
        .iter()
        .any(|n| bytes.windows(n.len()).any(|w| w == *n))
}

/// Rename a 2025-11-25 task request in place; what its response will need. `revision` is the
/// transport's idea of the client's revision (the HTTP header), if any.
pub(crate) fn rewrite_request(message: &mut Value, revision: Option<&str>) -> Answer {
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return Answer::AsIs;
    };
    let modern = declared_revision(message)
        .or(revision)
        .is_some_and(|r| r >= EXTENSION_ERA);
    let renamed = match method {
        "initialize" => return Answer::Initialize,
        "tools/list" if !modern => return Answer::ToolList,
        "tools/call"
            if message
                .pointer("/params/task")
                .is_some_and(Value::is_object) =>
        {
            CALL_AS_TASK
        }
        "tasks/get" if !modern => GET,
        "tasks/cancel" if !modern => CANCEL,
        _ => return Answer::AsIs,
    };
    message["method"] = json!(renamed);
    Answer::AsIs
}

/// Add what a 2025-11-25 client reads from a response; `support` says a tool's task support.
pub(crate) fn rewrite_response(
    message: &mut Value,
    answer: Answer,
    support: impl Fn(&str) -> Option<TaskSupport>,
) {
    let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
        return;
    };
    match answer {
        Answer::AsIs => {}
        Answer::Initialize => {
            let version = result.get("protocolVersion").and_then(Value::as_str);
            if version.is_some_and(|v| ("2025-11-25"..EXTENSION_ERA).contains(&v))
                && let Some(Value::Object(caps)) = result.get_mut("capabilities")
            {
                caps.insert(
                    "tasks".into(),
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
                );
            }
        }
        Answer::ToolList => {
            if let Some(Value::Array(tools)) = result.get_mut("tools") {
                for tool in tools {
                    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                    if let Some(s) = support(name)
                        && s != TaskSupport::Never
                    {
                        tool["execution"] = json!({ "taskSupport": s.as_mcp() });
                    }
                }
            }
        }
    }
}

/// `/mcp` middleware: [`rewrite_request`] on the body (held in memory by then), and
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
    let mut answer = Answer::AsIs;
    let parsed = match worth_parsing(&bytes) {
        true => serde_json::from_slice::<Value>(&bytes).ok(),
        false => None,
    };
    let bytes = match parsed {
        Some(mut message) if message.is_object() => {
            let before = message.get("method").cloned();
            answer = rewrite_request(&mut message, revision.as_deref());
            if message.get("method") == before.as_ref() {
                bytes
            } else {
                Bytes::from(serde_json::to_vec(&message).unwrap_or_default())
            }
        }
        _ => bytes,
    };
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
    let catalog = shared.pipeline.catalog();
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

/// What the stdio shim remembers between a request and its response: the answers that need
/// rewriting, by JSON-RPC id.
#[derive(Clone, Default)]
pub(crate) struct Pending(Arc<std::sync::Mutex<std::collections::HashMap<String, Answer>>>);

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Answer>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The stdio client's messages, one JSON line at a time, through [`rewrite_request`].
pub(crate) struct StdioIn<R> {
    inner: R,
    pending: Pending,
    /// Bytes read but not yet a whole line.
    partial: Vec<u8>,
    /// Rewritten bytes not yet handed on.
    ready: Vec<u8>,
    eof: bool,
}

impl<R> StdioIn<R> {
    pub(crate) fn new(inner: R, pending: Pending) -> Self {
        Self {
            inner,
            pending,
            partial: Vec::new(),
            ready: Vec::new(),
            eof: false,
        }
    }

    fn take_lines(&mut self) {
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let parsed = match worth_parsing(&line) {
                true => serde_json::from_slice::<Value>(&line).ok(),
                false => None,
            };
            match parsed {
                Some(mut message) if message.is_object() => {
                    let before = message.get("method").cloned();
                    let answer = rewrite_request(&mut message, None);
                    if answer != Answer::AsIs
                        && let Some(id) = message.get("id")
                    {
                        self.pending.lock().insert(id.to_string(), answer);
                    }
                    if message.get("method") == before.as_ref() {
                        self.ready.extend_from_slice(&line);
                    } else {
                        self.ready
                            .extend_from_slice(&serde_json::to_vec(&message).unwrap_or_default());
                        self.ready.push(b'\n');
                    }
                }
                _ => self.ready.extend_from_slice(&line),
            }
        }
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for StdioIn<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        loop {
            if !self.ready.is_empty() {
                let n = self.ready.len().min(buf.remaining());
                buf.put_slice(&self.ready[..n]);
                self.ready.drain(..n);
                return Poll::Ready(Ok(()));
            }
            if self.eof {
                let rest = std::mem::take(&mut self.partial);
                if rest.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                self.ready = rest;
                continue;
            }
            let mut chunk = [0u8; 8192];
            let mut read = tokio::io::ReadBuf::new(&mut chunk);
            match std::pin::Pin::new(&mut self.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let filled = read.filled().to_vec();
                    if filled.is_empty() {
                        self.eof = true;
                    } else {
                        self.partial.extend_from_slice(&filled);
                        self.take_lines();
                    }
                }
            }
        }
    }
}

/// The server's messages to a stdio client, through [`rewrite_response`] for the ids
/// [`StdioIn`] remembered.
pub(crate) struct StdioOut<W> {
    inner: W,
    pending: Pending,
    shared: Arc<Shared>,
    partial: Vec<u8>,
    out: Vec<u8>,
}

impl<W> StdioOut<W> {
    pub(crate) fn new(inner: W, pending: Pending, shared: Arc<Shared>) -> Self {
        Self {
            inner,
            pending,
            shared,
            partial: Vec::new(),
            out: Vec::new(),
        }
    }

    fn take_lines(&mut self) {
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let waiting = !self.pending.lock().is_empty();
            let answer = waiting
                .then(|| serde_json::from_slice::<Value>(&line).ok())
                .flatten()
                .and_then(|m| {
                    let id = m.get("id")?.to_string();
                    let answer = self.pending.lock().remove(&id)?;
                    Some((m, answer))
                });
            match answer {
                Some((mut message, answer)) => {
                    let catalog = self.shared.pipeline.catalog();
                    rewrite_response(&mut message, answer, |name| {
                        catalog.get(name).map(|t| t.plugin.policy.task)
                    });
                    self.out
                        .extend_from_slice(&serde_json::to_vec(&message).unwrap_or_default());
                    self.out.push(b'\n');
                }
                None => self.out.extend_from_slice(&line),
            }
        }
    }

    fn poll_drain(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>>
    where
        W: tokio::io::AsyncWrite + Unpin,
    {
        use std::task::Poll;
        while !self.out.is_empty() {
            match std::pin::Pin::new(&mut self.inner).poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => {
                    self.out.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for StdioOut<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        use std::task::Poll;
        // Hand earlier bytes on first, so that a slow reader slows the writer down.
        if let Poll::Ready(Err(e)) = self.poll_drain(cx) {
            return Poll::Ready(Err(e));
        }
        if !self.out.is_empty() {
            return Poll::Pending;
        }
        self.partial.extend_from_slice(buf);
        self.take_lines();
        let _ = self.poll_drain(cx);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        match self.poll_drain(cx) {
            Poll::Ready(Ok(())) => std::pin::Pin::new(&mut self.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.out.extend_from_slice(&rest);
        }
        match self.poll_drain(cx) {
            Poll::Ready(Ok(())) => std::pin::Pin::new(&mut self.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_only_2025_task_requests() {
        let mut call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {}, "task": {"ttl": 1000}}});
        rewrite_request(&mut call, Some("2025-11-25"));
        assert_eq!(call["method"], CALL_AS_TASK);
        let mut plain = json!({"method": "tools/call", "params": {"name": "sleep"}});
        rewrite_request(&mut plain, None);
        assert_eq!(plain["method"], "tools/call");
        let mut get = json!({"method": "tasks/get", "params": {"taskId": "t"}});
        rewrite_request(&mut get, Some("2025-11-25"));
        assert_eq!(get["method"], GET);
        let mut modern = json!({"method": "tasks/get", "params": {"taskId": "t",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        rewrite_request(&mut modern, None);
        assert_eq!(modern["method"], "tasks/get");
        let mut by_header = json!({"method": "tasks/cancel", "params": {"taskId": "t"}});
        rewrite_request(&mut by_header, Some("2026-07-28"));
        assert_eq!(by_header["method"], "tasks/cancel");
    }

    #[test]
    fn declares_tasks_to_2025_sessions_and_task_support_per_tool() {
        let mut init = json!({"id": 0, "result": {"protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}}}});
        rewrite_response(&mut init, Answer::Initialize, |_| None);
        assert!(init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object());
        let mut old = json!({"result": {"protocolVersion": "2025-06-18", "capabilities": {}}});
        rewrite_response(&mut old, Answer::Initialize, |_| None);
        assert!(old["result"]["capabilities"].get("tasks").is_none());
        let mut list = json!({"result": {"tools": [{"name": "sleep"}, {"name": "echo"}]}});
        rewrite_response(&mut list, Answer::ToolList, |n| {
            Some(if n == "sleep" {
                TaskSupport::Required
            } else {
                TaskSupport::Never
            })
        });
        assert_eq!(
            list["result"]["tools"][0]["execution"]["taskSupport"],
            "required"
        );
        assert!(list["result"]["tools"][1].get("execution").is_none());
    }
}
