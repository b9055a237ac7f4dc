//! MCP over stdio: the client closing stdin is how it says it is gone (the MCP stdio shutdown
//! sequence: close stdin, wait, SIGTERM, wait, SIGKILL). The calls it started are cancelled the
//! moment stdin ends, not after rmcp's drain, so that each is recorded as cancelled and the daemon
//! exits well before the client's SIGTERM.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// Reads like `R`, and cancels `on_eof` once `R` ends (or fails).
pub(crate) struct CancelOnEof<R> {
    inner: R,
    on_eof: CancellationToken,
}

impl<R> CancelOnEof<R> {
    /// `inner`, cancelling `on_eof` when it is exhausted.
    pub(crate) fn new(inner: R, on_eof: CancellationToken) -> Self {
        Self { inner, on_eof }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CancelOnEof<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &polled {
            Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended && !self.on_eof.is_cancelled() {
            tracing::info!("stdin closed: cancelling the calls of the stdio session");
            self.on_eof.cancel();
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn cancels_when_the_input_ends_and_not_before() {
        let token = CancellationToken::new();
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = CancelOnEof::new(server, token.clone());
        tokio::io::AsyncWriteExt::write_all(&mut client, b"{}\n")
            .await
            .unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(reader.read(&mut buf).await.unwrap(), 3);
        assert!(!token.is_cancelled());
        drop(client);
        assert_eq!(reader.read(&mut buf).await.unwrap(), 0);
        assert!(token.is_cancelled());
    }
}
