//! Where a page stopped: a byte offset into the log, and enough of the file's identity to refuse the
//! offset when it is brought back to another file. Opaque to clients.

use std::fmt;
use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::str::FromStr;

/// Bytes before the offset that the cursor's check covers: they end with the newer neighbour's
/// line end, and hold its hash, numbers and decision, so a log rewritten in place (the same inode,
/// or a reused one) almost surely differs there.
const CHECK_BYTES: u64 = 256;

/// Where the next page starts: every line that starts before `offset` is still to be read.
///
/// The log is append-only, so an offset taken once stays valid as records are appended: new
/// records go after it and never shift it. What can break it is rotation or rewriting, so a
/// cursor also carries the file's inode (on unix) and a hash of the 256 bytes before
/// the offset; [`query`](super::query) refuses a cursor whose file no longer has them, with
/// [`QueryError::StaleCursor`](super::QueryError::StaleCursor), instead of serving records from
/// the middle of another file's line.
///
/// Written as `<offset>.<inode>.<check>` (decimal, hex, hex); clients must not rely on that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub(super) offset: u64,
    inode: u64,
    check: u64,
}

/// Text that is not a cursor this server made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cursor {0:?} is not one this server gave; start again without a cursor")]
pub struct CursorError(String);

impl Cursor {
    /// The cursor for `offset` in `file`, whose metadata is `meta`; `offset` is a line start.
    pub(super) fn at(file: &File, meta: &Metadata, offset: u64) -> io::Result<Self> {
        Ok(Self {
            offset,
            inode: inode(meta),
            check: check(file, offset)?,
        })
    }

    /// Whether this cursor was made for `file` as it still is (only appended to since).
    pub(super) fn fits(&self, file: &File, meta: &Metadata) -> io::Result<bool> {
        Ok(self.offset > 0
            && self.offset <= meta.len()
            && self.inode == inode(meta)
            && self.check == check(file, self.offset)?)
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:x}.{:x}", self.offset, self.inode, self.check)
    }
}

impl FromStr for Cursor {
    type Err = CursorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || CursorError(s.to_owned());
        let mut parts = s.split('.');
        let mut next = |radix| {
            parts
                .next()
                .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric()))
                .and_then(|p| u64::from_str_radix(p, radix).ok())
                .ok_or_else(bad)
        };
        let cursor = Self {
            offset: next(10)?,
            inode: next(16)?,
            check: next(16)?,
        };
        if parts.next().is_some() || cursor.offset == 0 {
            return Err(bad());
        }
        Ok(cursor)
    }
}

impl serde::Serialize for Cursor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(unix)]
fn inode(meta: &Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &Metadata) -> u64 {
    0
}

/// FNV-1a of the bytes in `[offset - CHECK_BYTES, offset)`: written before the cursor was made,
/// so they never change in an append-only file.
fn check(mut file: &File, offset: u64) -> io::Result<u64> {
    let start = offset.saturating_sub(CHECK_BYTES);
    let mut bytes = [0; CHECK_BYTES as usize];
    let bytes = &mut bytes[..(offset - start) as usize];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(bytes)?;
    Ok(bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    }))
}
