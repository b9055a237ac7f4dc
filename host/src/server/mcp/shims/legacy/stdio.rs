//! The 2025-11-25 task shim for stdio: the client's lines through [`rewrite_request`] on the way
//! in, and the answers to the ids that need it through [`rewrite_response`] on the way out.

use std::sync::Arc;

use serde_json::Value;

use super::wire::{Answer, Incoming, incoming, rewrite_response};
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
    /// Where reads land: zeroed once here rather than on every read.
    chunk: Box<[u8]>,
    eof: bool,
}

/// How much one read of stdin takes at most.
const CHUNK: usize = 8192;

impl<R> StdioIn<R> {
    pub(crate) fn new(inner: R, pending: Pending) -> Self {
        Self {
            inner,
            pending,
            partial: Vec::new(),
            ready: Vec::new(),
            chunk: vec![0; CHUNK].into_boxed_slice(),
            eof: false,
        }
    }

    /// Moves every whole line of `partial` to `ready`, rewritten where it needs to be.
    fn take_lines(&mut self) {
        let Some(last) = memchr::memrchr(b'\n', &self.partial) else {
            return;
        };
        for line in lines(&self.partial[..=last]) {
            let Incoming {
                answer,
                id,
                renamed,
            } = incoming(line, None);
            if let Some(id) = id {
                self.pending.lock().insert(id, answer);
            }
            match renamed {
                Some(text) => {
                    self.ready.extend_from_slice(&text);
                    self.ready.push(b'\n');
                }
                None => self.ready.extend_from_slice(line),
            }
        }
        self.partial.drain(..=last);
    }
}

/// The lines of `bytes`, each with its `\n`; `bytes` ends with one.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', bytes).map(move |end| {
        let line = &bytes[start..=end];
        start = end + 1;
        line
    })
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for StdioIn<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        let this = &mut *self;
        loop {
            if !this.ready.is_empty() {
                let n = this.ready.len().min(buf.remaining());
                buf.put_slice(&this.ready[..n]);
                this.ready.drain(..n);
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                let rest = std::mem::take(&mut this.partial);
                if rest.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                this.ready = rest;
                continue;
            }
            let mut read = tokio::io::ReadBuf::new(&mut this.chunk);
            match std::pin::Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    if n == 0 {
                        this.eof = true;
                    } else {
                        this.partial.extend_from_slice(&this.chunk[..n]);
                        this.take_lines();
                        // A line longer than the transport takes is passed on as it comes rather
                        // than held whole: the transport drops it, and nothing here grows without
                        // end (no message that long needs rewriting).
                        if this.partial.len() > crate::server::mcp::MAX_LINE {
                            this.ready.append(&mut this.partial);
                        }
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

    /// Moves every whole line of `partial` to `out`, amended where its request asked for it.
    fn take_lines(&mut self) {
        let Some(last) = memchr::memrchr(b'\n', &self.partial) else {
            return;
        };
        for line in lines(&self.partial[..=last]) {
            let waiting = !self.pending.lock().is_empty();
            let answer = waiting
                .then(|| serde_json::from_slice::<Value>(line).ok())
                .flatten()
                .and_then(|m| {
                    let id = m.get("id")?.to_string();
                    let answer = self.pending.lock().remove(&id)?;
                    Some((m, answer))
                });
            match answer {
                Some((mut message, answer)) => {
                    let catalog = self.shared.services.registry.catalog();
                    rewrite_response(&mut message, answer, |name| {
                        catalog.get(name).map(|t| t.plugin.policy.task)
                    });
                    self.out
                        .extend_from_slice(&serde_json::to_vec(&message).unwrap_or_default());
                    self.out.push(b'\n');
                }
                None => self.out.extend_from_slice(line),
            }
        }
        self.partial.drain(..=last);
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
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

    use super::*;
    use crate::server::mcp::legacy::wire::CALL_AS_TASK;

    /// A reader that hands its bytes out in the pieces it was given.
    struct Pieces(VecDeque<Vec<u8>>);

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if let Some(mut piece) = self.0.pop_front() {
                let n = piece.len().min(buf.remaining());
                buf.put_slice(&piece[..n]);
                if n < piece.len() {
                    self.0.push_front(piece.split_off(n));
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn lines_pass_whole_and_task_calls_are_renamed_wherever_the_reads_split_them() {
        let plain = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"task: tools/list"}}}"#;
        let task = r#"{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"sleep","task":{"ttl":10}}}"#;
        let junk = "not json, but it says initialize";
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
        let input = format!("{plain}\n{task}\n{junk}\n{init}\n{plain}");
        for split in 0..=input.len() {
            let (a, b) = input.as_bytes().split_at(split);
            let pending = Pending::default();
            // An empty read is the end of the input, so an empty piece is left out.
            let pieces = [a, b].into_iter().filter(|p| !p.is_empty());
            let mut reader = StdioIn::new(
                Pieces(pieces.map(<[u8]>::to_vec).collect()),
                pending.clone(),
            );
            let mut out = String::new();
            reader.read_to_string(&mut out).await.unwrap();
            let lines: Vec<&str> = out.split('\n').collect();
            assert_eq!(lines.len(), 5, "split at {split}: {out}");
            assert_eq!(lines[0], plain);
            let renamed: Value = serde_json::from_str(lines[1]).unwrap();
            assert_eq!(renamed["method"], CALL_AS_TASK, "split at {split}");
            assert_eq!(renamed["params"]["task"]["ttl"], 10);
            assert_eq!(lines[2], junk);
            assert_eq!(lines[3], init);
            // The last line has no newline: it is handed on as it is when the input ends.
            assert_eq!(lines[4], plain);
            // Only the initialize result will need amending.
            assert_eq!(
                pending.lock().keys().collect::<Vec<_>>(),
                ["0"],
                "split at {split}"
            );
        }
    }
}

#[cfg(test)]
mod bounds {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, ReadBuf};

    use super::*;

    /// Newline-free bytes without end, as a client that never ends its line sends them.
    struct Endless;

    impl AsyncRead for Endless {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = buf.remaining();
            buf.put_slice(&vec![b'a'; n]);
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_line_that_never_ends_is_not_held_whole() {
        let mut reader = StdioIn::new(Endless, Pending::default());
        let mut buf = vec![0; 64 << 10];
        let mut passed = 0usize;
        // Read well past the longest line the transport takes: bytes must keep coming out, and
        // what is held back stays bounded.
        while passed < 3 * crate::server::mcp::MAX_LINE {
            let n = tokio::io::AsyncReadExt::read(&mut reader, &mut buf)
                .await
                .unwrap();
            assert!(n > 0);
            passed += n;
            assert!(
                reader.partial.len() <= crate::server::mcp::MAX_LINE + CHUNK,
                "{} bytes held back",
                reader.partial.len()
            );
        }
    }
}
