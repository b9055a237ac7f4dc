//! The types every call shares, from the front end through the pipeline to the audit log: what went
//! wrong ([`ErrorKind`]), the answer ([`CallOutcome`]), progress, and the approval question.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A progress report from a running plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Units done so far.
    pub done: u64,
    /// Units in all, when known.
    pub total: Option<u64>,
    /// What is being done.
    pub message: String,
}

/// Receives progress reports; called on the executing task, so it must not block.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// What the gate asks an approver.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalRequest {
    /// The tool to run.
    pub tool: String,
    /// The plugin that provides it.
    pub plugin: String,
    /// The validated input.
    pub input: Value,
    /// The permission subject: its JSON pointer and value, shown first and in full.
    pub subject: Option<(String, Value)>,
    /// Why the gate asks, and which rule would allow the call without asking.
    pub reason: String,
}

/// The longest rest of the input shown in an approval question (the subject is always shown whole).
const MAX_SHOWN_INPUT: usize = 2000;

impl ApprovalRequest {
    /// The question put to a person: the tool and the permission subject first, in full, so that a
    /// long input cannot push the path out of view; then the rest of the input, shortened if needed.
    /// Control and bidi characters are escaped ([`crate::text`]), so it cannot redraw the asker's screen.
    pub fn question(&self) -> String {
        let mut question = format!(
            "Allow toolhost to run the tool '{}' (plugin '{}')?\n{}\n",
            self.tool, self.plugin, self.reason
        );
        let mut rest = self.input.clone();
        let label = match &self.subject {
            Some((pointer, value)) => {
                question.push_str(&format!("\n{pointer}: {value}\n"));
                if let (Some(key), Some(object)) = (top_level_key(pointer), rest.as_object_mut()) {
                    object.remove(&key);
                }
                "Other input"
            }
            None => "Input",
        };
        let mut shown = serde_json::to_string_pretty(&rest).unwrap_or_else(|_| rest.to_string());
        if crate::text::truncate_at_boundary(&mut shown, MAX_SHOWN_INPUT) {
            shown.push_str("\n[... input shortened]");
        }
        question.push_str(&format!("\n{label}:\n{shown}"));
        crate::text::multi_line(&question).into_owned()
    }
}

/// `/path` is the key `path`; deeper pointers have none.
fn top_level_key(pointer: &str) -> Option<String> {
    let key = pointer.strip_prefix('/')?;
    (!key.contains('/')).then(|| key.replace("~1", "/").replace("~0", "~"))
}

/// How an approval question ended. Only [`Answer::Approved`] runs the call; the others each
/// have their own audit value and their own sentence to the model, because "nobody answered"
/// and "the answer was for another input" are not "the user said no".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A person approved this call.
    Approved,
    /// A person declined it.
    Declined,
    /// Nobody answered: the question timed out, or could not be put (the client failed or went
    /// away). Says why, for the operator and the model.
    Unanswered(String),
    /// An answer came, but for another input than this call's (a replayed or stale answer).
    Mismatched,
}

impl Answer {
    /// `Approved` when `yes`, else `Declined`: for approvers whose person says yes or no.
    pub fn from_yes(yes: bool) -> Self {
        if yes { Self::Approved } else { Self::Declined }
    }
}

/// Answers `ask` decisions: the CLI asks on a terminal, MCP uses elicitation.
pub trait Approver: Send + Sync {
    /// Put the question; resolves to how it was answered.
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;

    /// True once this approver has handed the question to the client, to be answered in a new
    /// request (2026-07-28): the front end then cancels the call, and the pipeline records it as
    /// ended with `input_required` rather than cancelled. By default, never.
    fn deferred(&self) -> bool {
        false
    }
}

/// Why a call did not succeed. Stable names: they appear in the audit log and in metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No tool of that name.
    UnknownTool,
    /// The input did not match the schema (or the plugin said `invalid-input`).
    InvalidInput,
    /// The permission gate refused the call, or an approver said no.
    Denied,
    /// The wall-clock deadline passed.
    Timeout,
    /// The fuel budget ran out.
    OutOfFuel,
    /// The guest tried to grow memory beyond its limit.
    MemoryLimit,
    /// The guest trapped (a panic, unreachable, stack overflow, ...).
    Trap,
    /// The tool ran and reported failure.
    ToolFailed,
    /// The structured output did not match the tool's output schema, or was not JSON.
    BadOutput,
    /// The caller cancelled the call (or the daemon did, shutting down).
    Cancelled,
    /// The call ended by asking the client for input: a 2026-07-28 approval question. Not a
    /// failure of the tool; the client's retry with the answer is a new call.
    InputRequired,
    /// Too many calls at once, or the daemon is shutting down; try again (shortly, or at
    /// another daemon).
    Busy,
    /// The tool's circuit breaker is open: it failed too often in a row and is not run until its
    /// cool-down has passed (`toolhost_gate::breaker`). Not a failure of this call's input.
    Suspended,
    /// The caller used up its share (`toolhost_gate::quota`): too many calls in the window, too
    /// many at once, or too much fuel; the message says when to retry. Not a failure of the tool.
    RateLimited,
    /// The audit log could not be written and the policy refuses unaudited calls.
    AuditUnavailable,
    /// A fault in the host itself.
    Internal,
}

