//! The fleet's audit index: each daemon's JSONL file stays its durable record, and a copy of each
//! end record goes to a table every daemon can search, so that one console browses and exports
//! the whole fleet's calls. A daemon ships what its writer appended (read back from the file every
//! [`SHIP_EVERY`], off the calls' path) in batches; on start it ships its file's last
//! [`RESHIPPED_ON_START`] bytes again (the index keeps each call once), so records written just
//! before a kill reach the index when a daemon starts on that file again.

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::record::{AuditRecord, Event};

/// How often a daemon ships what its audit log gained.
pub const SHIP_EVERY: Duration = Duration::from_millis(250);
/// The tail of its log a daemon ships again when it starts.
pub const RESHIPPED_ON_START: u64 = 1024 * 1024;
/// How long one batch may take to be kept (a batch is a few milliseconds' work; one that timed out
/// is shipped again, and kept once). Short, so that a stopping daemon never waits long on a store
/// that hangs.
const ADD_WAIT: Duration = Duration::from_secs(1);
/// Records shipped in one statement at most.
const BATCH: usize = 500;
/// Bytes read from the log in one round at most (the next round goes on).
const READ_AT_MOST: u64 = 8 * 1024 * 1024;

/// One end record, as the index keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexed {
    /// The call's audit id (the index keeps each once).
    pub call_id: String,
    /// When the call started, in milliseconds since the epoch.
    pub ts_ms: i64,
    /// The tool, as the caller named it.
    pub tool: String,
    /// The line exactly as written.
    pub line: String,
}

/// A record found in the index, with the daemon that shipped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The daemon that shipped it.
    pub daemon: String,
    /// The record.
    pub record: Indexed,
}

/// Which rows to read, newest first: before a key, within a window, of one tool, at most `rows`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Only rows older than this `(ts_ms, call_id)`.
    pub before: Option<(i64, String)>,
    /// Only calls that started at or after this.
    pub since_ms: Option<i64>,
    /// Only calls that started before this.
    pub until_ms: Option<i64>,
    /// Only this tool.
    pub tool: Option<String>,
    /// Rows at most.
    pub rows: usize,
}

/// The index did not answer.
#[derive(Debug, thiserror::Error)]
#[error("the fleet's audit index: {0}")]
pub struct IndexError(pub String);

/// Where the fleet's end records are kept: a table in the shared store.
#[async_trait]
pub trait AuditIndex: Send + Sync {
    /// Keep `records` (shipped by this daemon); a call already kept is kept once.
    async fn add(&self, records: &[Indexed]) -> Result<(), IndexError>;
    /// The rows `scan` selects, newest first (by start time, then call id).
    async fn scan(&self, scan: &Scan) -> Result<Vec<Found>, IndexError>;
}

/// Ship the end records `tail`'s log gains to `index` until `stop`.
pub async fn ship(mut tail: Tail, index: Arc<dyn AuditIndex>, stop: CancellationToken) {
    let mut every = tokio::time::interval(SHIP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let stopping = tokio::select! {
            () = stop.cancelled() => true,
            _ = every.tick() => false,
        };
        // One last round at a stop: what the last calls wrote reaches the index too.
        let (back, records) = match tokio::task::spawn_blocking(move || {
            let records = tail.read();
            (tail, records)
        })
        .await
        {
            Ok(read) => read,
            Err(_) => return,
        };
        tail = back;
        match records {
            Ok(records) => {
                for batch in records.chunks(BATCH) {
                    // Bounded, so that a store that hangs cannot hold a stopping daemon.
                    let added = tokio::time::timeout(ADD_WAIT, index.add(batch)).await;
                    let failed = match added {
                        Ok(Ok(())) => continue,
                        Ok(Err(e)) => e.to_string(),
                        Err(_) => "the store did not answer in time".to_owned(),
                    };
                    // The file keeps them: go back and ship them again next round.
                    tracing::debug!("{failed}; shipping again next round");
                    tail.rewind();
                    break;
                }
                tail.commit();
            }
            Err(e) => tracing::debug!("the audit log could not be read for the index: {e}"),
        }
        if stopping {
            return;
        }
    }
}

