//! Every matching record, newest first, as JSONL: page after page through the cursor, so nothing
//! but one page is ever held, and an HTTP body can be fed one blocking step at a time.

use std::io::Write;
use std::path::PathBuf;

use super::{Cursor, Filter, QueryError, query};

/// Records per step of an export: a chunk of about 0.8 MiB for typical records.
const RECORDS_PER_CHUNK: usize = 1000;

/// An export in progress: an iterator of JSONL chunks, each the lines of one or more pages,
/// newest first. Owns what it needs (`Send + 'static`), so the HTTP layer can move it into
/// `spawn_blocking` for each chunk and get it back with the bytes:
///
/// ```ignore
/// let (export, chunk) = spawn_blocking(move || { let chunk = export.next(); (export, chunk) }).await?;
/// ```
///
/// The export covers the log as it was when the first chunk was read: records appended later
/// are after its cursor and not included. Ends after the first error.
#[derive(Debug)]
pub struct Export {
    path: PathBuf,
    filter: Filter,
    next: Option<Cursor>,
    done: bool,
    /// Lines skipped as malformed so far.
    pub malformed: u64,
}

impl Export {
    /// An export of the records of the log at `path` that match `filter`.
    pub fn new(path: impl Into<PathBuf>, filter: Filter) -> Self {
        Self {
            path: path.into(),
            filter,
            next: None,
            done: false,
            malformed: 0,
        }
    }
}

impl Iterator for Export {
    type Item = Result<Vec<u8>, QueryError>;

    /// The next chunk: never empty. Pages that find nothing (a rare filter) are read on until one
    /// does or the log's start is reached.
    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let page = match query(&self.path, &self.filter, self.next, RECORDS_PER_CHUNK) {
                Ok(page) => page,
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            };
            self.malformed += page.malformed;
            self.next = page.next;
            self.done = self.next.is_none();
            if !page.records.is_empty() {
                let size = page.records.iter().map(|r| r.get().len() + 1).sum();
                let mut chunk = Vec::with_capacity(size);
                for record in &page.records {
                    chunk.extend_from_slice(record.get().as_bytes());
                    chunk.push(b'\n');
                }
                return Some(Ok(chunk));
            }
        }
        None
    }
}

/// Writes every record of the log at `path` matching `filter` to `out`, newest first, one per
/// line; returns how many. Streams: one page is held at a time. Blocking I/O.
pub fn export(
    path: impl Into<PathBuf>,
    filter: &Filter,
    mut out: impl Write,
) -> Result<u64, QueryError> {
    let mut records = 0;
    for chunk in Export::new(path, filter.clone()) {
        let chunk = chunk?;
        records += memchr::memchr_iter(b'\n', &chunk).count() as u64;
        out.write_all(&chunk).map_err(QueryError::Write)?;
    }
    out.flush().map_err(QueryError::Write)?;
    Ok(records)
}
