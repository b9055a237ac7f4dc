//! The lines of a text a regular expression matches, found the way ripgrep finds them: one search
//! over the whole text (led by the pattern's literal prefilter) proposes a line; a match inside the
//! line is the line's, and one that reaches past it is checked against the line alone. The answer
//! is exactly what matching every line on its own gives, at a fraction of the cost when few lines
//! match. Line ends are found and counted with `memchr`, which is SIMD on both
//! sides (AVX2 natively, simd128 in the guest): a byte-by-byte loop over the whole text was most of
//! a sandboxed grep's time. A plain file on purpose: the benchmark's native grep includes it too,
//! so both sides run the same algorithm.

use std::borrow::Cow;
use std::cell::OnceCell;

use memchr::{memchr, memchr_iter, memrchr};
use regex::{Regex, RegexBuilder};
use regex_syntax::hir::{Look, LookSet};

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

/// A pattern for whole texts (multi-line, `\r\n` aware), and for single lines when one is needed.
pub(crate) struct LinePattern {
    whole: Regex,
    /// The pattern asserts where the text starts or ends (`\A`, `\z`, `(?-m)^`), or a line end
    /// without `\r\n` (`(?-R)$`): the whole-text search would not propose every line it matches
    /// alone, so each line is matched on its own.
    by_line: bool,
    /// Compiled on first use: only a match that reaches past its line (or a text with a lone
    /// `\r`) needs it, and compiling a regex is most of a small search's time in a guest.
    line: OnceCell<Option<Regex>>,
    ignore_case: bool,
}

impl LinePattern {
    /// Compile `pattern`, case-insensitively if asked.
    pub(crate) fn new(pattern: &str, ignore_case: bool) -> Result<Self, regex::Error> {
        let whole = build(pattern, ignore_case, true)?;
        let text_edges = LookSet::empty()
            .insert(Look::Start)
            .insert(Look::End)
            .insert(Look::StartLF)
            .insert(Look::EndLF);
        // The regex crate's own parser, with the whole form's flags: it read the pattern already.
        let by_line = !regex_syntax::ParserBuilder::new()
            .case_insensitive(ignore_case)
            .multi_line(true)
            .crlf(true)
            .build()
            .parse(pattern)
            .is_ok_and(|hir| hir.properties().look_set().intersect(text_edges).is_empty());
        Ok(Self {
            whole,
            by_line,
            line: OnceCell::new(),
            ignore_case,
        })
    }

    /// Whether `line` alone matches. The line form has the whole form's syntax, so it compiles
    /// whenever that did; were it ever refused (a size limit), no line would match it.
    fn line_matches(&self, line: &str) -> bool {
        self.line
            .get_or_init(|| build(self.whole.as_str(), self.ignore_case, false).ok())
            .as_ref()
            .is_some_and(|re| re.is_match(line))
    }

    /// Calls `found(number, line)` for each line of `text` the pattern matches, in order, with its
    /// 1-based number and without its line ending (as `str::lines` gives it), until `found`
    /// returns false.
    pub(crate) fn each_match(&self, text: &str, mut found: impl FnMut(usize, &str) -> bool) {
        let bytes = text.as_bytes();
        if self.by_line || has_lone_cr(bytes) {
            // The whole-text search treats a `\r` as a line end and never lets `.` match one,
            // where `str::lines` keeps a `\r` that no `\n` follows inside its line: such a text
            // (rare: old Mac line endings, stray bytes) is searched line by line, as is every
            // text for a pattern that asserts the text's own edges.
            for (i, line) in text.lines().enumerate() {
                if self.line_matches(line) && !found(i + 1, line) {
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
            // A match inside its line is the line's own: with no lone `\r`, no `\r` or `\n` lies
            // inside a line, and each assertion the match made at the line's edges (`^`, `$`,
            // `\b`, `\A`, `\z`) holds as well where the line stands alone. Only a match that
            // reaches into the line ending or past it needs the line checked on its own.
            let inside = m.end() <= start + line.len();
            if (inside || self.line_matches(line)) && !found(number, line) {
                return;
            }
            (at, number) = (end + 1, number + 1);
        }
    }
}

/// `pattern` compiled for a whole text (`multi_line`: `^` and `$` at each line, `\r\n` aware) or
/// for one line.
fn build(pattern: &str, ignore_case: bool, multi_line: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .multi_line(multi_line)
        .crlf(multi_line)
        .build()
}

/// Whether `bytes` hold a `\r` that is not the first half of a `\r\n`.
fn has_lone_cr(bytes: &[u8]) -> bool {
    memchr_iter(b'\r', bytes).any(|i| bytes.get(i + 1) != Some(&b'\n'))
}
