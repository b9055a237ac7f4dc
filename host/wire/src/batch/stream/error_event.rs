//! What an API's error event says, as the message the calls it breaks are answered with. Apart from
//! `assemble` because each API's reader (`anthropic`, `chat`, `responses`) reads error events too,
//! and `assemble` picks the reader.

use serde_json::Value;
use toolhost_call::text;

/// The longest error message from the model's stream kept.
const MAX_MESSAGE: usize = 1024;

/// What an error event says: `error.message` (Anthropic, Chat), `message` (Responses), or the
/// error's type or code, cut to a bounded length.
pub(super) fn error_message(event: &Value) -> String {
    let error = event.get("error").unwrap_or(event);
    let message = [
        error.get("message"),
        event.get("message"),
        error.get("type"),
        error.get("code"),
        Some(error),
    ]
    .into_iter()
    .flatten()
    .find_map(Value::as_str)
    .unwrap_or("the stream sent an error event without a message");
    text::prefix(message, MAX_MESSAGE).to_string()
}
