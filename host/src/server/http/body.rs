//! Request bodies, read under deadlines on every route. hyper bounds the time to send a request head
//! (`server.read-timeout-ms`) but not the body: without this, a client that sends `Content-Length:
//! 100000` and then a byte a second holds its connection slot, a task and the handler forever, and a
//! few of them starve everyone else. Here a body must arrive whole within the read timeout, and must
//! never stall for longer than [`IDLE`] between two chunks; otherwise the request is answered 408 and
//! the connection closed. Bodies over the size limit are answered 413. The handlers then read a
//! body that is already in memory.
//!
//! One kind of body is not read whole: an event stream (`Content-Type: text/event-stream` or
//! `application/x-ndjson`) sent to a route that reads one as it arrives ([`STREAMED_ROUTES`]:
//! `POST /v1/tool-calls` starts each call as its arguments complete). It is handed on as it comes,
//! under the same size limit, the read timeout between two chunks and the request timeout as its
//! total; the stream ends with an error when one passes, so a handler that reads it can never be
//! held longer than that. Any other route gets every body whole, under the strict deadlines.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::Stream;
use http_body::Body as _;
use http_body_util::BodyExt;
use tokio::time::Instant;
use toolhost_wire::batch::stream::Framing;

/// The routes that read an event-stream body as it arrives.
const STREAMED_ROUTES: [&str; 1] = ["/v1/tool-calls"];

/// The longest a whole body may stall between two chunks, whatever the total deadline (an event
/// stream's limit is the read timeout).
pub(crate) const IDLE: Duration = Duration::from_secs(10);

/// How much of a request body is read, and for how long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyDeadlines {
    /// Largest body, in bytes.
    pub(crate) max_bytes: usize,
    /// The whole body must arrive within this.
    pub(crate) total: Duration,
    /// No chunk may take longer than this to follow the previous one.
    pub(crate) idle: Duration,
    /// The whole of an event-stream body must arrive within this (the request timeout).
    pub(crate) stream_total: Duration,
    /// No event-stream chunk may take longer than this to follow the previous one (the read timeout:
    /// a model may think for a while between two events).
    pub(crate) stream_idle: Duration,
}

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    /// The whole body did not arrive in time.
    #[error("the request body did not arrive within {} ms", .0.as_millis())]
    Total(Duration),
    /// The client stopped sending mid-body.
    #[error("the request body stalled: nothing arrived for {} ms", .0.as_millis())]
    Idle(Duration),
    /// The body is larger than the limit.
    #[error("the request body exceeds {0} bytes (server.max-body-kb)")]
    TooLarge(usize),
    /// The connection failed mid-body.
    #[error("the request body broke off: {0}")]
    Broken(String),
}

impl BodyError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            Self::Total(t) => (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} ms (server.read-timeout-ms)",
                    t.as_millis()
                ),
            ),
            Self::Idle(t) => (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body stalled: nothing arrived for {} ms",
                    t.as_millis()
                ),
            ),
            Self::TooLarge(limit) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body exceeds {limit} bytes (server.max-body-kb)"),
            ),
            Self::Broken(e) => (
                StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {e}"),
            ),
        };
        let mut response = super::reply::error(status, message);
        // The rest of the body is never read: the connection cannot carry another request.
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }
}

/// A body read chunk by chunk, under a total deadline, an idle deadline and a size limit.
struct Paced {
    body: Body,
    deadline: Instant,
    total: Duration,
    idle: Duration,
    max_bytes: usize,
    read: usize,
}

impl Paced {
    fn new(body: Body, total: Duration, idle: Duration, max_bytes: usize) -> Self {
        Self {
            body,
            deadline: Instant::now() + total,
            total,
            idle,
            max_bytes,
            read: 0,
        }
    }

    /// The next chunk of data, `None` at the end.
    async fn next(&mut self) -> Result<Option<Bytes>, BodyError> {
        loop {
            let idle = Instant::now() + self.idle;
            let frame = tokio::select! {
                biased;
                frame = self.body.frame() => frame,
                () = tokio::time::sleep_until(self.deadline.min(idle)) => {
                    return Err(if self.deadline <= idle {
                        BodyError::Total(self.total)
                    } else {
                        BodyError::Idle(self.idle)
                    });
                }
            };
            let Some(frame) = frame else {
                return Ok(None);
            };
            let frame = frame.map_err(|e| BodyError::Broken(e.to_string()))?;
            if let Ok(data) = frame.into_data() {
                self.read += data.len();
                if self.read > self.max_bytes {
                    return Err(BodyError::TooLarge(self.max_bytes));
                }
                return Ok(Some(data));
            }
        }
    }
}

/// Read `body` whole, chunk by chunk, under `limits`.
pub(crate) async fn read(body: Body, limits: BodyDeadlines) -> Result<Bytes, BodyError> {
    let mut paced = Paced::new(body, limits.total, limits.idle, limits.max_bytes);
    let mut buf = Vec::new();
    while let Some(data) = paced.next().await? {
        buf.extend_from_slice(&data);
    }
    Ok(Bytes::from(buf))
}

