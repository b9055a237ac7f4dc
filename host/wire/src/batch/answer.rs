//! The answer to a batch, in the shape its API expects, in the order the calls were given. Pure: it
//! writes results, it never runs a call. Each API's shape is in its own module (`anthropic`,
//! `openai`, `responses`).
//!
//! A call that had no id is answered with a `null` id; the content says what was wrong.

use serde::Serialize;
use serde_json::Value;

use super::format::Format;
use super::result::CallResult;
use super::{anthropic, openai, responses};

/// A finished batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchReport {
    /// The batch's id: every call's `parent_id` in the audit log.
    pub batch_id: String,
    /// The format of the message, and of the answer.
    pub format: Format,
    /// One result per call, in the order the calls were given.
    pub results: Vec<CallResult>,
}

impl BatchReport {
    /// When every call was refused as `rate_limited`: the longest wait any of them was told, for
    /// the HTTP answer's `Retry-After` (`429`). `None` when any call got further.
    pub fn all_rate_limited(&self) -> Option<std::time::Duration> {
        let mut longest = std::time::Duration::ZERO;
        for r in &self.results {
            if r.outcome.error_kind() != Some(toolhost_call::call::ErrorKind::RateLimited) {
                return None;
            }
            longest = longest.max(r.outcome.retry_after.unwrap_or_default());
        }
        (!self.results.is_empty()).then_some(longest)
    }

    /// The answer to send back to the API.
    pub fn answer(&self) -> Value {
        let items: Vec<Value> = self.results.iter().map(|r| item(self.format, r)).collect();
        match self.format {
            Format::Anthropic => anthropic::answer(items),
            Format::OpenAi => openai::answer(items),
            Format::OpenAiResponses => responses::answer(items),
        }
    }

    /// Whether any call's result is an error.
    pub fn has_errors(&self) -> bool {
        self.results.iter().any(|r| r.outcome.is_error())
    }
}

/// One call's result as its API shapes it: a `tool_result` block, a `tool` message, or a
/// `function_call_output` item.
pub fn item(format: Format, result: &CallResult) -> Value {
    match format {
        Format::Anthropic => anthropic::item(result),
        Format::OpenAi => openai::item(result),
        Format::OpenAiResponses => responses::item(result),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use toolhost_call::call::{CallOutcome, ErrorKind};

    pub(in crate::batch) fn report(format: Format) -> BatchReport {
        let outcome = |content: &str, kind: Option<ErrorKind>| match kind {
            Some(kind) => CallOutcome::failed("audit-id", kind, content.into()),
            None => CallOutcome::ok("audit-id", content.into(), None),
        };
        BatchReport {
            batch_id: "b".into(),
            format,
            results: vec![
                CallResult {
                    index: 0,
                    id: Some("a".into()),
                    name: Some("echo".into()),
                    outcome: outcome("hi", None),
                },
                CallResult {
                    index: 1,
                    id: None,
                    name: None,
                    outcome: outcome("no id", Some(ErrorKind::InvalidInput)),
                },
            ],
        }
    }
}
