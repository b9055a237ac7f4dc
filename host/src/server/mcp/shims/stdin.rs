//! The standard streams MCP runs on under `serve --stdio`. Pipes, as most clients launch a
//! server, are rmcp's non-blocking ones. Anything else (a Unix socket, as some clients pass, a
//! file, a terminal) rmcp reads through tokio's stdin, whose read blocks a thread of the runtime's
//! pool until a byte arrives: at exit the runtime waits for that read, up to its whole exit grace
//! (2 s) whenever the client keeps its end open after SIGTERM. Such a stdin is read on a thread of
//! its own instead, which the process's exit does not wait for.

use std::io::{self, Read};
use std::os::fd::AsFd;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

/// The most read from stdin at once.
const CHUNK: usize = 64 << 10;
/// Chunks read ahead of the session: a little, so that a client cannot fill the daemon's memory
/// faster than it handles requests.
const AHEAD: usize = 4;

/// stdin and stdout for MCP: see the module documentation.
pub(crate) fn streams() -> (
    Box<dyn AsyncRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
) {
    if is_fifo(&io::stdin()) && is_fifo(&io::stdout()) {
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        return (Box::new(stdin), Box::new(stdout));
    }
    match ReadThread::spawn(io::stdin()) {
        Ok(stdin) => (Box::new(stdin), Box::new(tokio::io::stdout())),
        Err(e) => {
            tracing::warn!("cannot start the stdin thread, reading stdin on the runtime: {e}");
            (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
        }
    }
}

fn is_fifo(stream: &impl AsFd) -> bool {
    use std::os::unix::fs::FileTypeExt;
    stream
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|file| file.metadata())
        .is_ok_and(|m| m.file_type().is_fifo())
}

/// An [`AsyncRead`] over a blocking reader that a thread of its own reads.
pub(crate) struct ReadThread {
    chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    at: usize,
}

impl ReadThread {
    /// Read `source` on a new thread until it ends or fails.
    pub(crate) fn spawn(mut source: impl Read + Send + 'static) -> io::Result<Self> {
        let (tx, chunks) = mpsc::channel(AHEAD);
        std::thread::Builder::new()
            .name("stdin".into())
            .spawn(move || {
                let mut buf = vec![0; CHUNK];
                loop {
                    let chunk = match source.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => Ok(buf[..n].to_vec()),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => Err(e),
                    };
                    let failed = chunk.is_err();
                    // The session has ended (its reader dropped), or the input has.
                    if tx.blocking_send(chunk).is_err() || failed {
                        return;
                    }
                }
            })?;
        Ok(Self {
            chunks,
            chunk: Vec::new(),
            at: 0,
        })
    }
}

impl AsyncRead for ReadThread {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.at == this.chunk.len() {
            match ready!(this.chunks.poll_recv(cx)) {
                // The input has ended: a read of nothing.
                None => return Poll::Ready(Ok(())),
                Some(Err(e)) => return Poll::Ready(Err(e)),
                Some(Ok(chunk)) => (this.chunk, this.at) = (chunk, 0),
            }
        }
        let n = buf.remaining().min(this.chunk.len() - this.at);
        buf.put_slice(&this.chunk[this.at..this.at + n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn reads_what_the_source_holds_then_ends() {
        let text: Vec<u8> = (0..CHUNK * 2 + 7).map(|i| (i % 251) as u8).collect();
        let mut reader = ReadThread::spawn(io::Cursor::new(text.clone())).unwrap();
        let mut read = Vec::new();
        reader.read_to_end(&mut read).await.unwrap();
        assert_eq!(read, text);
    }

    #[test]
    fn a_read_waiting_for_input_does_not_hold_the_runtime_at_its_end() {
        // A socket whose other end stays open and silent, like a client's after SIGTERM.
        let (ours, _client) = std::os::unix::net::UnixStream::pair().unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let mut reader = ReadThread::spawn(ours).unwrap();
        runtime.spawn(async move {
            let _ = reader.read(&mut [0; 16]).await;
        });
        let started = std::time::Instant::now();
        runtime.shutdown_timeout(std::time::Duration::from_secs(2));
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
    }
}
