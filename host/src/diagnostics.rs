//! The daemon's diagnostic log on stderr, which never makes the daemon wait. A person pipes it into
//! `grep -m1` or `head` and the reader goes away, or a log shipper stops reading: a blocking write
//! would then hold whichever thread logs (a call, a compile, the signal handler) for good.
//!
//! So the daemon's lines go through a bounded queue to a thread of their own, which alone waits for
//! stderr. A line that finds the queue full is dropped and counted ([`dropped`], on `/metrics`); so is
//! one the writer cannot write (a closed pipe: Rust ignores `SIGPIPE`). Once the writer catches up it
//! says how many lines were lost, without waiting for another line to log. The lines a person needs
//! ([`say`]: where the daemon listens, its sign-in link) have room of their own past the queue's
//! bound, so a flood of trace lines cannot push them out. At exit [`flush`] gives the writer a
//! moment to finish. A command (not the daemon) writes stderr directly: its reader is the person
//! running it. The audit log is not this: it keeps its own `on-failure` rule.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Bytes of lines waiting for the writer; a line past this is dropped.
const QUEUE_BYTES: usize = 256 * 1024;
/// Room past [`QUEUE_BYTES`] for the lines of [`say`], which are few and must reach the person.
const SAID_BYTES: usize = 64 * 1024;

/// Where the log goes, chosen on first use.
static LOG: OnceLock<Log> = OnceLock::new();

enum Log {
    /// Writes that wait for stderr, as a command's should.
    Waiting { dropped: AtomicU64 },
    /// The daemon's: a queue to the writer's thread.
    Queued(Arc<Queue>),
}

/// Lines on their way to a writer, and what became of the others.
struct Queue {
    state: Mutex<State>,
    /// Signalled when a line arrives (the writer waits on it) and when the queue drains ([`flush`]).
    changed: Condvar,
    /// Lines dropped since start: queue full, or stderr closed.
    dropped: AtomicU64,
}

#[derive(Default)]
struct State {
    lines: VecDeque<Vec<u8>>,
    bytes: usize,
    /// The writer holds lines it took and has not finished writing.
    writing: bool,
}

impl Queue {
    fn new() -> Self {
        Self {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            dropped: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `line`, or drop and count it when the queue is full (`said` lines have more room).
    fn push(&self, line: &[u8], said: bool) {
        let limit = if said {
            QUEUE_BYTES + SAID_BYTES
        } else {
            QUEUE_BYTES
        };
        let mut state = self.lock();
        if state.bytes + line.len() > limit {
            drop(state);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        state.bytes += line.len();
        state.lines.push_back(line.to_vec());
        drop(state);
        self.changed.notify_all();
    }

    /// Write queued lines to `out` until the process ends; after each batch, say what was lost.
    fn write_to(&self, mut out: impl Write) {
        let mut reported = 0;
        loop {
            let batch = {
                let mut state = self.lock();
                state.writing = false;
                self.changed.notify_all();
                while state.lines.is_empty() {
                    state = self
                        .changed
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                state.writing = true;
                state.bytes = 0;
                std::mem::take(&mut state.lines)
            };
            for line in batch {
                if out.write_all(&line).is_err() {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            let dropped = self.dropped.load(Ordering::Relaxed);
            if dropped > reported {
                let notice = format!(
                    "toolhost: {} log line(s) dropped: stderr was full or closed\n",
                    dropped - reported
                );
                // The notice reports the drops whether or not it is read: one that cannot be
                // written would otherwise be announced by the next, and that by the next.
                reported = dropped;
                let _ = out.write_all(notice.as_bytes());
            }
            let _ = out.flush();
        }
    }

    /// Wait until the writer has written everything queued, or `deadline`.
    fn drain(&self, deadline: Instant) {
        let mut state = self.lock();
        while !state.lines.is_empty() || state.writing {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Log {
    fn write(&self, line: &[u8], said: bool) {
        match self {
            Log::Waiting { dropped } => {
                if io::stderr().lock().write_all(line).is_err() {
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            Log::Queued(queue) => queue.push(line, said),
        }
    }

    fn dropped(&self) -> u64 {
        match self {
            Log::Waiting { dropped } => dropped.load(Ordering::Relaxed),
            Log::Queued(queue) => queue.dropped.load(Ordering::Relaxed),
        }
    }
}

/// From now on, never wait for stderr (the daemon): call before anything is logged. Without it
/// the log waits for stderr as any command's output does.
pub fn never_wait() {
    let queue = Arc::new(Queue::new());
    if LOG.set(Log::Queued(queue.clone())).is_ok() {
        let writer = std::thread::Builder::new()
            .name("toolhost-log".into())
            .spawn(move || queue.write_to(io::stderr()));
        if let Err(e) = writer {
            // No thread, no log: the daemon runs on, its lines counted as dropped.
            let _ = writeln!(io::stderr(), "toolhost: cannot start the log's writer: {e}");
        }
    }
}

/// Write one line (ending in `\n`) to the log, or drop and count it.
pub fn write_line(line: &[u8]) {
    log().write(line, false);
}

fn log() -> &'static Log {
    LOG.get_or_init(|| Log::Waiting {
        dropped: AtomicU64::new(0),
    })
}

/// Say `text` on stderr as a line of its own, as `eprintln!` would, but never wait: a line for the
/// person running the daemon, kept ahead of a flood of other lines.
pub fn say(text: &str) {
    let mut line = Vec::with_capacity(text.len() + 1);
    line.extend_from_slice(text.as_bytes());
    line.push(b'\n');
    log().write(&line, true);
}

/// Give the log's writer up to `grace` to write what is queued: before the process exits.
pub fn flush(grace: Duration) {
    if let Some(Log::Queued(queue)) = LOG.get() {
        queue.drain(Instant::now() + grace);
    }
}

/// Lines the log dropped since start, for `/metrics`.
pub fn dropped() -> u64 {
    LOG.get().map_or(0, Log::dropped)
}

/// stderr for the log's formatter: each write is one formatted event, written whole or dropped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_line(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
