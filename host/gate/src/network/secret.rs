//! Secret values and their redaction. A [`Secret`] never prints its value (`Debug` and `Display` show
//! `[redacted]`); a [`Redactor`] replaces every occurrence of the plugin's secrets in text that leaves
//! the sandbox: results, errors, guest logs, progress messages and captured stdout/stderr.

use std::fmt;

/// What replaces a secret's value wherever it would be shown.
pub const REDACTED: &str = "[redacted]";

/// A secret value: read with [`Secret::expose`], never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that must send it (an env var or a header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Replaces secret values in text with [`REDACTED`].
///
/// Each secret is searched for as written and in the escaped forms it takes inside JSON text and in
/// percent-encoded URLs, so a guest that echoes a secret in structured output or a URL is caught too.
/// Longer needles go first, so a secret containing another is replaced whole.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    needles: Vec<Secret>,
}

impl Redactor {
    /// A redactor for these secret values (empty values are ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Secret>) -> Self {
        let mut needles: Vec<Secret> = Vec::new();
        for s in secrets {
            let raw = s.expose();
            if raw.is_empty() {
                continue;
            }
            let json = serde_json::to_string(raw).unwrap_or_default();
            let json = json
                .get(1..json.len().saturating_sub(1))
                .unwrap_or_default()
                .to_string();
            for form in [raw.to_string(), json, percent_encode(raw)] {
                if !form.is_empty() && !needles.iter().any(|n| n.0 == form) {
                    needles.push(Secret(form));
                }
            }
        }
        needles.sort_by_key(|n| std::cmp::Reverse(n.0.len()));
        Self { needles }
    }

    /// A redactor for this one's secrets and `other`'s.
    pub fn join(&self, other: &Redactor) -> Self {
        let mut needles = self.needles.clone();
        for n in &other.needles {
            if !needles.contains(n) {
                needles.push(n.clone());
            }
        }
        needles.sort_by_key(|n| std::cmp::Reverse(n.0.len()));
        Self { needles }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every secret replaced.
    pub fn redact(&self, text: String) -> String {
        let mut text = text;
        for n in &self.needles {
            if text.contains(n.expose()) {
                text = text.replace(n.expose(), REDACTED);
            }
        }
        text
    }

    /// [`Self::redact`] for optional text.
    pub fn redact_opt(&self, text: Option<String>) -> Option<String> {
        text.map(|t| self.redact(t))
    }

    /// [`Self::redact`] for text that arrives in pieces (a plugin's streamed partial output), so
    /// that a secret split across two pieces is caught too: `piece` joins the tail `held` back from
    /// the pieces before, the whole is redacted, and what is returned may be passed on now; the
    /// last bytes, which could still begin a secret (one byte fewer than the longest), stay in
    /// `held` for the next piece. At the stream's end, `held` is passed on as it is.
    pub fn redact_piece(&self, held: &mut String, piece: &str) -> String {
        held.push_str(piece);
        let text = self.redact(std::mem::take(held));
        let keep = self.needles.first().map_or(0, |n| n.0.len() - 1);
        let mut cut = text.len().saturating_sub(keep);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        held.push_str(&text[cut..]);
        let mut now = text;
        now.truncate(cut);
        now
    }
}

/// Percent-encode everything but RFC 3986 unreserved characters.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_the_value() {
        let s = Secret::new("hunter2-hunter2");
        assert_eq!(format!("{s} {s:?}"), "[redacted] [redacted]");
    }

    #[test]
    fn replaces_raw_json_escaped_and_percent_encoded_forms() {
        let a = Secret::new("tok/en\"with+quote");
        let r = Redactor::new([&a]);
        let text = format!(
            "raw {} json {} url {}",
            a.expose(),
            serde_json::to_string(a.expose()).unwrap(),
            percent_encode(a.expose())
        );
        assert_eq!(
            r.redact(text),
            "raw [redacted] json \"[redacted]\" url [redacted]"
        );
    }

    #[test]
    fn longer_secrets_first() {
        let short = Secret::new("abcdefgh");
        let long = Secret::new("abcdefgh-ijkl");
        let r = Redactor::new([&short, &long]);
        assert_eq!(
            r.redact("x abcdefgh-ijkl y abcdefgh".into()),
            "x [redacted] y [redacted]"
        );
    }

    #[test]
    fn a_secret_split_across_streamed_pieces_is_redacted() {
        let r = Redactor::new([&Secret::new("s3cr3t-tok3n")]);
        let pieces = [
            "before s3c",
            "r3t-t",
            "ok3n after, and s3cr3t-tok3n",
            " whole ",
            "é",
            "s3",
        ];
        let mut held = String::new();
        let mut seen = String::new();
        for p in pieces {
            seen.push_str(&r.redact_piece(&mut held, p));
        }
        seen.push_str(&held);
        assert_eq!(
            seen,
            format!("before {REDACTED} after, and {REDACTED} whole és3")
        );
        // Byte by byte, too: no piece ever shows more than a secret's first bytes would.
        let text = "xs3cr3t-tok3ny";
        let (mut held, mut seen) = (String::new(), String::new());
        for c in text.chars() {
            let now = r.redact_piece(&mut held, &c.to_string());
            assert!(!now.contains("s3cr3t"), "{now}");
            seen.push_str(&now);
        }
        seen.push_str(&held);
        assert_eq!(seen, format!("x{REDACTED}y"));
        // Nothing to redact: nothing held back.
        let none = Redactor::new([]);
        let mut held = String::new();
        assert_eq!(none.redact_piece(&mut held, "abc"), "abc");
        assert!(held.is_empty());
    }
}
