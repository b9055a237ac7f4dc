//! The calls one message holds, and what can be wrong with them: the batch's types, its errors,
//! and the pieces every API's reader builds calls with (`anthropic`, `openai`, `responses`), apart
//! from [`parse()`](super::parse()), which picks the reader, so that the readers need not import it.

use serde_json::{Map, Value};

use super::format::Format;

/// The most calls one batch may hold; larger batches are refused whole, before anything runs.
pub const MAX_CALLS: usize = 1024;

/// The calls of one assistant message, in the order the model made them.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The API shape the message came in, and the one the answer is written in.
    pub format: Format,
    /// The calls, in order.
    pub calls: Vec<ParsedCall>,
}

/// One tool call as read from the message: ready to run, or broken, to be answered in its place
/// with why.
pub type ParsedCall = Result<Call, BrokenCall>;

/// A call that can run.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The id its result must carry back (`id`, or `call_id` for Responses).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The input to run the tool with.
    pub input: Value,
}

/// A call that cannot run, with as much of its id and name as the message gave.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenCall {
    /// The id its result must carry back, when the call has one.
    pub id: Option<String>,
    /// The tool's name, when the call has one.
    pub name: Option<String>,
    /// Why it cannot run.
    pub error: CallError,
}

/// The id and tool name of `call`, as far as the message gave them.
pub fn id_and_name(call: &ParsedCall) -> (Option<&str>, Option<&str>) {
    match call {
        Ok(c) => (Some(&c.id), Some(&c.name)),
        Err(b) => (b.id.as_deref(), b.name.as_deref()),
    }
}

/// The id and name a call must have (in the fields `id_field` and `name_field`), or the broken
/// call that lacks one.
pub(super) fn require(
    id: Option<String>,
    name: Option<String>,
    id_field: &'static str,
    name_field: &'static str,
) -> Result<(String, String), BrokenCall> {
    match (id, name) {
        (Some(id), Some(name)) => Ok((id, name)),
        (None, name) => Err(BrokenCall {
            id: None,
            name,
            error: CallError::MissingId { field: id_field },
        }),
        (id, None) => Err(BrokenCall {
            id,
            name: None,
            error: CallError::MissingName { field: name_field },
        }),
    }
}

/// A ready call with `input`, or, when its arguments are broken, the broken call.
pub(super) fn ready(id: String, name: String, input: Result<Value, CallError>) -> ParsedCall {
    match input {
        Ok(input) => Ok(Call { id, name, input }),
        Err(error) => Err(BrokenCall {
            id: Some(id),
            name: Some(name),
            error,
        }),
    }
}

/// Why one call of a batch cannot run. The message is the call's result, written for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The call has no id, so its result could not be matched to it.
    #[error(
        "This tool call has no `{field}`, so its result cannot be matched to it; it was not run."
    )]
    MissingId {
        /// The field that should hold the id.
        field: &'static str,
    },
    /// The call names no tool.
    #[error("This tool call names no tool (`{field}` is missing or empty); it was not run.")]
    MissingName {
        /// The field that should hold the name.
        field: &'static str,
    },
    /// The call's arguments are a string that is not JSON.
    #[error(
        "The arguments of this call to '{tool}' are not valid JSON ({reason}); it was not run. \
         Send the arguments as one JSON object."
    )]
    ArgumentsNotJson {
        /// The tool called.
        tool: String,
        /// What the JSON parser said.
        reason: String,
    },
    /// An earlier call of the batch has the same id.
    #[error(
        "An earlier call in this batch has the id '{id}'; ids must be unique, so this call was not run."
    )]
    DuplicateId {
        /// The repeated id.
        id: String,
    },
    /// A streamed call whose arguments stopped arriving before they were complete: the stream was
    /// cut, or the model's output ended (for example at its token limit) inside them.
    #[error(
        "The arguments of this call to '{tool}' were cut off before they were complete; it was not \
         run. Send the call again with its complete arguments."
    )]
    IncompleteArguments {
        /// The tool called.
        tool: String,
    },
    /// A streamed call whose arguments are larger than toolhost holds for one call.
    #[error(
        "The arguments of this call to '{tool}' are larger than {max} bytes, more than toolhost \
         accepts for one call; it was not run. Send smaller arguments, for example by splitting \
         the work into several calls."
    )]
    ArgumentsTooLarge {
        /// The tool called.
        tool: String,
        /// The limit, in bytes.
        max: usize,
    },
    /// A streamed call whose arguments may have lost a part: the stream broke while they arrived.
    #[error(
        "The stream broke while the arguments of this call to '{tool}' were arriving ({reason}); \
         it was not run. Send the call again."
    )]
    BrokenStream {
        /// The tool called.
        tool: String,
        /// What broke.
        reason: String,
    },
    /// An OpenAI tool call of a type other than `function`.
    #[error(
        "This tool call has type '{kind}'; toolhost runs only function calls, so it was not run."
    )]
    UnsupportedType {
        /// The type given.
        kind: String,
    },
}

/// Why a message holds no batch that can be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The text is not JSON.
    #[error("the message is not valid JSON: {0}")]
    NotJson(String),
    /// Nothing in the message says which API it comes from.
    #[error(
        "cannot tell which API the message comes from: it has no `tool_use` blocks, `tool_calls` or \
         `function_call` items; name the format (anthropic, openai or openai-responses)"
    )]
    Undetected,
    /// The message has the marks of two APIs.
    #[error(
        "the message looks like both {} and {}; name the format (anthropic, openai or openai-responses)",
        .first.title(), .second.title()
    )]
    Ambiguous {
        /// One format it looks like.
        first: Format,
        /// Another.
        second: Format,
    },
    /// The message does not have the shape of the named format.
    #[error("not an {} message: expected {expected}", .format.title())]
    Shape {
        /// The format asked for.
        format: Format,
        /// What that format looks like.
        expected: &'static str,
    },
    /// More calls than [`MAX_CALLS`].
    #[error("the message has more than {max} tool calls; split it")]
    TooManyCalls {
        /// The limit.
        max: usize,
    },
}

/// OpenAI sends arguments as a JSON string; some compatible servers send the object itself, or
/// nothing (or an empty string) for a tool without parameters.
pub(super) fn arguments(tool: &str, arguments: Option<&Value>) -> Result<Value, CallError> {
    match arguments {
        None | Some(Value::Null) => Ok(empty_object()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(empty_object()),
        Some(Value::String(s)) => {
            serde_json::from_str(s).map_err(|e| CallError::ArgumentsNotJson {
                tool: tool.to_string(),
                reason: e.to_string(),
            })
        }
        // Any other value is the input itself; the validator says what is wrong with it.
        Some(v) => Ok(v.clone()),
    }
}

/// Add `call`, unless the batch already holds [`MAX_CALLS`].
pub(super) fn push(calls: &mut Vec<ParsedCall>, call: ParsedCall) -> Result<(), ParseError> {
    if calls.len() == MAX_CALLS {
        return Err(ParseError::TooManyCalls { max: MAX_CALLS });
    }
    calls.push(call);
    Ok(())
}

/// The `type` field of `value`, when it is a string.
pub(super) fn type_of(value: &Value) -> Option<&str> {
    value.get("type").and_then(Value::as_str)
}

/// A non-empty string field.
pub(super) fn text(value: &Value, field: &str) -> Option<String> {
    value
        .get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// `{}`: the input of a call that gives none.
pub(super) fn empty_object() -> Value {
    Value::Object(Map::new())
}
