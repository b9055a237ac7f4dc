//! The result of one call of a batch: what the answer is written from, in each API's shape
//! (`anthropic`, `openai`, `responses`), gathered by `answer`.

use serde::Serialize;
use toolhost_call::call::CallOutcome;

/// The result of one call of a batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallResult {
    /// The call's position in the batch, from 0.
    pub index: usize,
    /// The id the model gave the call.
    pub id: Option<String>,
    /// The tool it named.
    pub name: Option<String>,
    /// What happened; `call_id` is the call's id in the audit log.
    pub outcome: CallOutcome,
}
