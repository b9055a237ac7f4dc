//! The daemon's diagnostic log on stderr, which never makes the daemon wait. A person pipes it into
//! `grep -m1` or `head` and the reader goes away, or a log shipper stops reading: a blocking write
//! would then hold whichever thread logs (a call, a compile, the signal handler) for good. Here a
//! line that cannot be written at once is dropped and counted instead ([`dropped`], on `/metrics`),
//! and the first line written after drops is preceded by one saying how many were lost.
//!
//! When stderr is a pipe, the log writes through a descriptor of its own opened on that pipe with
//! `O_NONBLOCK` (`/proc/self/fd/2`): the flag stays on that private open file, so a shell's `2>&1`
//! that shares stderr's file with stdout does not make stdout non-blocking too. A full pipe then
//! answers `EAGAIN` and a closed one `EPIPE` (Rust ignores `SIGPIPE`); both drop the line. A file
//! or a terminal is written as before: writing to them does not wait on a reader. The audit log is
//! not this: it keeps its own `on-failure` rule.

use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Where the log goes, opened on first use.
static LOG: OnceLock<Log> = OnceLock::new();

struct Log {
    /// A non-blocking descriptor of stderr's pipe, or `None` to write stderr itself.
    pipe: Option<Mutex<File>>,
    /// Lines dropped since start: written nowhere because stderr was full or closed.
    dropped: AtomicU64,
    /// Drops already reported in the log.
    reported: AtomicU64,
    /// A line was cut short by a full pipe: the next one starts on a line of its own.
    cut: AtomicBool,
}

impl Log {
    /// Writes that wait for stderr, as a command's should: its reader is the person running it.
    fn waiting() -> Self {
        Self {
            pipe: None,
            dropped: AtomicU64::new(0),
            reported: AtomicU64::new(0),
            cut: AtomicBool::new(false),
        }
    }

    fn never_waiting() -> Self {
        Self {
            pipe: open_pipe().map(Mutex::new),
            dropped: AtomicU64::new(0),
            reported: AtomicU64::new(0),
            cut: AtomicBool::new(false),
        }
    }

    fn write(&self, line: &[u8]) {
        let Some(pipe) = &self.pipe else {
            // A command's log, a file or a terminal: the write completes (or fails) without waiting
            // on a reader that went away.
            let mut stderr = io::stderr().lock();
            if stderr.write_all(line).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            return;
        };
        let mut pipe = pipe.lock().unwrap_or_else(PoisonError::into_inner);
        let dropped = self.dropped.load(Ordering::Relaxed);
        let reported = self.reported.load(Ordering::Relaxed);
        if self.cut.load(Ordering::Relaxed) {
            if !matches!(pipe.write(b"\n"), Ok(1)) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            self.cut.store(false, Ordering::Relaxed);
        }
        if dropped > reported {
            let notice = format!(
                "toolhost: {} log line(s) dropped: stderr was full or closed\n",
                dropped - reported
            );
            if !write_whole(&mut pipe, notice.as_bytes(), &self.cut) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            self.reported.store(dropped, Ordering::Relaxed);
        }
        if !write_whole(&mut pipe, line, &self.cut) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Write `line` without waiting: false if none of it could be written now. A line longer than
/// the pipe's atomic size may go in part; what is left is dropped and the line marked `cut`.
fn write_whole(pipe: &mut File, line: &[u8], cut: &AtomicBool) -> bool {
    let mut rest = line;
    while !rest.is_empty() {
        match pipe.write(rest) {
            Ok(0) | Err(_) if rest.len() == line.len() => return false,
            Ok(0) | Err(_) => {
                cut.store(true, Ordering::Relaxed);
                return true;
            }
            Ok(n) => rest = &rest[n..],
        }
    }
    true
}

/// stderr's pipe opened anew, non-blocking; `None` when stderr is not a pipe or cannot be opened.
fn open_pipe() -> Option<File> {
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    let path = "/proc/self/fd/2";
    // Only a pipe: opening a file by this path would start writing it at offset 0.
    if !std::fs::metadata(path).ok()?.file_type().is_fifo() {
        return None;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()
}

/// From now on, never wait for stderr (the daemon): call before anything is logged. Without it
/// the log waits for stderr as any command's output does.
pub fn never_wait() {
    let _ = LOG.set(Log::never_waiting());
}

/// Write one line (ending in `\n`) to the log, or drop and count it.
pub fn write_line(line: &[u8]) {
    LOG.get_or_init(Log::waiting).write(line);
}

/// Say `text` on stderr as a line of its own, as `eprintln!` would, but never wait.
pub fn say(text: &str) {
    let mut line = Vec::with_capacity(text.len() + 1);
    line.extend_from_slice(text.as_bytes());
    line.push(b'\n');
    write_line(&line);
}

/// Lines the log dropped since start, for `/metrics`.
pub fn dropped() -> u64 {
    LOG.get()
        .map_or(0, |log| log.dropped.load(Ordering::Relaxed))
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
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt as _;

    /// A pipe's two ends, the write end non-blocking, as [`open_pipe`] makes it.
    fn pipe() -> (File, File) {
        let (reader, writer) = io::pipe().unwrap();
        let reader: File = std::os::fd::OwnedFd::from(reader).into();
        let writer: File = std::os::fd::OwnedFd::from(writer).into();
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&writer));
        let own = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .unwrap();
        drop(writer);
        (reader, own)
    }

    #[test]
    fn a_full_pipe_drops_lines_and_says_so_once_it_drains() {
        use std::io::Read as _;
        let (mut reader, writer) = pipe();
        let log = Log {
            pipe: Some(Mutex::new(writer)),
            dropped: AtomicU64::new(0),
            reported: AtomicU64::new(0),
            cut: AtomicBool::new(false),
        };
        let line = [b'x'; 99].iter().chain(b"\n").copied().collect::<Vec<u8>>();
        // Far more than a pipe holds (64 KiB): returns at once, the rest counted.
        for _ in 0..2000 {
            log.write(&line);
        }
        let lost = log.dropped.load(Ordering::Relaxed);
        assert!(lost > 1000, "{lost}");
        let mut kept = vec![0u8; 1 << 20];
        let n = reader.read(&mut kept).unwrap();
        let before = String::from_utf8_lossy(&kept[..n]).into_owned();
        log.write(b"after\n");
        let n = reader.read(&mut kept).unwrap();
        let after = String::from_utf8_lossy(&kept[..n]).into_owned();
        assert!(after.ends_with("\nafter\n"), "{after}");
        // Whole lines only, each a line written or a notice; the notices count every drop once.
        let mut told = 0;
        for l in before.lines().chain(after.lines()) {
            if let Some(rest) = l.strip_prefix("toolhost: ") {
                let (count, what) = rest.split_once(' ').unwrap();
                assert!(what.starts_with("log line(s) dropped"), "{l}");
                told += count.parse::<u64>().unwrap();
            } else {
                assert!(l == "after" || l.as_bytes() == &line[..99], "{l:?}");
            }
        }
        assert_eq!(told, lost);
    }

    #[test]
    fn a_closed_pipe_drops_lines_without_failing() {
        let (reader, writer) = pipe();
        drop(reader);
        let log = Log {
            pipe: Some(Mutex::new(writer)),
            dropped: AtomicU64::new(0),
            reported: AtomicU64::new(0),
            cut: AtomicBool::new(false),
        };
        log.write(b"gone\n");
        log.write(b"gone again\n");
        assert_eq!(log.dropped.load(Ordering::Relaxed), 2);
    }
}
