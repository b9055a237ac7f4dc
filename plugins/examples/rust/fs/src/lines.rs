//! The lines of a text a regular expression matches, found the way ripgrep finds them: one search
//! over the whole text (led by the pattern's literal prefilter) proposes a line, and the line alone
//! decides, so the answer is exactly what matching every line on its own gives, at a fraction of the
//! cost when few lines match. Line ends are found and counted with `memchr`, which is SIMD on both
//! sides (AVX2 natively, simd128 in the guest): a byte-by-byte loop over the whole text was most of
//! a sandboxed grep's time. A plain file on purpose: the benchmark's native grep includes it too,
//! so both sides run the same algorithm.

use std::borrow::Cow;

use memchr::{memchr, memchr_iter, memrchr};
use regex::{Regex, RegexBuilder};

/// A file with a NUL byte in its first bytes is treated as binary.
const BINARY_SNIFF_BYTES: usize = 8000;

/// Whether `bytes` look like a binary file's. `memchr`, not `<[u8]>::contains`: core's search
/// goes a word at a time, four bytes in a guest.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    memchr(0, &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)]).is_some()
}

/// A file's bytes as text: borrowed when they are UTF-8, as nearly every text file is, else with
/// U+FFFD for each invalid sequence. `simdutf8` checks 16 or 32 bytes at a time (`str::from_utf8`
/// four in a guest, `String::from_utf8_lossy` one, which in a sandboxed grep was most of the work).
pub(crate) fn text_of(bytes: &[u8]) -> Cow<'_, str> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// A pattern compiled twice: for whole texts (multi-line, `\r\n` aware) and for single lines.
pub(crate) struct LinePattern {
    whole: Regex,
    line: Regex,
}

impl LinePattern {
    /// Compile `pattern`, case-insensitively if asked.
    pub(crate) fn new(pattern: &str, ignore_case: bool) -> Result<Self, regex::Error> {
        let build = |multi_line| {
            RegexBuilder::new(pattern)
                .case_insensitive(ignore_case)
                .multi_line(multi_line)
                .crlf(multi_line)
                .build()
        };
        Ok(Self {
            whole: build(true)?,
            line: build(false)?,
        })
    }

    /// Calls `found(number, line)` for each line of `text` the pattern matches, in order, with its
    /// 1-based number and without its line ending (as `str::lines` gives it), until `found`
    /// returns false.
    pub(crate) fn each_match(&self, text: &str, mut found: impl FnMut(usize, &str) -> bool) {
        let bytes = text.as_bytes();
        if has_lone_cr(bytes) {
            // The whole-text search treats a `\r` as a line end and never lets `.` match one,
            // where `str::lines` keeps a `\r` that no `\n` follows inside its line: such a text
            // (rare: old Mac line endings, stray bytes) is searched line by line.
            for (i, line) in text.lines().enumerate() {
                if self.line.is_match(line) && !found(i + 1, line) {
                    return;
                }
            }
            return;
        }
        // `number` is the number of the line that starts at `at`.
        let (mut at, mut number) = (0, 1);
        while at < text.len() {
            let Some(m) = self.whole.find_at(text, at) else {
                return;
            };
            let start = memrchr(b'\n', &bytes[at..m.start()]).map_or(at, |i| at + i + 1);
            if start == text.len() {
                // An empty match after the last line ending: `str::lines` has no line there.
                return;
            }
            number += memchr_iter(b'\n', &bytes[at..start]).count();
            let end = memchr(b'\n', &bytes[m.start()..]).map_or(text.len(), |i| m.start() + i);
            // `str::lines` drops the `\r` of a `\r\n`, not a `\r` that ends the text.
            let line = match end < text.len() {
                true => text[start..end]
                    .strip_suffix('\r')
                    .unwrap_or(&text[start..end]),
                false => &text[start..end],
            };
            if self.line.is_match(line) && !found(number, line) {
                return;
            }
            (at, number) = (end + 1, number + 1);
        }
    }
}

/// Whether `bytes` hold a `\r` that is not the first half of a `\r\n`.
fn has_lone_cr(bytes: &[u8]) -> bool {
    memchr_iter(b'\r', bytes).any(|i| bytes.get(i + 1) != Some(&b'\n'))
}
