//! What the console asks for: the query string's raw values, parsed once into a typed [`Filter`]
//! (every bad value refused here, with the valid ones named), and how a line is tested against it:
//! cheap byte checks first, the parsed record last. Pure; no I/O.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use memchr::memmem::Finder;
use serde::Deserialize;
use toolhost_call::call::ErrorKind;

use super::cursor::{Cursor, CursorError};
use crate::audit::record::{AuditRecord, Decision, Outcome};

/// Records per page when the query string names no `limit`.
pub const DEFAULT_LIMIT: usize = 100;
/// The largest `limit` a query string may ask for.
pub const MAX_LIMIT: usize = 1000;

/// The query string as it arrives (`?tool=…&outcome=…`), every value still text: the HTTP layer
/// deserializes this (e.g. with axum's `Query`) and calls [`parse`](Self::parse), so that a bad
/// value is answered with our message rather than a deserializer's. Empty values count as absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Params {
    /// Exact tool name.
    pub tool: Option<String>,
    /// `ok`, `error`, `cancelled`, `input_required`, or an error kind such as `timeout`.
    pub outcome: Option<String>,
    /// Substring of the caller's subject.
    pub caller: Option<String>,
    /// A decision kind: `allowed`, `denied`, `asked`, ….
    pub decision: Option<String>,
    /// RFC 3339; calls that started at or after it.
    pub since: Option<String>,
    /// RFC 3339; calls that started before it.
    pub until: Option<String>,
    /// Case-insensitive substring of the whole line.
    pub q: Option<String>,
    /// Records per page, 1 to [`MAX_LIMIT`]; [`DEFAULT_LIMIT`] when absent.
    pub limit: Option<String>,
    /// The `next` of the previous page.
    pub cursor: Option<String>,
}

/// One page request, validated: what [`query`](super::query) takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Which records.
    pub filter: Filter,
    /// Where to go on from; `None` for the newest records.
    pub cursor: Option<Cursor>,
    /// How many records at most.
    pub limit: usize,
}

/// A query-string value that means nothing: the message is meant for the console's user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// `outcome` names neither an outcome nor an error kind.
    #[error("unknown outcome {0:?}: expected ok, error, cancelled, input_required or an error kind ({kinds})", kinds = error_kind_names())]
    Outcome(String),
    /// `outcome=unfinished`: such calls have no end line yet.
    #[error(
        "outcome \"unfinished\" is not in the audit log's end records; running calls are in the live view"
    )]
    Unfinished,
    /// `decision` names no decision kind.
    #[error("unknown decision {0:?}: expected one of {kinds}", kinds = DecisionKind::names())]
    Decision(String),
    /// `since` or `until` is not a timestamp.
    #[error("{param} {given:?} is not an RFC 3339 timestamp (such as 2025-06-01T12:00:00Z)")]
    Time {
        /// `since` or `until`.
        param: &'static str,
        /// The value given.
        given: String,
    },
    /// `since` is not before `until`.
    #[error("since must be before until")]
    EmptyWindow,
    /// `limit` is not a number from 1 to [`MAX_LIMIT`].
    #[error("limit {0:?} is not a number from 1 to {MAX_LIMIT}")]
    Limit(String),
    /// `cursor` was not made by this server.
    #[error(transparent)]
    Cursor(#[from] CursorError),
    /// `cursor` was not made by the fleet's audit index.
    #[error("cursor {0:?} was not made by the fleet's audit index; start again without a cursor")]
    FleetCursor(String),
}

impl Params {
    /// The typed request, or the first value that is wrong.
    pub fn parse(&self) -> Result<Request, ParamError> {
        let time = |param: &'static str, value: &Option<String>| {
            present(value)
                .map(|given| {
                    DateTime::parse_from_rfc3339(given)
                        .map(|t| t.with_timezone(&Utc))
                        .map_err(|_| ParamError::Time {
                            param,
                            given: given.to_owned(),
                        })
                })
                .transpose()
        };
        let filter = Filter {
            tool: present(&self.tool).map(str::to_owned),
            outcome: present(&self.outcome).map(str::parse).transpose()?,
            caller: present(&self.caller).map(str::to_owned),
            decision: present(&self.decision).map(str::parse).transpose()?,
            since: time("since", &self.since)?,
            until: time("until", &self.until)?,
            q: present(&self.q).map(Needle::new),
        };
        if let (Some(since), Some(until)) = (filter.since, filter.until)
            && since >= until
        {
            return Err(ParamError::EmptyWindow);
        }
        let limit = match present(&self.limit) {
            None => DEFAULT_LIMIT,
            Some(given) => given
                .parse()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| ParamError::Limit(given.to_owned()))?,
        };
        let cursor = present(&self.cursor).map(str::parse).transpose()?;
        Ok(Request {
            filter,
            cursor,
            limit,
        })
    }
}

