//! Permission rules: parse `TOOL` / `TOOL(PATTERN)` and match one against a call's tool and subject.
//! Pure string work: knows nothing of modes, of rule lists, or of the order in which rules apply;
//! path normalisation and globs are [`super::path`]'s.
//!
//! # Matching
//!
//! `TOOL` is a tool name; `*` in it matches any run of characters (`fs_*`). A rule without a
//! pattern matches every call of the tool.
//!
//! `PATTERN` is a glob matched against the call's *subject*: the input value at the tool's
//! `permission_subject` JSON pointer (after the schema's defaults are filled in). A string subject
//! is used as given; a number or boolean by its JSON text (`42`, `true`); an array's elements are
//! judged one by one (a deny or ask rule matches when one does, an allow rule only when all do).
//! A subject that cannot be judged (the tool declares none, the input has nothing or `null` there,
//! an object, an empty array) **fails closed**: deny and ask rules with a pattern match it, allow
//! rules with a pattern do not; only a rule whose tool is a wildcard (`*(./x/**)`) passes over tools
//! that declare no subject, whose files the sandbox guards all the same. `\` escapes a glob
//! metacharacter; `tool()` matches only the empty string.
//!
//! A pattern is a *path pattern* unless it is empty, contains `://`, or contains whitespace without
//! starting with `/`, `./`, `../` or `~/`. So `./src/**`, `src/*.rs`, `*.md`, `.env`, `make*` and
//! `./My Documents/**` are path patterns; `git commit*`, `npm run *` and `https://example.com/*` are
//! *plain patterns*. Start a pattern with `./` to make sure it is read as a path.
//!
//! - Plain patterns match the subject as given, and their `*` matches any characters, `/` and
//!   newlines included: `shell(git commit*)` also matches `git commit -m x && rm -rf ~`.
//! - Path patterns and the subject are first normalised lexically (no file system access, no `~`
//!   expansion): empty and `.` segments are dropped, `..` removes the segment before it, a trailing
//!   `/` is dropped. `./src/x.rs`, `src//x.rs` and `src/a/../x.rs` all become `src/x.rs`;
//!   `src/../../etc` becomes `../etc`; `/..` stays `/`. In a path pattern `*` and `?` stay within
//!   one segment and `**` crosses segments. `..` may appear only at the start of a relative or `~`
//!   pattern.
//! - A path is *anchored* at `/` (absolute), at `~` (home) or at the working directory (relative),
//!   and may climb out of its anchor with leading `..` segments. An **allow** rule's path pattern
//!   matches only paths with the same anchor that climb exactly as far: `./src/**` matches
//!   `src/x.rs` but neither `/src/x.rs` nor `src/../../etc/passwd` (`../etc/passwd`), and `**`
//!   matches only paths that stay inside the working directory. **Deny** and **ask** rules, which
//!   restrict, match more widely: their glob is applied to the whole normalised path, so
//!   `deny = ["read_file(**/.env)"]` also catches `/home/u/.env` and `../.env`.
//! - Inside the sandbox `/` *is* the granted directory and `~` is a folder named `~`, so a path
//!   is also judged **as the guest sees it** and **where it really leads**: mapped through the
//!   plugin's directory grants and walked on the real filesystem with links followed
//!   ([`super::Mounts`]). Deny and ask rules match when the path as written, as the guest sees it,
//!   or where it leads matches (`./secrets/**` catches `/secrets/k`, `alias/k` for a link `alias ->
//!   secrets`, and `link/../secrets/k`); an allow rule must match both the path as written and where
//!   it leads. When a path rule names the tool and the path leads out of every grant (`..` above
//!   it, a link out of it), the gate refuses the call with a message saying so.

use std::fmt;
use std::str::FromStr;

use globset::GlobMatcher;
use serde::Serialize;

use super::path::{Anchor, NormalPath, compile_glob, escape_glob, is_match, is_path_pattern};
pub(super) use super::subject::{Subject, SubjectText, Unjudged};

mod problem;

pub use self::problem::RuleProblem;

/// One permission rule: `TOOL` or `TOOL(PATTERN)`; see the module docs for how it matches.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: ToolMatcher,
    pattern: Option<Pattern>,
}

/// A tool name, or a glob over tool names with `*` (`fs_*`): which tools a grant reaches.
#[derive(Debug, Clone)]
pub struct ToolPattern {
    text: String,
    tool: ToolMatcher,
}

impl ToolPattern {
    /// Parse `text` as a rule's tool part is parsed: letters, digits, `_`, `-` and `*`.
    pub fn parse(text: &str) -> Result<Self, RuleProblem> {
        Ok(Self {
            text: text.to_owned(),
            tool: parse_tool(text)?,
        })
    }

