//! Streamable HTTP as each protocol revision defines it, around rmcp's service at `/mcp`:
//!
//! - SSE priming events (an event with an empty `data:`, an `id` and a `retry`) exist only from
//!   2025-11-25 on; earlier clients parse every `data:` as a JSON-RPC message and fail on them. They
//!   are removed from the streams of clients that negotiated an earlier revision: the
//!   `MCP-Protocol-Version` header says which (a client without it is of 2025-03-26, as the
//!   2025-06-18 revision prescribes), and an `initialize` request says which it asks for.
//! - `DELETE /mcp` ends a live session with 204, and its running calls with it (rmcp would let
//!   them run on for seconds), and answers 404 for a session that does not exist or has ended
//!   (rmcp answers 202 to both).
//!
//! It changes nothing else: every other request and response passes through untouched.

use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll, ready};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Json, Response};
use bytes::{Bytes, BytesMut};
use http_body::Frame;
use memchr::memmem::{Finder, FinderRev};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};

use super::sessions::SessionCalls;

/// The first revision that defines priming events.
const PRIMING_SINCE: &str = "2025-11-25";
/// The revision of a client that sends no `MCP-Protocol-Version` header.
const WITHOUT_HEADER: &str = "2025-03-26";
/// The most of a request body read to find an `initialize`'s `protocolVersion`; larger bodies are
/// not initialize requests.
const INITIALIZE_MAX: usize = 64 << 10;

/// The sessions of `/mcp`: rmcp's, and the calls each runs.
#[derive(Clone)]
pub(crate) struct Sessions {
    pub(crate) manager: Arc<LocalSessionManager>,
    pub(crate) calls: Arc<SessionCalls>,
}

/// The middleware: see the module documentation.
pub(crate) async fn revisions(
    State(sessions): State<Sessions>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == Method::DELETE {
        return delete(&sessions, request, next).await;
    }
    let (request, revision) = revision(request).await;
    let response = next.run(request).await;
    let is_sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse || revision.as_str() >= PRIMING_SINCE {
        return response;
    }
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::new(WithoutPriming::new(body)))
}

async fn delete(sessions: &Sessions, request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // Taken before rmcp drops it: the session's end is awaited through it.
    let live = match &id {
        Some(id) => Some(
            sessions
                .manager
                .sessions
                .read()
                .await
                .get(id.as_str())
                .cloned(),
        ),
        None => None,
    };
    if let Some(None) = live {
        let error = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": -32001, "message": "Session not found: it does not exist or has ended" },
        });
        return (StatusCode::NOT_FOUND, Json(error)).into_response();
    }
    let response = next.run(request).await;
    if response.status() == StatusCode::ACCEPTED {
        if let (Some(id), Some(Some(handle))) = (&id, live) {
            sessions.calls.end(id, &handle).await;
        }
        return StatusCode::NO_CONTENT.into_response();
    }
    response
}

/// The revision the client speaks: its header, else the one its `initialize` asks for, else 2025-03-26.
async fn revision(request: Request) -> (Request, String) {
    if let Some(v) = header_revision(request.headers()) {
        return (request, v);
    }
    // Only a JSON body already read whole (by the JSON-RPC error layer outside this one) and small
    // enough for an initialize is looked into: reading it again does not wait on the client.
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    let small = http_body::Body::size_hint(request.body())
        .upper()
        .is_some_and(|n| n <= INITIALIZE_MAX as u64);
    if request.method() != Method::POST || !json || !small {
        return (request, WITHOUT_HEADER.to_owned());
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, INITIALIZE_MAX).await else {
        return (
            Request::from_parts(parts, Body::empty()),
            WITHOUT_HEADER.to_owned(),
        );
    };
    // Every request of a client that sends no header comes here, so a body that cannot be an
    // `initialize` is not parsed (as `legacy::wire` looks before it parses); one that spells its
    // method with escapes is taken as 2025-03-26, which changes only its own answer's framing.
    let asked = memchr::memmem::find(&bytes, b"initialize")
        .and_then(|_| serde_json::from_slice::<Value>(&bytes).ok())
        .filter(|m| m["method"] == "initialize")
        .and_then(|m| m["params"]["protocolVersion"].as_str().map(str::to_owned));
    (
        Request::from_parts(parts, Body::from(bytes)),
        asked.unwrap_or_else(|| WITHOUT_HEADER.to_owned()),
    )
}

