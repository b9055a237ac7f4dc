//! Lines of a file from a given offset towards its start, read in blocks; knows nothing of JSON.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

/// Bytes read from the file at a time.
pub(super) const BLOCK: usize = 64 * 1024;

/// A line longer than this is not held in memory: it is passed over and reported as
/// [`Line::Oversized`]. No record comes near it unless it carries a huge input.
pub(super) const MAX_LINE: usize = 16 * 1024 * 1024;

/// One line, newest first.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line<'a> {
    /// A line's bytes, without its newline, and the offset where it starts.
    Text { start: u64, bytes: &'a [u8] },
    /// A line longer than [`MAX_LINE`], starting at `start`, skipped whole.
    Oversized { start: u64 },
}

/// Reads the lines that end at or before `end`, last first.
///
/// Holds `buf`, the bytes `[start, start + buf.len())`, the last of which ends the next line to
/// yield. A line that starts before `start` grows `buf` block by block at its front.
pub(super) struct Backward<'f> {
    file: &'f File,
    buf: Vec<u8>,
    spare: Vec<u8>,
    start: u64,
    /// The length `buf` is cut to before the next line: the previous line, yielded by reference.
    cut: Option<usize>,
    /// Inside a line longer than `MAX_LINE`: its bytes seen so far are dropped.
    oversized: bool,
}

impl<'f> Backward<'f> {
    /// Lines of `file` ending at or before `end`, which must be a line start (or the file's end).
    pub(super) fn new(file: &'f File, end: u64) -> Self {
        Self {
            file,
            buf: Vec::new(),
            spare: Vec::new(),
            start: end,
            cut: None,
            oversized: false,
        }
    }

    /// The next line towards the start of the file; `None` once the file's first line is read.
    pub(super) fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        if let Some(cut) = self.cut.take() {
            self.buf.truncate(cut);
        }
        loop {
            let body = self.buf.len().saturating_sub(1);
            let found = memchr::memrchr(b'\n', &self.buf[..body]);
            if found.is_some() || self.start == 0 {
                let from = found.map_or(0, |at| at + 1);
                let start = self.start + from as u64;
                self.cut = Some(from);
                if std::mem::take(&mut self.oversized) {
                    return Ok(Some(Line::Oversized { start }));
                }
                if self.buf.is_empty() {
                    return Ok(None);
                }
                let mut bytes = &self.buf[from..];
                if let [rest @ .., b'\n'] = bytes {
                    bytes = rest;
                }
                return Ok(Some(Line::Text { start, bytes }));
            }
            if self.buf.len() > MAX_LINE {
                // Keep only the last byte (the line's end), and go on looking for its start.
                let last = self.buf.len() - 1;
                self.buf.drain(..last);
                self.start += last as u64;
                self.oversized = true;
            }
            self.grow()?;
        }
    }

    /// Reads the block before `start` in front of `buf`.
    fn grow(&mut self) -> io::Result<()> {
        let n = self.start.min(BLOCK as u64) as usize;
        let from = self.start - n as u64;
        self.spare.clear();
        self.spare.resize(n, 0);
        let mut file = self.file;
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut self.spare)?;
        self.spare.extend_from_slice(&self.buf);
        std::mem::swap(&mut self.buf, &mut self.spare);
        self.start = from;
        Ok(())
    }
}
