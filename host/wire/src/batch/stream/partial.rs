//! A best-effort reading of arguments that are still arriving: the longest prefix of the JSON text
//! that is a whole value once its open strings, arrays and objects are closed. Only for showing a
//! call early (a `pending` event); a call runs with its complete arguments, parsed by serde_json.
//!
//! The scanner is incremental: it keeps its state between fragments, so arguments that arrive in
//! many small pieces are scanned once, not once per piece. What it cannot read (a half-written key,
//! number or escape) is left out; what it gets wrong, serde_json refuses, and nothing is shown.

use serde_json::Value;

/// Nesting deeper than this is not shown (serde_json refuses deeper values anyway).
const MAX_DEPTH: usize = 128;

/// What the scanner is inside of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

/// Where the scanner is in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Before a value (at the top, after `[`, `,` in an array, or `:`).
    Value,
    /// Before a key or the end of an object (after `{` or `,` in an object).
    Key,
    /// In a key's string.
    InKey { escaped: bool },
    /// After a key, before its `:`.
    Colon,
    /// In a string value; `escape` counts the characters of an escape still to come.
    InString { escape: u8 },
    /// In a number or a literal (`true`, `false`, `null`), started at this byte.
    InScalar { start: usize },
    /// After a value, before `,` or the end of its container.
    After,
    /// The text cannot be read further.
    Broken,
}

/// The state of a scan, fed the arguments fragment by fragment.
#[derive(Debug, Clone)]
pub(super) struct Prefix {
    /// Bytes of the text scanned so far.
    scanned: usize,
    stack: Vec<Container>,
    place: Place,
    /// The longest readable cut so far: its length in bytes, the depth then, and whether it is
    /// inside a string (closed by a `"`).
    cut: Option<Cut>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cut {
    len: usize,
    depth: usize,
    in_string: bool,
}

impl Prefix {
    /// A scan of an empty text.
    pub(super) fn new() -> Self {
        Self {
            scanned: 0,
            stack: Vec::new(),
            place: Place::Value,
            cut: None,
        }
    }

    /// Scans the part of `text` not scanned yet; `text` must start with everything fed before.
    pub(super) fn feed(&mut self, text: &str) {
        let start = self.scanned.min(text.len());
        let Some(rest) = text.get(start..) else {
            // Not the text fed before: nothing more reads.
            self.place = Place::Broken;
            return;
        };
        for (offset, c) in rest.char_indices() {
            if self.place == Place::Broken {
                break;
            }
            self.step(start + offset, c);
        }
        self.scanned = text.len();
    }

    /// Bytes of `text` (the text fed) that the readable cut keeps; 0 when nothing reads yet.
    pub(super) fn readable(&self, text: &str) -> usize {
        self.cut(text).map_or(0, |c| c.len)
    }

    /// The value the readable cut of `text` (the text fed) holds, if any.
    pub(super) fn value(&self, text: &str) -> Option<Value> {
        let cut = self.cut(text)?;
        let mut closed = String::with_capacity(cut.len + cut.depth + 1);
        closed.push_str(text.get(..cut.len)?);
        if cut.in_string {
            closed.push('"');
        }
        for container in self.stack.get(..cut.depth)?.iter().rev() {
            closed.push(match container {
                Container::Object => '}',
                Container::Array => ']',
            });
        }
        serde_json::from_str(&closed).ok()
    }

    /// The readable cut: the last one marked, or the whole text when it ends with a literal
    /// (`true`, `false`, `null`; a number may still go on).
    fn cut(&self, text: &str) -> Option<Cut> {
        if let Place::InScalar { start } = self.place
            && matches!(text.get(start..), Some("true" | "false" | "null"))
        {
            return Some(Cut {
                len: text.len(),
                depth: self.stack.len(),
                in_string: false,
            });
        }
        self.cut
    }

    fn mark(&mut self, len: usize, in_string: bool) {
        self.cut = Some(Cut {
            len,
            depth: self.stack.len(),
            in_string,
        });
    }

    /// One character at byte `at`.
    fn step(&mut self, at: usize, c: char) {
        match self.place {
            Place::Value => self.value_start(at, c),
            Place::Key => match c {
                '"' => self.place = Place::InKey { escaped: false },
                '}' => self.close(at, Container::Object),
                c if c.is_ascii_whitespace() => {}
                _ => self.place = Place::Broken,
            },
            Place::InKey { escaped } => match c {
                '"' if !escaped => self.place = Place::Colon,
                '\\' if !escaped => self.place = Place::InKey { escaped: true },
                _ => self.place = Place::InKey { escaped: false },
            },
            Place::Colon => match c {
                ':' => self.place = Place::Value,
                c if c.is_ascii_whitespace() => {}
                _ => self.place = Place::Broken,
            },
            Place::InString { escape } => self.in_string(at, c, escape),
            Place::InScalar { .. } => {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.') {
                    return;
                }
                // The scalar ended just before this character.
                self.mark(at, false);
                self.place = Place::After;
                self.after(at, c);
            }
            Place::After => self.after(at, c),
            Place::Broken => {}
        }
    }