impl ErrorKind {
    /// The snake_case name used in audit lines and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InvalidInput => "invalid_input",
            Self::Denied => "denied",
            Self::Timeout => "timeout",
            Self::OutOfFuel => "out_of_fuel",
            Self::MemoryLimit => "memory_limit",
            Self::Trap => "trap",
            Self::ToolFailed => "tool_failed",
            Self::BadOutput => "bad_output",
            Self::Cancelled => "cancelled",
            Self::InputRequired => "input_required",
            Self::Busy => "busy",
            Self::Suspended => "suspended",
            Self::RateLimited => "rate_limited",
            Self::AuditUnavailable => "audit_unavailable",
            Self::Internal => "internal",
        }
    }

    /// True when a failure of this kind says something about the tool's health: the tool ran, or
    /// was being run, and failed. These are the failures a breaker (`toolhost_gate::breaker`) may
    /// count and the only ones its statistics keep. False for the kinds decided before the tool ran
    /// or by the caller (unknown tool, invalid input, denied, cancelled, input required, busy,
    /// suspended, audit unavailable): they say nothing about whether the tool works.
    pub fn is_tool_fault(self) -> bool {
        match self {
            Self::Timeout
            | Self::OutOfFuel
            | Self::MemoryLimit
            | Self::Trap
            | Self::ToolFailed
            | Self::BadOutput
            | Self::Internal => true,
            Self::UnknownTool
            | Self::InvalidInput
            | Self::Denied
            | Self::Cancelled
            | Self::InputRequired
            | Self::Busy
            | Self::Suspended
            | Self::RateLimited
            | Self::AuditUnavailable => false,
        }
    }
}

/// The answer to a call, shaped for a model: failures are outcomes too, never panics.
///
/// Serialized flat, as front ends and `toolhost call --json` show it:
/// `{call_id, content, structured, is_error, error_kind}`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The id of this call in the audit log.
    pub call_id: String,
    /// Text for the model: the tool's content, or what went wrong and what to try.
    pub content: String,
    /// Whether the call succeeded, and what it returned or why it failed.
    pub status: CallStatus,
    /// When a `rate_limited` call could be made again, at the earliest.
    pub retry_after: Option<std::time::Duration>,
}

/// How a call ended: a failure always has its kind, and only a success carries structured output.
#[derive(Debug, Clone, PartialEq)]
pub enum CallStatus {
    /// The tool ran and succeeded.
    Ok {
        /// Structured JSON, when the tool returned it.
        structured: Option<Value>,
    },
    /// The call failed; the kind says why (the content says it for the model).
    Failed(ErrorKind),
}

impl CallOutcome {
    /// A success with `content` and, when the tool returned it, `structured` output.
    pub fn ok(call_id: impl Into<String>, content: String, structured: Option<Value>) -> Self {
        Self {
            call_id: call_id.into(),
            content,
            status: CallStatus::Ok { structured },
            retry_after: None,
        }
    }

    /// A failure of `kind`, explained to the model by `content`.
    pub fn failed(call_id: impl Into<String>, kind: ErrorKind, content: String) -> Self {
        Self {
            call_id: call_id.into(),
            content,
            status: CallStatus::Failed(kind),
            retry_after: None,
        }
    }

    /// True on every failure.
    pub fn is_error(&self) -> bool {
        matches!(self.status, CallStatus::Failed(_))
    }

    /// Why the call failed; `None` on success.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self.status {
            CallStatus::Ok { .. } => None,
            CallStatus::Failed(kind) => Some(kind),
        }
    }

    /// The structured output of a success, when the tool returned one.
    pub fn structured(&self) -> Option<&Value> {
        match &self.status {
            CallStatus::Ok { structured } => structured.as_ref(),
            CallStatus::Failed(_) => None,
        }
    }
}

impl Serialize for CallOutcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("CallOutcome", 5)?;
        s.serialize_field("call_id", &self.call_id)?;
        s.serialize_field("content", &self.content)?;
        s.serialize_field("structured", &self.structured())?;
        s.serialize_field("is_error", &self.is_error())?;
        s.serialize_field("error_kind", &self.error_kind())?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn serializes_outcomes_flat() {
        let ok = CallOutcome::ok("c1", "hi".into(), Some(json!({"n": 1})));
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"call_id": "c1", "content": "hi", "structured": {"n": 1}, "is_error": false, "error_kind": null})
        );
        let failed = CallOutcome::failed("c2", ErrorKind::Timeout, "too slow".into());
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            json!({"call_id": "c2", "content": "too slow", "structured": null, "is_error": true, "error_kind": "timeout"})
        );
        assert_eq!(failed.error_kind(), Some(ErrorKind::Timeout));
        assert_eq!(ok.structured(), Some(&json!({"n": 1})));
    }
}
