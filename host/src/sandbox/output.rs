//! Capped in-memory stdout/stderr for guests: keeps the first bytes, counts the rest, never fails a write.
//!
//! wasmtime-wasi's `MemoryOutputPipe` closes the stream when full, which makes a Rust guest's `println!`
//! panic; a flood of output must instead be cut quietly and reported.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi_io::bytes::Bytes;
use wasmtime_wasi_io::poll::Pollable;
use wasmtime_wasi_io::streams::{OutputStream, StreamResult};

/// A guest output stream that keeps at most `cap` bytes.
#[derive(Clone)]
pub(crate) struct CappedOutput {
    inner: Arc<Mutex<Captured>>,
}

#[derive(Default)]
struct Captured {
    cap: usize,
    kept: Vec<u8>,
    dropped: u64,
}

impl CappedOutput {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Captured {
                cap,
                ..Captured::default()
            })),
        }
    }

    fn push(&self, bytes: &[u8]) {
        let mut c = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let room = c.cap.saturating_sub(c.kept.len());
        let take = room.min(bytes.len());
        c.kept.extend_from_slice(&bytes[..take]);
        c.dropped += (bytes.len() - take) as u64;
    }

    /// The kept text (lossy UTF-8) and the number of bytes dropped past the cap.
    pub(crate) fn take(&self) -> (String, u64) {
        let mut c = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = std::mem::take(&mut c.kept);
        (String::from_utf8_lossy(&kept).into_owned(), c.dropped)
    }
}

impl IsTerminal for CappedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }
    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }
    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

impl AsyncWrite for CappedOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_bytes_and_counts_the_rest() {
        let out = CappedOutput::new(5);
        out.push(b"hello world");
        out.push(b"!");
        assert_eq!(out.take(), ("hello".to_string(), 7));
    }
}
