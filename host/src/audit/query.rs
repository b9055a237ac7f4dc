//! Paging the audit log newest first, for the operator console: a page never waits on the log's
//! size. Reads the file backwards in blocks from a cursor (or its end), and stops once the page is
//! full or a scan budget of bytes is spent, answering with what it found and where to go on.
//! Reads; never writes, never decides.
//!
//! Only end records (`"event":"end"`, and v1 lines, which have no event) are results: a call
//! still running has only its begin line, and the console's live view shows those. Records come
//! back exactly as written (the line, as a [`RawValue`]), so nothing is re-serialized.
//!
//! A line is tested in two steps: its bytes first (a begin line by its head; `q`; and the
//! `"tool":"…"`, `"outcome":"…"` or `"decision":{"kind":"…"` text that every matching line
//! contains as the writer writes it), and only the lines that pass are parsed. A line that fails to
//! parse is skipped and counted in [`Page::malformed`]; so is the unfinished last line of a write
//! torn (or still in progress) at the end of the file, which is left for a later page from the end.
//!
//! The HTTP layer parses the query string with [`Params::parse`], runs [`query`] in
//! `spawn_blocking` and serializes the [`Page`]; for a download it drives [`Export`] (see there).

mod backward;
mod cursor;
mod export;
mod filter;
mod fleet;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::value::RawValue;

use self::backward::{Backward, Line};
pub use self::cursor::{Cursor, CursorError};
pub use self::export::{Export, export};
use self::filter::Matcher;
pub use self::filter::{
    DEFAULT_LIMIT, DecisionKind, Filter, MAX_LIMIT, Needle, OutcomeFilter, ParamError, Params,
    Request,
};
pub use self::fleet::{FleetCursor, FleetPage, SCAN_ROWS, fleet_page, fleet_request};
use super::record::{AuditRecord, Event};

/// Bytes one page may read before it answers with what it has: 64 MiB, about 80,000 records,
/// a fraction of a second; a filter that matches rarely is paged through in such steps.
pub const SCAN_BUDGET: u64 = 64 * 1024 * 1024;

/// One page of records, newest first, as the console's API answers it:
/// `{"records": [...], "next": "cursor" | null, "scanned_bytes": n}`.
#[derive(Debug, Serialize)]
pub struct Page {
    /// The matching end records, each exactly as its line was written.
    pub records: Vec<Box<RawValue>>,
    /// Where the next page starts; `None` once the start of the log is reached.
    pub next: Option<Cursor>,
    /// Bytes of the log this page read.
    pub scanned_bytes: u64,
    /// Lines skipped because they did not parse (damage, a torn write, a line too long to hold),
    /// among those the filter's byte checks let through. Not part of the API's answer: for logs.
    #[serde(skip)]
    pub malformed: u64,
}

/// Why a page could not be read. Bad lines are not errors: they are skipped and counted.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The log could not be opened (a missing file is this too).
    #[error("cannot open audit log {}", .path.display())]
    Open {
        /// The log file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// Reading the log failed.
    #[error("cannot read audit log {}", .path.display())]
    Read {
        /// The log file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The cursor was made for another file, or for this one before it was rotated or rewritten.
    #[error(
        "the cursor does not belong to the audit log as it is now (rotated?); start again without a cursor"
    )]
    StaleCursor,
    /// An export's destination refused the bytes.
    #[error("cannot write the export")]
    Write(#[source] io::Error),
}

/// Up to `limit` (at least 1) end records matching `filter`, newest first, from `cursor` (or the
/// end of the log), reading at most about [`SCAN_BUDGET`] bytes. Blocking I/O: call it from
/// `spawn_blocking`.
pub fn query(
    path: &Path,
    filter: &Filter,
    cursor: Option<Cursor>,
    limit: usize,
) -> Result<Page, QueryError> {
    query_within(path, filter, cursor, limit, SCAN_BUDGET)
}

/// [`query`] with another scan budget. A page always reads at least one whole line, so paging
/// makes progress whatever the budget.
pub fn query_within(
    path: &Path,
    filter: &Filter,
    cursor: Option<Cursor>,
    limit: usize,
    budget: u64,
) -> Result<Page, QueryError> {
    let read_error = |source| QueryError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(|source| QueryError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let meta = file.metadata().map_err(read_error)?;
    let end = match cursor {
        Some(cursor) if cursor.fits(&file, &meta).map_err(read_error)? => cursor.offset,
        Some(_) => return Err(QueryError::StaleCursor),
        None => meta.len(),
    };
    // From the end of the file, the last line is torn unless the file ends with a newline.
    let mut torn =
        cursor.is_none() && end > 0 && last_byte(&file, end).map_err(read_error)? != b'\n';
    let limit = limit.max(1);
    let mut matcher = Matcher::new(filter);
    let mut lines = Backward::new(&file, end);
    let mut page = Page {
        records: Vec::new(),
        next: None,
        scanned_bytes: 0,
        malformed: 0,
    };
    let mut reached = end;
    while let Some(line) = lines.next_line().map_err(read_error)? {
        let torn = std::mem::take(&mut torn);
        let start = match line {
            Line::Oversized { start } => {
                page.malformed += 1;
                start
            }
            Line::Text { start, .. } if torn => {
                page.malformed += 1;
                start
            }
            Line::Text { start, bytes } => {
                let bytes = bytes.trim_ascii();
                if !bytes.is_empty() && matcher.candidate(bytes) {
                    match parse(bytes) {
                        Some((raw, record)) => {
                            if record.event == Event::End && matcher.matches(&record) {
                                page.records.push(raw);
                            }
                        }
                        None => page.malformed += 1,
                    }
                }
                start
            }
        };
        reached = start;
        if page.records.len() >= limit || end - start >= budget {
            break;
        }
    }
    page.scanned_bytes = end - reached;
    if reached > 0 {
        page.next = Some(Cursor::at(&file, &meta, reached).map_err(read_error)?);
    }
    Ok(page)
}

/// The line as written, and the record it holds; `None` when it is not a record.
fn parse(bytes: &[u8]) -> Option<(Box<RawValue>, AuditRecord)> {
    let raw: &RawValue = serde_json::from_slice(bytes).ok()?;
    let record = serde_json::from_str(raw.get()).ok()?;
    Some((raw.to_owned(), record))
}

fn last_byte(mut file: &File, end: u64) -> io::Result<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut byte = [0];
    file.seek(SeekFrom::Start(end - 1))?;
    file.read_exact(&mut byte)?;
    Ok(byte[0])
}

#[cfg(test)]
#[path = "query/tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "query/filter_tests.rs"]
mod filter_tests;