/// Where shipping stands in one log file.
pub struct Tail {
    path: PathBuf,
    /// The file's identity and the offset of the first byte not yet shipped; `None` while the
    /// file did not exist (everything in it is then new).
    at: Option<(FileId, u64)>,
    /// The offset the last read reached, shipped once [`Self::commit`] says so.
    read_to: Option<(FileId, u64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId(u64, u64);

impl Tail {
    /// Shipping of the log at `path` from now on, and of its last [`RESHIPPED_ON_START`] bytes:
    /// taken when the daemon starts, so that what it writes while the store is still out of reach
    /// is shipped once the store answers.
    pub fn from_now(path: PathBuf) -> Self {
        let at = File::open(&path).and_then(|mut file| {
            let meta = file.metadata()?;
            Ok((file_id(&meta), start_of_tail(&mut file, meta.len())?))
        });
        Self {
            path,
            at: at.ok(),
            read_to: None,
        }
    }

    /// The complete end records appended since the last committed read.
    fn read(&mut self) -> io::Result<Vec<Indexed>> {
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        let id = file_id(&meta);
        let len = meta.len();
        let from = match self.at {
            // The same file, not truncated: go on.
            Some((at_id, offset)) if at_id == id && offset <= len => offset,
            // Rotated, rewritten, or made since the start: from its start.
            _ => 0,
        };
        let upto = len.min(from + READ_AT_MOST);
        let mut bytes = vec![0; usize::try_from(upto - from).unwrap_or(0)];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut bytes)?;
        // Only whole lines: a torn or unfinished last line waits for the next round.
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        if whole == 0 && upto - from == READ_AT_MOST {
            // One line longer than a round reads: skip it (its rest fails to parse next round)
            // rather than stall here for good.
            tracing::warn!(
                "an audit line over {READ_AT_MOST} bytes was not put in the fleet's index"
            );
            self.read_to = Some((id, upto));
            return Ok(Vec::new());
        }
        self.read_to = Some((id, from + whole as u64));
        Ok(bytes[..whole]
            .split(|b| *b == b'\n')
            .filter_map(indexed)
            .collect())
    }

    fn commit(&mut self) {
        if let Some(read) = self.read_to.take() {
            self.at = Some(read);
        }
    }

    fn rewind(&mut self) {
        self.read_to = None;
    }
}

/// The offset of the first whole line in the last [`RESHIPPED_ON_START`] bytes of the file.
fn start_of_tail(file: &mut File, len: u64) -> io::Result<u64> {
    if len <= RESHIPPED_ON_START {
        return Ok(0);
    }
    let from = len - RESHIPPED_ON_START;
    file.seek(SeekFrom::Start(from - 1))?;
    // Up to the first newline only. The byte before `from` is read too: a newline there means
    // `from` starts a line.
    let mut head = Vec::new();
    let read =
        io::BufReader::new(file.by_ref().take(RESHIPPED_ON_START)).read_until(b'\n', &mut head)?;
    Ok(if head.last() == Some(&b'\n') {
        from - 1 + read as u64
    } else {
        len
    })
}

#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    FileId(meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> FileId {
    FileId(0, 0)
}

/// The line's end record as the index keeps it; `None` for a begin line or a line that is not a
/// record.
fn indexed(line: &[u8]) -> Option<Indexed> {
    let line = std::str::from_utf8(line.trim_ascii()).ok()?;
    if line.is_empty() {
        return None;
    }
    let record: AuditRecord = serde_json::from_str(line).ok()?;
    (record.event == Event::End).then(|| Indexed {
        call_id: record.call_id,
        ts_ms: record.ts_start.timestamp_millis(),
        tool: record.tool,
        line: line.to_owned(),
    })
}

#[cfg(test)]
pub(crate) mod memory;
#[cfg(test)]
mod tests;