    /// Whether it names `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        match &self.tool {
            ToolMatcher::Name(name) => name == tool,
            ToolMatcher::Glob(glob) => is_match(glob, tool),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl PartialEq for ToolPattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

#[derive(Debug, Clone)]
enum ToolMatcher {
    Name(String),
    Glob(GlobMatcher),
}

#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "rules are compiled once per plugin load; boxing buys nothing"
)]
enum Pattern {
    /// Matched against the subject as given.
    Plain(GlobMatcher),
    /// Matched against the normalised subject path.
    Path {
        anchor: Anchor,
        up: usize,
        /// Glob over the segments after the anchor and the leading `..`s (allow rules).
        rest: GlobMatcher,
        /// Glob over the whole normalised path (deny and ask rules).
        full: GlobMatcher,
        /// Glob over the path as the guest's root sees it (`./x`, `/x` and `x` alike); `None` for
        /// patterns that climb out of the root, which no guest path can reach.
        guest: Option<GlobMatcher>,
        /// For a pattern `P/**`, `full` and `guest` for `P` itself: a deny or ask rule on a
        /// folder's contents covers the folder, whose rename or removal would move them all.
        own: Option<(GlobMatcher, Option<GlobMatcher>)>,
    },
}

/// How far a rule should reach: permissive rules narrowly, restrictive rules widely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// For allow rules: a path must share the pattern's anchor and climb exactly as far.
    Narrow,
    /// For deny and ask rules: the glob alone decides, over the whole normalised path.
    Wide,
}

/// Why a rule string was rejected, with the rule and the list it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {}rule {rule:?}{}: {problem}",
    .list.map(|l| format!("{l} ")).unwrap_or_default(),
    .scope.map(|s| format!(" ({s} policy)")).unwrap_or_default())]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// The list the rule was in (`allow`, `ask`, `deny`), when known.
    pub list: Option<RuleKind>,
    /// The policy the rule was in, when known.
    pub scope: Option<Scope>,
    /// What is wrong with it.
    pub problem: RuleProblem,
}

/// Which list a rule belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleKind {
    /// Calls it matches run without asking.
    Allow,
    /// Calls it matches need approval.
    Ask,
    /// Calls it matches never run.
    Deny,
}

impl fmt::Display for RuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        })
    }
}

/// Which policy a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// The global `[permissions]` of toolhost.toml.
    Global,
    /// The policy of the tool's plugin.
    Plugin,
    /// The profile of the caller (`[[callers]]`).
    Caller,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Global => "global",
            Self::Plugin => "plugin",
            Self::Caller => "caller",
        })
    }
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Self, RuleError> {
        let fail = |problem| RuleError {
            rule: text.to_owned(),
            list: None,
            scope: None,
            problem,
        };
        let (tool, pattern) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let inner = text[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| fail(RuleProblem::MissingParen))?;
                (&text[..open], Some(inner))
            }
        };
        let tool = parse_tool(tool).map_err(fail)?;
        let pattern = pattern.map(parse_pattern).transpose().map_err(fail)?;
        Ok(Self {
            text: text.to_owned(),
            tool,
            pattern,
        })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Rule {
    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule matches a call of `tool` whose subject is `subject`.
    ///
    /// A subject that cannot be judged (missing, `null`, an object, an empty array, or a tool that
    /// declares none) fails closed: restrictive rules match it, allow rules do not. Of an array,
    /// every element is judged: a restrictive rule matches when one element does, an allow rule
    /// only when all do.
    pub(super) fn matches(&self, tool: &str, subject: &Subject<'_>, reach: Reach) -> bool {
        if !self.matches_tool(tool) {
            return false;
        }
        let Some(pattern) = &self.pattern else {
            return true;
        };
        match (subject.texts(), reach) {
            // `*(./x/**)` is about tools that have a subject; one naming the tool is about it alone.
            (Err(Unjudged::Undeclared), _) if matches!(self.tool, ToolMatcher::Glob(_)) => false,
            (Err(_), reach) => reach == Reach::Wide,
            (Ok(texts), Reach::Wide) => texts.iter().any(|t| pattern.matches_wide(t)),
            (Ok(texts), Reach::Narrow) => texts.iter().all(|t| pattern.matches_narrow(t)),
        }
    }

    /// Whether the rule names `tool`, whatever its pattern.
    pub(super) fn matches_tool(&self, tool: &str) -> bool {
        match &self.tool {
            ToolMatcher::Name(name) => name == tool,
            ToolMatcher::Glob(glob) => is_match(glob, tool),
        }
    }

    /// Whether the rule has a pattern, so that it looks at the subject.
    pub(super) fn has_pattern(&self) -> bool {
        self.pattern.is_some()
    }

    /// Whether the rule has a path pattern: its subject is a file the guest opens.
    pub(super) fn is_path_rule(&self) -> bool {
        matches!(self.pattern, Some(Pattern::Path { .. }))
    }

    /// The glob over guest paths of a path rule, for the sandbox's filesystem to enforce.
    pub(super) fn guest_glob(&self) -> Option<&GlobMatcher> {
        match &self.pattern {
            Some(Pattern::Path { guest, .. }) => guest.as_ref(),
            _ => None,
        }
    }
}

