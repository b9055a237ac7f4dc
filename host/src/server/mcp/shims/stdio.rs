//! MCP over stdio: the client closing stdin is how it says it has nothing more to send (the MCP
//! stdio shutdown sequence: close stdin, wait, SIGTERM, wait, SIGKILL). The calls it already sent
//! still run to their end and are answered and recorded (`printf <requests> | toolhost serve
//! --stdio` gets every answer); the client's SIGTERM stops them as any shutdown does. Only then
//! does the transport report the end, with the session's subscriptions ended first, so that the
//! daemon exits at once rather than after rmcp's drain of handlers that never end.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long after stdin ends the calls read last may take to start: rmcp has spawned their
/// handlers, which take their place in the tracker when they first run.
const SETTLE: Duration = Duration::from_millis(50);

/// Reads like `R`; once `R` ends (or fails), reports the end only after the session's `running`
/// calls have finished, then ends the session (`session` cancelled: its subscriptions return).
pub(crate) struct FinishOnEof<R> {
    inner: R,
    session: CancellationToken,
    /// Cancelled the moment `R` ends: the client is leaving (its SIGTERM follows shortly).
    closed: CancellationToken,
    running: TaskTracker,
    /// Set once `R` has ended: resolves when the calls have finished.
    finishing: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl<R> FinishOnEof<R> {
    /// `inner`, for the session whose calls `running` counts and which `session` ends; `closed`
    /// is cancelled when `inner` ends.
    pub(crate) fn new(
        inner: R,
        (session, closed): (CancellationToken, CancellationToken),
        running: TaskTracker,
    ) -> Self {
        Self {
            inner,
            session,
            closed,
            running,
            finishing: None,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for FinishOnEof<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.finishing.is_none() {
            let before = buf.filled().len();
            let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
            let ended = match &polled {
                Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
                Poll::Ready(Err(_)) => true,
                Poll::Pending => false,
            };
            if !ended {
                return polled;
            }
            this.closed.cancel();
            let running = this.running.clone();
            tracing::info!("stdin closed: finishing the calls already received, then exiting");
            this.finishing = Some(Box::pin(async move {
                tokio::time::sleep(SETTLE).await;
                running.close();
                running.wait().await;
            }));
        }
        let finishing = this.finishing.as_mut().expect("set above");
        match finishing.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                this.session.cancel();
                Poll::Ready(Ok(()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn ends_when_the_input_has_ended_and_the_calls_have_finished() {
        let (session, running) = (CancellationToken::new(), TaskTracker::new());
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = FinishOnEof::new(
            server,
            (session.clone(), CancellationToken::new()),
            running.clone(),
        );
        tokio::io::AsyncWriteExt::write_all(&mut client, b"{}\n")
            .await
            .unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(reader.read(&mut buf).await.unwrap(), 3);
        let call = running.token();
        drop(client);
        let read = tokio::time::timeout(SETTLE * 4, reader.read(&mut buf)).await;
        assert!(read.is_err(), "the end was reported while a call ran");
        assert!(!session.is_cancelled());
        drop(call);
        assert_eq!(reader.read(&mut buf).await.unwrap(), 0);
        assert!(session.is_cancelled());
    }
}