fn header_revision(headers: &HeaderMap) -> Option<String> {
    headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
}

/// An SSE body without its priming events. Events are cut at blank lines (`\n\n`, as rmcp writes
/// them); a partial event waits for the rest.
struct WithoutPriming {
    inner: Body,
    pending: BytesMut,
    done: bool,
}

impl WithoutPriming {
    fn new(inner: Body) -> Self {
        Self {
            inner,
            pending: BytesMut::new(),
            done: false,
        }
    }

    /// The complete events buffered so far, priming events left out; `None` when there are none.
    fn complete_events(&mut self) -> Option<Bytes> {
        let end = LAST_BLANK_LINE.rfind(&self.pending)? + 2;
        without_priming(self.pending.split_to(end).freeze())
    }
}

/// Where an event ends, found with searchers built once: `memmem::find` builds one per search.
static BLANK_LINE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\n\n"));
static LAST_BLANK_LINE: LazyLock<FinderRev<'static>> = LazyLock::new(|| FinderRev::new(b"\n\n"));

/// Whole `events` without their priming events: the same bytes, not a copy, when there are none
/// (as in nearly every response); `None` when nothing is left.
fn without_priming(events: Bytes) -> Option<Bytes> {
    if !self::events(&events).any(is_priming) {
        return Some(events);
    }
    let kept = strip_priming(&events);
    (!kept.is_empty()).then(|| Bytes::from(kept))
}

/// `events` (whole events, each ending in a blank line) without those whose `data` is empty.
fn strip_priming(stream: &[u8]) -> Vec<u8> {
    let mut kept = Vec::with_capacity(stream.len());
    for event in events(stream) {
        if !is_priming(event) {
            kept.extend_from_slice(event);
        }
    }
    kept
}

/// An event with at least one `data` field, all of them empty: a priming event (or nothing a
/// pre-2025-11-25 client can parse). Comments (keep-alives) have no `data` and stay.
///
/// A `data` line with content answers at once, before its end is looked for: that line is the
/// message, the longest of the event.
fn is_priming(event: &[u8]) -> bool {
    let mut data = false;
    let mut rest = event;
    while !rest.is_empty() {
        if let Some(d) = rest.strip_prefix(b"data:") {
            let d = d.strip_prefix(b" ").unwrap_or(d);
            // Empty up to the line's end: `\n`, `\r\n`, or the event's end (with a lone `\r`).
            let empty =
                d.is_empty() || d == b"\r" || d.starts_with(b"\n") || d.starts_with(b"\r\n");
            if !empty {
                return false;
            }
            data = true;
        }
        rest = memchr::memchr(b'\n', rest).map_or(&[][..], |at| &rest[at + 1..]);
    }
    data
}

/// `bytes` cut after each `\n\n` (the last piece may lack it).
fn events(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = BLANK_LINE.find(rest).map_or(rest.len(), |at| at + 2);
        let (event, after) = rest.split_at(end);
        rest = after;
        Some(event)
    })
}

