//! Paths and globs for rule patterns: which patterns are paths, lexical path normalisation
//! ([`NormalPath`]: an anchor, how far it climbs, plain segments), and compiling and matching the
//! globs that rules and exclusions use.
//!
//! Pure string work: no file system access, no `~` expansion; knows nothing of rules, subjects or
//! modes. How a rule's pattern uses these is described in [`super::rule`]'s module docs.

use std::fmt;

use globset::{Candidate, GlobBuilder, GlobMatcher};

use super::rule::RuleProblem;

/// Whether `pattern` is matched as a path; see the module docs.
pub(super) fn is_path_pattern(pattern: &str) -> bool {
    let anchored = matches!(pattern, "." | ".." | "~")
        || ["/", "./", "../", "~/"]
            .iter()
            .any(|prefix| pattern.starts_with(prefix));
    !pattern.is_empty()
        && !pattern.contains("://")
        && (anchored || !pattern.chars().any(char::is_whitespace))
}

/// Compile `glob`; with `path`, `*` and `?` stay within one `/`-separated segment.
pub(super) fn compile_glob(glob: &str, path: bool) -> Result<GlobMatcher, RuleProblem> {
    GlobBuilder::new(glob)
        .literal_separator(path)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| RuleProblem::Glob {
            glob: glob.to_owned(),
            message: e.kind().to_string(),
        })
}

/// Whether `glob` matches `text`.
pub(super) fn is_match(glob: &GlobMatcher, text: &str) -> bool {
    glob.is_match_candidate(&Candidate::from_bytes(text.as_bytes()))
}

/// `text` with every glob metacharacter escaped, so that it matches only itself.
pub(super) fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '*' | '?' | '[' | ']' | '{' | '}') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Where a path starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Anchor {
    /// The working directory.
    Relative,
    /// `/`.
    Root,
    /// `~`.
    Home,
}

/// A lexically normalised path: an anchor, how many `..` climb out of it, then plain segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NormalPath {
    pub(super) anchor: Anchor,
    pub(super) up: usize,
    /// The remaining segments joined by `/`; never contains `.`, `..` or empty segments.
    pub(super) rest: String,
}

impl NormalPath {
    /// Normalise a subject's path: a `..` past the anchor climbs out of it (none past `/`).
    pub(super) fn of_value(path: &str) -> Self {
        let (anchor, tail) = split_anchor(path);
        let mut up = 0;
        let mut segments: Vec<&str> = Vec::new();
        for segment in tail.split('/') {
            match segment {
                "" | "." => {}
                ".." => {
                    if segments.pop().is_none() && anchor != Anchor::Root {
                        up += 1;
                    }
                }
                _ => segments.push(segment),
            }
        }
        Self {
            anchor,
            up,
            rest: segments.join("/"),
        }
    }

    /// Normalise a pattern's path: `..` only at the start of a relative or `~` pattern.
    pub(super) fn of_pattern(pattern: &str) -> Result<Self, RuleProblem> {
        let (anchor, tail) = split_anchor(pattern);
        let mut up = 0;
        let mut segments: Vec<&str> = Vec::new();
        for segment in tail.split('/') {
            match segment {
                "" | "." => {}
                ".." if segments.is_empty() && anchor != Anchor::Root => up += 1,
                ".." => return Err(RuleProblem::InnerParent),
                _ => segments.push(segment),
            }
        }
        Ok(Self {
            anchor,
            up,
            rest: segments.join("/"),
        })
    }
}

fn split_anchor(path: &str) -> (Anchor, &str) {
    if let Some(tail) = path.strip_prefix('/') {
        (Anchor::Root, tail)
    } else if path == "~" {
        (Anchor::Home, "")
    } else if let Some(tail) = path.strip_prefix("~/") {
        (Anchor::Home, tail)
    } else {
        (Anchor::Relative, path)
    }
}

impl fmt::Display for NormalPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<&str> = Vec::with_capacity(self.up + 2);
        match self.anchor {
            Anchor::Relative => {}
            Anchor::Root => parts.push(""),
            Anchor::Home => parts.push("~"),
        }
        parts.extend(std::iter::repeat_n("..", self.up));
        if !self.rest.is_empty() {
            parts.push(&self.rest);
        }
        match (self.anchor, parts.as_slice()) {
            (Anchor::Relative, []) => f.write_str("."),
            (Anchor::Root, [_]) => f.write_str("/"),
            _ => f.write_str(&parts.join("/")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_paths_lexically() {
        let show = |p: &str| NormalPath::of_value(p).to_string();
        assert_eq!(show("a/./b"), "a/b");
        assert_eq!(show("a//b/"), "a/b");
        assert_eq!(show("./src/x.rs"), "src/x.rs");
        assert_eq!(show("src/../../etc"), "../etc");
        assert_eq!(show("/a/../../etc"), "/etc");
        assert_eq!(show("/.."), "/");
        assert_eq!(show("~/../x"), "~/../x");
        assert_eq!(show(""), ".");
        assert_eq!(show("a/.."), ".");
        assert_eq!(show("~user/x"), "~user/x");
    }

    #[test]
    fn classifies_path_and_plain_patterns() {
        for path in [
            "./src/**",
            "/etc/*",
            "~/x",
            "~",
            "..",
            "../x",
            "src/*.rs",
            "**",
            "*",
            "*.md",
            ".env",
            "make*",
            "./My Documents/**",
            "/bin/sh -c *",
        ] {
            assert!(is_path_pattern(path), "{path} should be a path pattern");
        }
        for plain in [
            "git commit*",
            "npm run *",
            "https://example.com/**",
            "rm -rf /*",
            "My Documents/**",
            "",
        ] {
            assert!(!is_path_pattern(plain), "{plain} should be plain");
        }
    }
}
