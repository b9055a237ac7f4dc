//! The 2025-11-25 task shim for stdio: the client's lines through [`rewrite_request`] on the way
//! in, and the answers to the ids that need it through [`rewrite_response`] on the way out.

use std::sync::Arc;

use serde_json::Value;

use super::{Answer, rewrite_request, rewrite_response, worth_parsing};
use crate::server::shared::Shared;

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
