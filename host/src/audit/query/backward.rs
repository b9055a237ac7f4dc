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
/// yield. A line that starts before `start` grows `buf` block by block at its front (while it is
/// too long to hold, `buf` is the bytes from `start` on, then its last byte).
pub(super) struct Backward<'f> {
    file: &'f File,
    buf: Vec<u8>,
    spare: Vec<u8>,
    start: u64,
    /// The length `buf` is cut to before the next line: the previous line, yielded by reference.
    cut: Option<usize>,
    /// Inside a line longer than `max_line`: its bytes seen so far are dropped.
    oversized: bool,
    max_line: usize,
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
            max_line: MAX_LINE,
        }
    }

    /// The same reader with another limit on a line's length.
    #[cfg(test)]
    fn with_max_line(self, max_line: usize) -> Self {
        Self { max_line, ..self }
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
            if self.buf.len() > self.max_line {
                // Keep only the last byte (the line's end), and go on looking for its start.
                // `start` stays where reading stopped: from here on `buf` is the bytes read since,
                // then that one byte, which is cut off with the line.
                let last = self.buf.len() - 1;
                self.buf.drain(..last);
                self.oversized = true;
            }
            self.grow()?;
        }
    }

    /// Reads the bytes before `start` in front of `buf`: a block, or as much as `buf` holds when
    /// that is more, so that a long line is copied a bounded number of times, not once per block.
    fn grow(&mut self) -> io::Result<()> {
        let n = self.start.min(BLOCK.max(self.buf.len()) as u64) as usize;
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

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn lines(text: &[u8], end: u64, max_line: usize) -> Vec<(u64, Option<String>)> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(text).unwrap();
        let mut reader = Backward::new(&file, end).with_max_line(max_line);
        let mut found = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            found.push(match line {
                Line::Text { start, bytes } => {
                    (start, Some(String::from_utf8(bytes.to_vec()).unwrap()))
                }
                Line::Oversized { start } => (start, None),
            });
        }
        found
    }

    #[test]
    fn yields_lines_last_first_with_their_offsets() {
        let text = b"a\nbb\n\nccc\n";
        let found = lines(text, text.len() as u64, MAX_LINE);
        let want = [(6, "ccc"), (5, ""), (2, "bb"), (0, "a")];
        assert_eq!(found, want.map(|(at, s)| (at, Some(s.to_owned()))));
        assert_eq!(lines(text, 2, MAX_LINE), [(0, Some("a".to_owned()))]);
        assert!(lines(b"", 0, MAX_LINE).is_empty());
    }

    #[test]
    fn passes_over_a_line_longer_than_the_limit() {
        let long = "x".repeat(BLOCK * 3 + 5);
        let text = format!("first\n{long}\nlast\n{long}");
        let found = lines(text.as_bytes(), text.len() as u64, BLOCK);
        let tail = 6 + long.len() as u64 + 1;
        assert_eq!(
            found,
            [
                (tail + 5, None),
                (tail, Some("last".to_owned())),
                (6, None),
                (0, Some("first".to_owned())),
            ]
        );
        let whole = lines(text.as_bytes(), text.len() as u64, MAX_LINE);
        assert_eq!(whole[2], (6, Some(long)));
    }
}
