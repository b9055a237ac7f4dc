//! The answer to a batch, in the shape its API expects, in the order the calls were given. Pure.
//!
//! - Anthropic: one user message, one `tool_result` block per `tool_use`
//!   (`tool_use_id`, `content`, `is_error`).
//! - OpenAI Chat: one `{"role":"tool","tool_call_id","content"}` message per call, errors as text.
//! - OpenAI Responses: one `{"type":"function_call_output","call_id","output"}` item per call.
//!
//! A call that had no id is answered with a `null` id; the content says what was wrong.

use serde::Serialize;
use serde_json::{Value, json};

use super::format::Format;
use crate::call::CallOutcome;

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
    /// The answer to send back to the API.
    pub fn answer(&self) -> Value {
        let items: Vec<Value> = self.results.iter().map(|r| item(self.format, r)).collect();
        match self.format {
            Format::Anthropic => json!({ "role": "user", "content": items }),
            Format::OpenAi | Format::OpenAiResponses => Value::Array(items),
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
    let o = &result.outcome;
    match format {
        Format::Anthropic => json!({
            "type": "tool_result",
            "tool_use_id": result.id,
            "content": o.content,
            "is_error": o.is_error(),
        }),
        Format::OpenAi => json!({
            "role": "tool",
            "tool_call_id": result.id,
            "content": o.content,
        }),
        Format::OpenAiResponses => json!({
            "type": "function_call_output",
            "call_id": result.id,
            "output": o.content,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::ErrorKind;

    fn report(format: Format) -> BatchReport {
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

    #[test]
    fn anthropic_answers_with_one_user_message_of_tool_results() {
        assert_eq!(
            report(Format::Anthropic).answer(),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "hi", "is_error": false},
                {"type": "tool_result", "tool_use_id": null, "content": "no id", "is_error": true}
            ]})
        );
    }

    #[test]
    fn openai_answers_with_one_tool_message_per_call() {
        assert_eq!(
            report(Format::OpenAi).answer(),
            json!([
                {"role": "tool", "tool_call_id": "a", "content": "hi"},
                {"role": "tool", "tool_call_id": null, "content": "no id"}
            ])
        );
    }

    #[test]
    fn responses_answers_with_function_call_outputs() {
        let r = report(Format::OpenAiResponses);
        assert!(r.has_errors());
        assert_eq!(
            r.answer(),
            json!([
                {"type": "function_call_output", "call_id": "a", "output": "hi"},
                {"type": "function_call_output", "call_id": null, "output": "no id"}
            ])
        );
    }
}