impl http_body::Body for WithoutPriming {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        loop {
            if let Some(events) = self.complete_events() {
                return Poll::Ready(Some(Ok(Frame::data(events))));
            }
            if self.done {
                let rest = self.pending.split().freeze();
                return Poll::Ready((!rest.is_empty()).then(|| Ok(Frame::data(rest))));
            }
            match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    // Whole events with nothing buffered before them pass without a copy.
                    Ok(data) if self.pending.is_empty() && data.ends_with(b"\n\n") => {
                        if let Some(kept) = without_priming(data) {
                            return Poll::Ready(Some(Ok(Frame::data(kept))));
                        }
                    }
                    Ok(data) => self.pending.extend_from_slice(&data),
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => self.done = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[test]
    fn priming_is_told_as_reading_line_by_line_tells_it() {
        // The plain rule: split at `\n`, drop one `\r` at a line's end, look at every `data` line.
        fn by_lines(event: &[u8]) -> bool {
            let mut data = false;
            for line in event.split(|&b| b == b'\n') {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if let Some(d) = line.strip_prefix(b"data:") {
                    if !d.strip_prefix(b" ").unwrap_or(d).is_empty() {
                        return false;
                    }
                    data = true;
                }
            }
            data
        }
        const PIECES: [&[u8]; 10] = [
            b"data:",
            b"data: ",
            b"event: message",
            b"id: 1",
            b"x",
            b" ",
            b"\r",
            b"\n",
            b"\r\n",
            b": c",
        ];
        // Every sequence of up to five pieces.
        let mut events: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..5 {
            let longer: Vec<Vec<u8>> = events
                .iter()
                .flat_map(|e| PIECES.iter().map(move |p| [e.as_slice(), p].concat()))
                .collect();
            for event in &longer {
                assert_eq!(
                    is_priming(event),
                    by_lines(event),
                    "{:?}",
                    String::from_utf8_lossy(event)
                );
            }
            events = longer;
        }
    }

    #[test]
    fn strips_priming_events_and_keeps_messages_and_comments() {
        let stream =
            b"id: 0\nretry: 3000\ndata:\n\n: keep-alive\n\ndata: {\"jsonrpc\":\"2.0\"}\nid: 1\n\n\
              data: \nid: 2\n\ndata:\ndata: x\n\n";
        let kept = String::from_utf8(strip_priming(stream)).unwrap();
        // `data: ` alone primes too; an event with one empty and one full `data` line is a message.
        assert_eq!(
            kept,
            ": keep-alive\n\ndata: {\"jsonrpc\":\"2.0\"}\nid: 1\n\ndata:\ndata: x\n\n"
        );
    }

    /// A body that yields `chunks` one frame each.
    struct Chunks(std::collections::VecDeque<&'static [u8]>);

    impl http_body::Body for Chunks {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(
                self.0
                    .pop_front()
                    .map(|c| Ok(Frame::data(Bytes::from_static(c)))),
            )
        }
    }

    /// What `WithoutPriming` lets through of `chunks`.
    async fn passed(chunks: Chunks) -> Bytes {
        WithoutPriming::new(Body::new(chunks))
            .collect()
            .await
            .unwrap()
            .to_bytes()
    }

    #[tokio::test]
    async fn strips_a_priming_event_split_across_chunks() {
        let chunks = Chunks(
            [
                &b"id: 0\nret"[..],
                b"ry: 3000\ndata:\n\ndata: {\"a\":1}\n",
                b"\n",
            ]
            .into(),
        );
        let out = passed(chunks).await;
        assert_eq!(&out[..], b"data: {\"a\":1}\n\n");
    }

    #[tokio::test]
    async fn whole_events_in_a_chunk_pass_or_lose_their_priming() {
        // Each chunk ends on an event's end, so each takes the path without a buffer.
        let chunks = Chunks(
            [
                &b"id: 0\nretry: 3000\ndata:\n\n"[..],
                b"data: {\"a\":1}\n\n",
                b": keep-alive\n\ndata: \n\ndata: {\"b\":2}\n\n",
                b"data: {\"c\"",
                b":3}\n\n",
            ]
            .into(),
        );
        let out = passed(chunks).await;
        assert_eq!(
            &out[..],
            b"data: {\"a\":1}\n\n: keep-alive\n\ndata: {\"b\":2}\n\ndata: {\"c\":3}\n\n"
        );
    }

    #[test]
    fn revisions_compare_as_dates() {
        assert!("2025-06-18" < PRIMING_SINCE && WITHOUT_HEADER < PRIMING_SINCE);
        assert!("2026-07-28" >= PRIMING_SINCE);
    }
}