/// Which end records to keep; every field left `None` keeps them all.
///
/// Not [`audit::Filter`](crate::audit::Filter), the CLI's filter over records read forwards: this one
/// also matches callers, decisions and raw text, and knows how to reject a line without parsing it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Only this tool, exactly.
    pub tool: Option<String>,
    /// Only this outcome, or only failures of this kind.
    pub outcome: Option<OutcomeFilter>,
    /// Only callers whose subject contains this (case-sensitive).
    pub caller: Option<String>,
    /// Only this kind of decision.
    pub decision: Option<DecisionKind>,
    /// Only calls that started at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// Only calls that started before this instant.
    pub until: Option<DateTime<Utc>>,
    /// Only lines containing this text, ignoring ASCII case.
    pub q: Option<Needle>,
}

/// What `outcome=` asks for: an outcome, or (more narrowly) one kind of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutcomeFilter {
    /// Records with this outcome (`ok`, `error`, `cancelled`, `input_required`).
    Outcome(Outcome),
    /// Records whose `error_kind` is this.
    ErrorKind(ErrorKind),
}

impl FromStr for OutcomeFilter {
    type Err = ParamError;

    /// An outcome name first, then an error kind. `cancelled` and `input_required` are both and
    /// select the same records either way.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.parse::<Outcome>() {
            Ok(Outcome::Unfinished) => Err(ParamError::Unfinished),
            Ok(outcome) => Ok(Self::Outcome(outcome)),
            Err(_) => ErrorKind::deserialize(serde::de::value::StrDeserializer::<
                serde::de::value::Error,
            >::new(s))
            .map(Self::ErrorKind)
            .map_err(|_| ParamError::Outcome(s.to_owned())),
        }
    }
}

/// The value, unless absent or empty (`?tool=` is no filter).
fn present(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

/// Every error kind's name, for the message of a bad `outcome`.
fn error_kind_names() -> String {
    use ErrorKind::*;
    [
        UnknownTool,
        InvalidInput,
        Denied,
        Timeout,
        OutOfFuel,
        MemoryLimit,
        Trap,
        ToolFailed,
        BadOutput,
        Busy,
        Suspended,
        AuditUnavailable,
        Internal,
    ]
    .map(ErrorKind::as_str)
    .join(", ")
}

/// The `kind` of a [`Decision`], without its details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecisionKind {
    /// [`Decision::Allowed`].
    Allowed,
    /// [`Decision::Denied`].
    Denied,
    /// [`Decision::Asking`] (begin lines only; never matches an end record).
    Asking,
    /// [`Decision::Asked`].
    Asked,
    /// [`Decision::Unanswered`].
    Unanswered,
    /// [`Decision::Mismatched`].
    Mismatched,
    /// [`Decision::Deferred`].
    Deferred,
    /// [`Decision::NotReached`].
    NotReached,
}

impl DecisionKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [Self; 8] = [
        Self::Allowed,
        Self::Denied,
        Self::Asking,
        Self::Asked,
        Self::Unanswered,
        Self::Mismatched,
        Self::Deferred,
        Self::NotReached,
    ];

    /// The kind of `decision`. Exhaustive, so a new decision fails to compile here until named.
    pub fn of(decision: &Decision) -> Self {
        match decision {
            Decision::Allowed { .. } => Self::Allowed,
            Decision::Denied { .. } => Self::Denied,
            Decision::Asking => Self::Asking,
            Decision::Asked { .. } => Self::Asked,
            Decision::Unanswered { .. } => Self::Unanswered,
            Decision::Mismatched => Self::Mismatched,
            Decision::Deferred => Self::Deferred,
            Decision::NotReached => Self::NotReached,
        }
    }

    /// The name written as `decision.kind` in audit lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::Asking => "asking",
            Self::Asked => "asked",
            Self::Unanswered => "unanswered",
            Self::Mismatched => "mismatched",
            Self::Deferred => "deferred",
            Self::NotReached => "not_reached",
        }
    }

    fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }
}