/// `body` as it arrives, under the event-stream limits: the stream ends with the error when one
/// passes, and nothing follows an error.
pub(crate) fn chunks(
    body: Body,
    limits: BodyDeadlines,
) -> impl Stream<Item = Result<Bytes, BodyError>> + Send + 'static {
    let paced = Paced::new(
        body,
        limits.stream_total,
        limits.stream_idle,
        limits.max_bytes,
    );
    futures_util::stream::unfold(Some(paced), |paced| async move {
        let mut paced = paced?;
        match paced.next().await {
            Ok(Some(data)) => Some((Ok(data), Some(paced))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    })
}

/// How a request's body is framed when it is an event stream (SSE or NDJSON) to be read as it
/// arrives; `None` for any other body.
pub(crate) fn event_stream_framing(headers: &HeaderMap) -> Option<Framing> {
    let media = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let media = media.split(';').next()?.trim().to_ascii_lowercase();
    match media.as_str() {
        "text/event-stream" => Some(Framing::Sse),
        "application/x-ndjson" => Some(Framing::Ndjson),
        _ => None,
    }
}

/// Middleware for every route: the body is read here under the deadlines, and handed on in memory.
pub(crate) async fn bounded(
    State(limits): State<BodyDeadlines>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    if body.is_end_stream() {
        return next.run(Request::from_parts(parts, body)).await;
    }
    if event_stream_framing(&parts.headers).is_some() && STREAMED_ROUTES.contains(&parts.uri.path())
    {
        let body = Body::from_stream(chunks(body, limits));
        return next.run(Request::from_parts(parts, body)).await;
    }
    match read(body, limits).await {
        Ok(bytes) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total_ms: u64, idle_ms: u64) -> BodyDeadlines {
        BodyDeadlines {
            max_bytes: 16,
            total: Duration::from_millis(total_ms),
            idle: Duration::from_millis(idle_ms),
            stream_total: Duration::from_millis(total_ms),
            stream_idle: Duration::from_millis(idle_ms),
        }
    }

    /// A body fed by a channel.
    struct Trickle(tokio::sync::mpsc::Receiver<Bytes>);

    impl http_body::Body for Trickle {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
            self.0
                .poll_recv(cx)
                .map(|b| b.map(|b| Ok(http_body::Frame::data(b))))
        }
    }

    /// A body that yields `chunks` bytes, one every `gap`.
    fn trickle(chunks: usize, gap: Duration) -> Body {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tokio::spawn(async move {
            for _ in 0..chunks {
                tokio::time::sleep(gap).await;
                if tx.send(Bytes::from_static(b"a")).await.is_err() {
                    return;
                }
            }
        });
        Body::new(Trickle(rx))
    }

    #[tokio::test]
    async fn reads_a_body_that_arrives_in_time() {
        let body = trickle(3, Duration::from_millis(10));
        assert_eq!(read(body, limits(2000, 1000)).await.unwrap(), "aaa");
    }

    #[tokio::test]
    async fn cuts_off_a_trickle_at_the_total_deadline() {
        let started = std::time::Instant::now();
        let body = trickle(1000, Duration::from_millis(20));
        assert_eq!(
            read(body, limits(300, 1000)).await.unwrap_err(),
            BodyError::Total(Duration::from_millis(300))
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn an_event_stream_ends_with_the_error_its_limits_give() {
        use futures_util::StreamExt;
        // Chunks as they come, then the size limit (16 bytes), then nothing more.
        let items: Vec<_> = chunks(trickle(20, Duration::from_millis(1)), limits(5000, 1000))
            .collect()
            .await;
        assert_eq!(items.len(), 17);
        assert!(items[..16].iter().all(Result::is_ok));
        assert_eq!(items[16], Err(BodyError::TooLarge(16)));
        // A stream that stalls ends at the idle deadline.
        let items: Vec<_> = chunks(trickle(3, Duration::from_millis(400)), limits(5000, 100))
            .collect()
            .await;
        assert_eq!(items, [Err(BodyError::Idle(Duration::from_millis(100)))]);
    }

    #[tokio::test]
    async fn cuts_off_a_stalled_body_at_the_idle_deadline() {
        let body = trickle(2, Duration::from_millis(500));
        assert_eq!(
            read(body, limits(5000, 100)).await.unwrap_err(),
            BodyError::Idle(Duration::from_millis(100))
        );
    }

    #[tokio::test]
    async fn refuses_a_body_over_the_limit() {
        let body = Body::from(vec![b'x'; 17]);
        assert_eq!(
            read(body, limits(1000, 1000)).await.unwrap_err(),
            BodyError::TooLarge(16)
        );
    }
}