impl Pattern {
    /// Deny and ask rules: the subject as written, as the guest's root sees it, or where it
    /// really leads, whichever matches.
    fn matches_wide(&self, text: &SubjectText<'_>) -> bool {
        match self {
            Self::Plain(glob) => is_match(glob, text.raw()),
            Self::Path {
                full, guest, own, ..
            } => {
                let hit = |full: &GlobMatcher, guest: Option<&GlobMatcher>| {
                    is_match(full, &text.path().to_string())
                        || guest.is_some_and(|g| {
                            text.lexical_guest().is_some_and(|p| is_match(g, &p))
                                || matches!(text.resolved(), Some(Ok(r)) if is_match(g, &r.guest))
                        })
                };
                hit(full, guest.as_ref()) || own.as_ref().is_some_and(|(f, g)| hit(f, g.as_ref()))
            }
        }
    }

    /// Allow rules: the subject as written must match narrowly, and where it really leads too.
    fn matches_narrow(&self, text: &SubjectText<'_>) -> bool {
        match self {
            Self::Plain(glob) => is_match(glob, text.raw()),
            Self::Path {
                anchor,
                up,
                rest,
                guest,
                ..
            } => {
                let path = text.path();
                let written =
                    path.anchor == *anchor && path.up == *up && is_match(rest, &path.rest);
                written
                    && match text.resolved() {
                        None => true,
                        Some(Ok(r)) => guest.as_ref().is_some_and(|g| is_match(g, &r.guest)),
                        Some(Err(_)) => false,
                    }
            }
        }
    }
}

/// The narrowest rule that allows exactly this call: `tool` without a single subject, else
/// `tool(subject)` with glob metacharacters escaped and paths normalised (written `./like/this` when
/// the `./` is needed or was given).
pub(super) fn suggest(tool: &str, subject: &Subject<'_>) -> String {
    let Some(text) = subject.single() else {
        return tool.to_owned();
    };
    let raw = text.raw();
    let literal = escape_glob(raw);
    if !is_path_pattern(&literal) {
        return format!("{tool}({literal})");
    }
    let path = text.path();
    let text = if path.anchor != Anchor::Relative || path.up > 0 {
        path.to_string()
    } else if path.rest.is_empty() {
        ".".to_owned()
    } else if raw.starts_with("./")
        || path.rest == "~"
        || path.rest.contains(|c: char| c == '/' || c.is_whitespace())
    {
        format!("./{}", path.rest)
    } else {
        path.rest.clone()
    };
    format!("{tool}({})", escape_glob(&text))
}

fn parse_tool(tool: &str) -> Result<ToolMatcher, RuleProblem> {
    if tool.is_empty() {
        return Err(RuleProblem::EmptyTool);
    }
    if tool.contains(')') {
        return Err(RuleProblem::UnopenedParen);
    }
    if let Some(c) = tool
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*')))
    {
        return Err(RuleProblem::ToolChar(c));
    }
    if tool.contains('*') {
        Ok(ToolMatcher::Glob(compile_glob(tool, false)?))
    } else {
        Ok(ToolMatcher::Name(tool.to_owned()))
    }
}

fn parse_pattern(pattern: &str) -> Result<Pattern, RuleProblem> {
    if !is_path_pattern(pattern) {
        return Ok(Pattern::Plain(compile_glob(pattern, false)?));
    }
    let path = NormalPath::of_pattern(pattern)?;
    let guest = match (path.anchor, path.up) {
        (_, 1..) => None,
        (Anchor::Home, 0) if path.rest.is_empty() => Some("~".to_owned()),
        (Anchor::Home, 0) => Some(format!("~/{}", path.rest)),
        (Anchor::Root | Anchor::Relative, 0) => Some(path.rest.clone()),
    };
    let own = match path.rest.strip_suffix("/**") {
        Some(inner) if !inner.is_empty() => {
            let inner = NormalPath {
                rest: inner.to_owned(),
                ..path.clone()
            };
            let guest = guest
                .as_deref()
                .and_then(|g| g.strip_suffix("/**"))
                .map(|g| compile_glob(g, true))
                .transpose()?;
            Some((compile_glob(&inner.to_string(), true)?, guest))
        }
        _ => None,
    };
    Ok(Pattern::Path {
        anchor: path.anchor,
        up: path.up,
        rest: compile_glob(&path.rest, true)?,
        full: compile_glob(&path.to_string(), true)?,
        guest: guest.map(|g| compile_glob(&g, true)).transpose()?,
        own,
    })
}

#[cfg(test)]
mod tests;
