//! A question to the console's operators, as they see it: what the [`Questions`](super::Questions)
//! queue holds and the live event stream carries.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

/// A question as the console shows it: everything the operator needs to decide.
#[derive(Debug, Clone, Serialize)]
pub struct Question {
    /// Unguessable: the id is the capability to answer (with the operator's session).
    pub id: String,
    /// The call's audit id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its plugin.
    pub plugin: String,
    /// The permission subject, in full.
    pub subject: Option<Subject>,
    /// The input exactly as it will run (after coercions).
    pub input: Value,
    /// SHA-256 of `input` as JSON: an answer must name it.
    pub input_sha256: String,
    /// The rule or mode that asked.
    pub reason: String,
    /// Who called.
    pub caller: String,
    /// Which front end the call came from.
    pub origin: &'static str,
    /// When the question was put.
    pub asked_at: DateTime<Utc>,
    /// When it ends unanswered.
    pub expires_at: DateTime<Utc>,
}

/// The permission subject: a JSON pointer into the input and the value there.
#[derive(Debug, Clone, Serialize)]
pub struct Subject {
    /// The pointer (`/path`).
    pub pointer: String,
    /// The value it points at.
    pub value: Value,
}

/// An operator's answer.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Whether the call may run.
    pub approve: bool,
    /// Who answered, as the audit log names them.
    pub operator: String,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No question has this id.
    #[error("no question {0} is waiting")]
    Unknown(String),
    /// The question was answered already, ended unanswered, or its call went away.
    #[error("question {0} was already answered or has ended")]
    Ended(String),
    /// The answer names another input than the waiting call's.
    #[error("the answer was given for another input than the one waiting; reload and look again")]
    Mismatched,
}
