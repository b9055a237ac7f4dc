//! A body wrapper that enforces a size cap and a deadline while bytes flow, for request bodies (written
//! by the guest) and response bodies (read by the guest). Must not decide the limits: the plan does.
//!
//! A cut body ends with the matching `wasi:http` error ([`NetError::code`]). A cut response body
//! reaches the guest only through its stream, so it is logged here, naming the plugin; a cut request
//! body fails the exchange, which the hook logs.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::Error as HttpError;

use super::refusal::{NetError, Reporter};

/// Which way a guarded body flows, for the error it ends with.
#[derive(Debug, Clone, Copy)]
pub(super) enum Direction {
    /// The guest's request body.
    Request,
    /// The server's response body.
    Response,
}

/// Ends the body with an error once more than `limit` bytes passed or the deadline is reached.
pub(super) struct Guarded<B> {
    inner: B,
    direction: Direction,
    reporter: Reporter,
    target: String,
    limit: u64,
    seen: u64,
    deadline: Option<(Pin<Box<Sleep>>, Duration)>,
    ended: bool,
}

impl<B> Guarded<B> {
    /// Cap `inner` at `limit` bytes; `deadline` (with the timeout it stands for, for the message) ends
    /// it when reached. A cut response is reported to `reporter`, naming `target`.
    pub(super) fn new(
        inner: B,
        direction: Direction,
        reporter: Reporter,
        target: String,
        limit: u64,
        deadline: Option<(Instant, Duration)>,
    ) -> Self {
        Self {
            inner,
            direction,
            reporter,
            target,
            limit,
            seen: 0,
            deadline: deadline.map(|(at, t)| (Box::pin(tokio::time::sleep_until(at)), t)),
            ended: false,
        }
    }

    fn fail(&mut self, e: NetError) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        self.ended = true;
        let code = match self.direction {
            Direction::Request => e.code(),
            Direction::Response => self.reporter.report(e),
        };
        Poll::Ready(Some(Err(code)))
    }
}

impl<B> Body for Guarded<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<HttpError>,
{
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        if let Some((sleep, timeout)) = &mut this.deadline
            && sleep.as_mut().poll(cx).is_ready()
        {
            let e = NetError::Timeout {
                target: this.target.clone(),
                ms: timeout.as_millis() as u64,
            };
            return this.fail(e);
        }
        match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            None => {
                this.ended = true;
                Poll::Ready(None)
            }
            Some(Err(e)) => {
                this.ended = true;
                Poll::Ready(Some(Err(e.into())))
            }
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    this.seen += data.len() as u64;
                    if this.seen > this.limit {
                        let e = match this.direction {
                            Direction::Request => NetError::RequestTooLarge {
                                declared: None,
                                limit: this.limit,
                            },
                            Direction::Response => NetError::ResponseTooLarge {
                                target: this.target.clone(),
                                declared: None,
                                limit: this.limit,
                            },
                        };
                        return this.fail(e);
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