impl FromStr for DecisionKind {
    type Err = ParamError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == s)
            .ok_or_else(|| ParamError::Decision(s.to_owned()))
    }
}

/// Text to find in a line, ignoring ASCII case: kept lowercased, never empty (an empty `q` is
/// no filter, so [`Params::parse`] gives `None` instead).
#[derive(Clone, PartialEq, Eq)]
pub struct Needle(Vec<u8>);

impl Needle {
    /// The needle for `text`; case is ignored for ASCII letters only (other letters match as
    /// written), which keeps the search a byte search.
    pub fn new(text: &str) -> Self {
        Self(text.as_bytes().to_ascii_lowercase())
    }
}

impl fmt::Debug for Needle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Needle({:?})", String::from_utf8_lossy(&self.0))
    }
}

/// A [`Filter`] made ready to test many lines: its byte patterns built once.
pub(super) struct Matcher<'a> {
    filter: &'a Filter,
    /// Byte strings that every matching end line contains, as the writer writes it.
    required: Vec<Finder<'static>>,
    q: Option<Finder<'a>>,
    lowered: Vec<u8>,
}

impl<'a> Matcher<'a> {
    pub(super) fn new(filter: &'a Filter) -> Self {
        let mut required = Vec::new();
        let mut need = |bytes: Vec<u8>| required.push(Finder::new(&bytes).into_owned());
        if let Some(tool) = &filter.tool {
            need(json_field("tool", tool));
        }
        match filter.outcome {
            Some(OutcomeFilter::Outcome(outcome)) => need(json_field("outcome", outcome.as_str())),
            Some(OutcomeFilter::ErrorKind(kind)) => need(json_field("error_kind", kind.as_str())),
            None => {}
        }
        if let Some(kind) = filter.decision {
            need(format!(r#""decision":{{"kind":"{}""#, kind.as_str()).into_bytes());
        }
        // A substring of the subject appears as written in the line unless it holds a character
        // JSON escapes.
        if let Some(caller) = filter.caller.as_ref().filter(|c| !needs_escape(c)) {
            need(caller.as_bytes().to_vec());
        }
        Self {
            filter,
            required,
            q: filter.q.as_ref().map(|q| Finder::new(&q.0)),
            lowered: Vec::new(),
        }
    }

    /// False when `line` cannot be a matching end record, judged from its bytes alone: a begin
    /// line by its head, or a line missing a pattern every match has. True means "parse it".
    pub(super) fn candidate(&mut self, line: &[u8]) -> bool {
        if is_begin(line) || !self.required.iter().all(|f| f.find(line).is_some()) {
            return false;
        }
        match &self.q {
            None => true,
            Some(q) => {
                self.lowered.clear();
                self.lowered.extend(line.iter().map(u8::to_ascii_lowercase));
                q.find(&self.lowered).is_some()
            }
        }
    }

    /// Whether the parsed `record` (an end record) passes every condition.
    pub(super) fn matches(&self, record: &AuditRecord) -> bool {
        let f = self.filter;
        f.tool.as_ref().is_none_or(|tool| *tool == record.tool)
            && f.outcome.is_none_or(|wanted| match wanted {
                OutcomeFilter::Outcome(outcome) => outcome == record.outcome,
                OutcomeFilter::ErrorKind(kind) => Some(kind) == record.error_kind,
            })
            && f.caller.as_ref().is_none_or(|part| {
                record
                    .caller
                    .as_ref()
                    .is_some_and(|c| c.subject.contains(part.as_str()))
            })
            && f.decision
                .is_none_or(|kind| kind == DecisionKind::of(&record.decision))
            && f.since.is_none_or(|since| record.ts_start >= since)
            && f.until.is_none_or(|until| record.ts_start < until)
    }
}

/// `"key":"value"` as the line writer (and serde_json) writes it.
fn json_field(key: &str, value: &str) -> Vec<u8> {
    let mut bytes = format!("\"{key}\":").into_bytes();
    // Writing into memory cannot fail.
    let _ = serde_json::to_writer(&mut bytes, value);
    bytes
}

fn needs_escape(text: &str) -> bool {
    text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\')
}

/// True for a line that begins `{"v":N,"event":"begin"`, as every begin line does. Other lines,
/// including a begin line written some other way, are parsed and told apart then.
fn is_begin(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(br#"{"v":"#) else {
        return false;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    rest[digits..].starts_with(br#","event":"begin""#)
}
