//! The fleet's questions: where a daemon of a fleet puts the questions its calls ask, so that
//! every daemon's console lists them and any can answer. The state store implements it (a
//! PostgreSQL `[state]`); one daemon alone has none, and its questions stay in its memory.

use async_trait::async_trait;
use serde_json::Value;

use super::question::{AnswerError, Question, Verdict};

/// The store did not answer.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BoardError(pub String);

/// What the fleet's daemons tell each other about questions, as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A daemon put a question.
    Asked {
        /// The daemon whose call asks.
        daemon: String,
        /// The question.
        id: String,
    },
    /// A question was answered or withdrawn.
    Ended {
        /// The daemon whose call asked.
        daemon: String,
        /// The question.
        id: String,
    },
    /// An operator asked `daemon` to cancel its call `id`.
    Cancel {
        /// The daemon running the call.
        daemon: String,
        /// The call's audit id.
        id: String,
        /// Who asked, as the audit log names them.
        operator: String,
    },
    /// `daemon`'s running or recent calls changed.
    Calls {
        /// The daemon.
        daemon: String,
    },
    /// Notices may have been missed (the store's connection was lost and is back): look again.
    Missed,
}

/// The questions every daemon of a fleet shares. Exactly one answer to a question wins across
/// the fleet; the daemon whose call waits hears of it through a [`Notice`].
#[async_trait]
pub trait Board: Send + Sync {
    /// Put this daemon's `question` where every console sees it.
    async fn post(&self, question: &Question) -> Result<(), BoardError>;
    /// Take this daemon's question `id` down: its call stopped waiting.
    async fn withdraw(&self, id: &str) -> Result<(), BoardError>;
    /// The questions waiting on other daemons, as the console shows them (each names its daemon).
    async fn elsewhere(&self) -> Result<Vec<Value>, BoardError>;
    /// The question `id` as the console shows it, if it still waits.
    async fn find(&self, id: &str) -> Result<Option<Value>, BoardError>;
    /// Answer question `id` (of any daemon) for the input whose digest is `input_sha256`.
    async fn answer(
        &self,
        id: &str,
        input_sha256: &str,
        verdict: &Verdict,
    ) -> Result<Result<(), AnswerError>, BoardError>;
    /// The answer given to question `id`: `None` while it waits (or once it is gone); an ended
    /// question without an operator's answer was withdrawn.
    async fn verdict(&self, id: &str) -> Result<Option<Option<Verdict>>, BoardError>;
    /// Say how much longer someone at this daemon's console can answer (`here_ms`, 0 for
    /// nobody) and how this daemon is (`health`); hear how much longer someone at another
    /// daemon's console can (0 for nobody).
    async fn attend(&self, here_ms: i64, health: &Value) -> Result<i64, BoardError>;
    /// Every daemon's last word on its health: `{"daemon", "health", "said_ms_ago"}`.
    async fn daemons(&self) -> Result<Vec<Value>, BoardError>;
    /// This daemon's name on the board.
    fn daemon(&self) -> &str;
    /// Show every console this daemon's `calls` (`{"running": […], "recent": […]}`).
    async fn show_calls(&self, calls: &Value) -> Result<(), BoardError>;
    /// The calls the other live daemons show, with each daemon's name.
    async fn calls_elsewhere(&self) -> Result<Vec<(String, Value)>, BoardError>;
    /// Ask the other daemon that shows call `id` running to cancel it for `operator`: which
    /// daemon was asked, if one shows it.
    async fn cancel_elsewhere(
        &self,
        id: &str,
        operator: &str,
    ) -> Result<Option<String>, BoardError>;
}

#[cfg(test)]
pub(super) mod fake;