    fn value_start(&mut self, at: usize, c: char) {
        match c {
            '{' | '[' => {
                if self.stack.len() == MAX_DEPTH {
                    self.place = Place::Broken;
                    return;
                }
                let (container, place) = if c == '{' {
                    (Container::Object, Place::Key)
                } else {
                    (Container::Array, Place::Value)
                };
                self.stack.push(container);
                self.place = place;
                // An empty container reads: `{` is `{}`.
                self.mark(at + 1, false);
            }
            '"' => {
                self.place = Place::InString { escape: 0 };
                self.mark(at + 1, true);
            }
            ']' if self.stack.last() == Some(&Container::Array) => self.close(at, Container::Array),
            c if c.is_ascii_whitespace() => {}
            c if c == '-' || c.is_ascii_alphanumeric() => {
                self.place = Place::InScalar { start: at }
            }
            _ => self.place = Place::Broken,
        }
    }

    fn in_string(&mut self, at: usize, c: char, escape: u8) {
        let end = at + c.len_utf8();
        if escape > 0 {
            // `\` then one character, or `\u` then four hex digits.
            let left = if escape == 1 && c == 'u' {
                4
            } else {
                escape - 1
            };
            self.place = Place::InString { escape: left };
            if left == 0 {
                self.mark(end, true);
            }
            return;
        }
        match c {
            '"' => {
                self.place = Place::After;
                self.mark(end, false);
            }
            '\\' => self.place = Place::InString { escape: 1 },
            _ => self.mark(end, true),
        }
    }

    fn after(&mut self, at: usize, c: char) {
        match (c, self.stack.last()) {
            (',', Some(Container::Object)) => self.place = Place::Key,
            (',', Some(Container::Array)) => self.place = Place::Value,
            ('}', Some(Container::Object)) => self.close(at, Container::Object),
            (']', Some(Container::Array)) => self.close(at, Container::Array),
            (c, _) if c.is_ascii_whitespace() => {}
            _ => self.place = Place::Broken,
        }
    }

    fn close(&mut self, at: usize, container: Container) {
        if self.stack.last() != Some(&container) {
            self.place = Place::Broken;
            return;
        }
        self.stack.pop();
        self.place = Place::After;
        self.mark(at + 1, false);
    }
}

/// The value the longest readable prefix of `text` holds, if any: `{"text": "hel` is
/// `{"text": "hel"}`, `{"a": [1, 2` is `{"a": [1]}` (the `2` may go on).
#[cfg(test)]
pub(super) fn read(text: &str) -> Option<Value> {
    let mut prefix = Prefix::new();
    prefix.feed(text);
    prefix.value(text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn closes_open_strings_arrays_and_objects() {
        let cases = [
            (r#"{"text": "hel"#, Some(json!({"text": "hel"}))),
            (r#"{"text": "hello", "n"#, Some(json!({"text": "hello"}))),
            (r#"{"text": "hello", "n":"#, Some(json!({"text": "hello"}))),
            (r#"{"a": [1, 2"#, Some(json!({"a": [1]}))),
            (r#"{"a": [1, 2,"#, Some(json!({"a": [1, 2]}))),
            (r#"{"a": {"b": tr"#, Some(json!({"a": {}}))),
            (r#"{"a": true"#, Some(json!({"a": true}))),
            (r#"{"a": null}"#, Some(json!({"a": null}))),
            (r#"[{"#, Some(json!([{}]))),
            ("{", Some(json!({}))),
            (" { ", Some(json!({}))),
            ("", None),
            ("   ", None),
            ("tr", None),
        ];
        for (text, want) in cases {
            assert_eq!(read(text), want, "{text}");
        }
    }

    #[test]
    fn never_cuts_inside_an_escape_or_a_character() {
        assert_eq!(read(r#"{"t": "a\"#), Some(json!({"t": "a"})));
        assert_eq!(read(r#"{"t": "a\u00"#), Some(json!({"t": "a"})));
        assert_eq!(read(r#"{"t": "a\u00e9"#), Some(json!({"t": "aé"})));
        assert_eq!(read(r#"{"t": "a\"b"#), Some(json!({"t": "a\"b"})));
        assert_eq!(read(r#"{"t": "é"#), Some(json!({"t": "é"})));
        assert_eq!(read(r#"{"k\"ey": 1}"#), Some(json!({"k\"ey": 1})));
    }

    #[test]
    fn a_complete_value_reads_whole() {
        let text = r#"{"path": "out.txt", "content": "a\nb", "n": -1.5e3, "l": [true, false, null], "o": {}}"#;
        assert_eq!(read(text), serde_json::from_str(text).ok());
    }

    #[test]
    fn feeding_in_pieces_reads_as_feeding_whole() {
        let text = r#"{"text": "héllo \"w\" \u00e9", "xs": [1, 22, {"k": null}], "b": false}"#;
        for step in 1..text.len() {
            let mut prefix = Prefix::new();
            let mut end = 0;
            while end < text.len() {
                end = (end + step).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                prefix.feed(&text[..end]);
                let whole = read(&text[..end]);
                assert_eq!(prefix.value(&text[..end]), whole, "{step} {end}");
            }
        }
    }

    #[test]
    fn garbage_reads_as_nothing_without_panicking() {
        for text in [
            "}",
            "]",
            "{]",
            "[}",
            "{1:2}",
            r#"{"a" 1}"#,
            "\"",
            "{\"a\":}",
            "x{",
        ] {
            let _ = read(text);
        }
        assert_eq!(read("}"), None);
        assert_eq!(read(&"[".repeat(1000)), None);
    }
}
