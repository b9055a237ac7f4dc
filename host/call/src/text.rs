//! Text from plugins and callers (descriptions, tool names, log messages, guest output, audit
//! fields) made safe to show where people read it: a terminal or a log line.
//!
//! A terminal obeys control characters: ESC starts sequences that move the cursor, erase lines or
//! set the window title, CR returns to the start of the line and overwrites it, BEL rings, C1
//! controls (U+0080 to U+009F) are 8-bit ESC sequences, and bidirectional overrides reorder what is
//! shown. A newline in a log message forges a whole log line. Every such character is shown as an
//! escape instead (`\n`, `\r`, `\t`, else `\u{1b}`), so the text keeps its information and loses
//! its power. `--json` output needs none of this: it is JSON-escaped, and read by programs.
//!
//! Text kept short (a message, a shown input, a tool's result) is cut by [`prefix`] and
//! [`truncate_at_boundary`], never in the middle of a character.

use std::borrow::Cow;
use std::fmt;
use std::io;

/// `text` on one line: every control character escaped, newlines and tabs included.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// `text` with its lines kept: as [`one_line`], but newlines and tabs stay (for multi-line
/// output such as a tool's content printed by `toolhost call`).
pub fn multi_line(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// Displays a string as [`one_line`] does, without allocating: for log fields (`%OneLine(&s)`).
pub struct OneLine<'a>(pub &'a str);

impl fmt::Display for OneLine<'_> {
    /// The safe runs between the characters that need escaping are written whole: character by
    /// character, each went through the log's writer on its own.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut run = 0;
        for (at, c) in self.0.char_indices() {
            if is_unsafe(c) {
                f.write_str(&self.0[run..at])?;
                write_char(f, c, false)?;
                run = at + c.len_utf8();
            }
        }
        f.write_str(&self.0[run..])
    }
}

/// Whether `c` must not reach a terminal raw.
fn is_unsafe(c: char) -> bool {
    c.is_control() // C0, DEL and C1
        || matches!(c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' // bidi marks
            | '\u{202A}'..='\u{202E}'           // bidi embeddings and overrides
            | '\u{2066}'..='\u{2069}'           // bidi isolates
            | '\u{2028}' | '\u{2029}'           // line and paragraph separators
        )
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let kept = |c: char| keep_lines && matches!(c, '\n' | '\t');
    if !text.chars().any(|c| is_unsafe(c) && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        let _ = write_char(&mut out, c, keep_lines);
    }
    Cow::Owned(out)
}

fn write_char(out: &mut impl fmt::Write, c: char, keep_lines: bool) -> fmt::Result {
    match c {
        '\n' | '\t' if keep_lines => out.write_char(c),
        '\n' => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        '\t' => out.write_str("\\t"),
        c if is_unsafe(c) => write!(out, "\\u{{{:x}}}", u32::from(c)),
        c => out.write_char(c),
    }
}

/// The longest start of `text` that is at most `max` bytes and does not split a character.
pub fn prefix(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

/// Cut `text` to at most `max` bytes without splitting a character; returns whether it cut.
pub fn truncate_at_boundary(text: &mut String, max: usize) -> bool {
    let cut = prefix(text, max).len();
    let cuts = cut < text.len();
    text.truncate(cut);
    cuts
}

/// `t` in RFC 3339, UTC, with exactly six fractional digits and a `Z` (`2025-06-01T12:00:00.000123Z`),
/// as chrono and tracing write it, digit by digit: every audit line has two or three timestamps and
/// every log line one, and the general formatters (format items through `fmt::write`) cost more
/// instructions than the rest of an audit line's fields. `None` for what that form does not cover
/// alone (years outside 0-9999, a leap second), which the caller writes with chrono.
pub fn rfc3339_micros(t: &chrono::DateTime<chrono::Utc>) -> Option<[u8; 27]> {
    use chrono::{Datelike, Timelike};
    let (year, nanos) = (t.year(), t.nanosecond());
    if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
        return None;
    }
    let mut out = *b"0000-00-00T00:00:00.000000Z";
    let fields = [
        (0..4, year.unsigned_abs()),
        (5..7, t.month()),
        (8..10, t.day()),
        (11..13, t.hour()),
        (14..16, t.minute()),
        (17..19, t.second()),
        (20..26, nanos / 1000),
    ];
    for (at, mut n) in fields {
        for d in out[at].iter_mut().rev() {
            *d = b'0' + (n % 10) as u8;
            n /= 10;
        }
    }
    Some(out)
}

/// A formatter's output with every ESC in it escaped, and the rest passed through as it comes:
/// for log field values, so that the only ESC left in a log line is the formatter's own colouring
/// (which [`LogWriter`] lets through). A piece without ESC costs one scan, not a write per character.
pub struct EscEscaped<W>(pub W);

