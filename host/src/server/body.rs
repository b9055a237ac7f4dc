//! Request bodies, read under deadlines on every route. hyper bounds the time to send a request head
//! (`server.read-timeout-ms`) but not the body: without this, a client that sends `Content-Length:
//! 100000` and then a byte a second holds its connection slot, a task and the handler forever, and a
//! few of them starve everyone else. Here a body must arrive whole within the read timeout, and must
//! never stall for longer than [`IDLE`] between two chunks; otherwise the request is answered 408 and
//! the connection closed. Bodies over the size limit are answered 413. The handlers then read a
//! body that is already in memory.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body::Body as _;
use http_body_util::BodyExt;
use tokio::time::Instant;

/// The longest a body may stall between two chunks, whatever the total deadline.
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
}

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// The whole body did not arrive in time.
    Total(Duration),
    /// The client stopped sending mid-body.
    Idle(Duration),
    /// The body is larger than the limit.
    TooLarge(usize),
    /// The connection failed mid-body.
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

/// Read `body` whole, chunk by chunk, under `limits`.
pub(crate) async fn read(body: Body, limits: BodyDeadlines) -> Result<Bytes, BodyError> {
    let deadline = Instant::now() + limits.total;
    let mut body = body;
    let mut buf = Vec::new();
    loop {
        let idle = Instant::now() + limits.idle;
        let frame = tokio::select! {
            biased;
            frame = body.frame() => frame,
            () = tokio::time::sleep_until(deadline.min(idle)) => {
                return Err(if deadline <= idle {
                    BodyError::Total(limits.total)
                } else {
                    BodyError::Idle(limits.idle)
                });
            }
        };
        let Some(frame) = frame else {
            return Ok(Bytes::from(buf));
        };
        let frame = frame.map_err(|e| BodyError::Broken(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limits.max_bytes {
                return Err(BodyError::TooLarge(limits.max_bytes));
            }
            buf.extend_from_slice(&data);
        }
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