impl<W: fmt::Write> fmt::Write for EscEscaped<W> {
    fn write_str(&mut self, mut s: &str) -> fmt::Result {
        while let Some(at) = s.find('\x1b') {
            self.0.write_str(&s[..at])?;
            self.0.write_str("\\u{1b}")?;
            s = &s[at + 1..];
        }
        self.0.write_str(s)
    }
}

/// Stderr for the daemon's log: each write is one formatted event, written as one line. Control
/// characters in it are escaped, but for its final newline and ESC: the formatter already escapes
/// ESC in messages and fields, so an ESC still here is its own colouring.
pub struct LogWriter<W>(pub W);

impl<W: io::Write> io::Write for LogWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Most lines are printable ASCII (and the formatter's colours): nothing to escape.
        let body = buf.strip_suffix(b"\n").unwrap_or(buf);
        if body.iter().all(|&b| (0x20..0x7f).contains(&b) || b == 0x1b) {
            self.0.write_all(buf)?;
            return Ok(buf.len());
        }
        let text = String::from_utf8_lossy(buf);
        let (body, end) = match text.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (&*text, ""),
        };
        let mut line = String::with_capacity(buf.len() + 1);
        for c in body.chars() {
            if c == '\x1b' {
                line.push(c);
            } else {
                let _ = write_char(&mut line, c, false);
            }
        }
        line.push_str(end);
        self.0.write_all(line.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn esc_escaped_passes_all_but_esc() {
        use std::fmt::Write as _;
        let mut out = EscEscaped(String::new());
        let (raw, esc) = ("a\x1b]0;t\x07b\x1b", "\x1b");
        write!(out, "{raw}|{esc:?}").unwrap();
        assert_eq!(out.0, "a\\u{1b}]0;t\x07b\\u{1b}|\"\\u{1b}\"");
    }

    const ATTACK: &str = "ok\x1b]0;pwned\x07\r\nnext\u{9b}2J\u{202e}txt.exe\u{2066}";

    #[test]
    fn escapes_every_control_character_on_one_line() {
        assert_eq!(
            one_line(ATTACK),
            "ok\\u{1b}]0;pwned\\u{7}\\r\\nnext\\u{9b}2J\\u{202e}txt.exe\\u{2066}"
        );
        assert_eq!(OneLine(ATTACK).to_string(), one_line(ATTACK));
        assert_eq!(one_line("a\tb\u{0}c\u{7f}"), "a\\tb\\u{0}c\\u{7f}");
    }

    #[test]
    fn keeps_lines_and_tabs_in_multi_line_text() {
        assert_eq!(
            multi_line("line 1\n\tline 2\r\x1b[2K"),
            "line 1\n\tline 2\\r\\u{1b}[2K"
        );
    }

    #[test]
    fn leaves_ordinary_text_untouched_and_unallocated() {
        for text in ["read_file", "Grüße, 世界 🙂", "C:\\path\\n", ""] {
            assert!(matches!(one_line(text), Cow::Borrowed(t) if t == text));
        }
    }

    #[test]
    fn log_writer_keeps_one_event_on_one_line() {
        let mut out = LogWriter(Vec::new());
        let plain = b"\x1b[32mINFO\x1b[0m toolhost::call: call call_id=1 tool=echo ms=0.1\n";
        out.write_all(plain).unwrap();
        assert_eq!(out.0, plain, "a printable line goes as it is");
        let mut out = LogWriter(Vec::new());
        out.write_all("tool=\u{202E}cho\n".as_bytes()).unwrap();
        assert_eq!(String::from_utf8(out.0).unwrap(), "tool=\\u{202e}cho\n");
        let mut out = LogWriter(Vec::new());
        out.write_all(b"\x1b[32mINFO\x1b[0m plugin said: a\nFAKE ERROR line\r\x07\n")
            .unwrap();
        let text = String::from_utf8(out.0).unwrap();
        assert_eq!(
            text,
            "\x1b[32mINFO\x1b[0m plugin said: a\\nFAKE ERROR line\\r\\u{7}\n"
        );
        assert_eq!(text.lines().count(), 1);
    }

    #[test]
    fn cuts_at_a_character_boundary_at_or_below_the_limit() {
        let text = "aé🙂"; // 1 + 2 + 4 bytes
        assert_eq!(prefix(text, 0), "");
        assert_eq!(prefix(text, 2), "a");
        assert_eq!(prefix(text, 3), "aé");
        assert_eq!(prefix(text, 6), "aé");
        assert_eq!(prefix(text, 7), text);
        assert_eq!(prefix(text, 100), text);
        let mut s = "é".repeat(10);
        assert!(truncate_at_boundary(&mut s, 5));
        assert_eq!(s, "éé");
        let mut short = String::from("abc");
        assert!(!truncate_at_boundary(&mut short, 3));
        assert_eq!(short, "abc");
    }
}
