//! Reads the tool calls out of an LLM API message: Anthropic `tool_use` blocks, OpenAI Chat
//! `tool_calls`, OpenAI Responses `function_call` items. Pure and total: any JSON value gives a
//! [`Batch`] or a [`ParseError`], never a panic, and nothing here runs a call.
//!
//! A call that cannot be run (no id, no name, arguments that are not JSON, a repeated id) stays in
//! the batch with a [`CallError`], so that it is answered in its place and the others still run.
//! Only a message that holds no recognisable batch at all is a [`ParseError`].

use std::collections::HashSet;

use serde_json::Value;

use super::calls::{Batch, BrokenCall, CallError, ParseError, ParsedCall, id_and_name, type_of};
use super::format::{Format, FormatChoice};
use super::{anthropic, openai, responses};

/// Parses `text` as JSON, then as [`parse()`] does.
pub fn parse_text(text: &str, choice: FormatChoice) -> Result<Batch, ParseError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| ParseError::NotJson(e.to_string()))?;
    parse(&value, choice)
}

/// Reads the batch out of `message`, in the format chosen or, for [`FormatChoice::Auto`], the one
/// its shape shows.
pub fn parse(message: &Value, choice: FormatChoice) -> Result<Batch, ParseError> {
    let format = match choice {
        FormatChoice::Named(f) => f,
        FormatChoice::Auto => detect(message)?,
    };
    let mut calls = match format {
        Format::Anthropic => anthropic::calls(message)?,
        Format::OpenAi => openai::calls(message)?,
        Format::OpenAiResponses => responses::calls(message)?,
    };
    mark_duplicates(&mut calls);
    Ok(Batch { format, calls })
}

/// Which format `message` is, from marks only one API leaves.
pub fn detect(message: &Value) -> Result<Format, ParseError> {
    let mut seen: Vec<Format> = Vec::new();
    let mut saw = |f: Format| {
        if !seen.contains(&f) {
            seen.push(f);
        }
    };
    match message {
        Value::Array(items) => {
            for item in items {
                match type_of(item) {
                    Some("tool_use") => saw(Format::Anthropic),
                    Some("function_call") => saw(Format::OpenAiResponses),
                    Some("function") if item.get("function").is_some_and(Value::is_object) => {
                        saw(Format::OpenAi)
                    }
                    _ => {}
                }
            }
        }
        Value::Object(map) => {
            if map.contains_key("tool_calls") || map.contains_key("choices") {
                saw(Format::OpenAi);
            }
            if map.get("output").is_some_and(Value::is_array) {
                saw(Format::OpenAiResponses);
            }
            if let Some(Value::Array(blocks)) = map.get("content")
                && blocks.iter().any(|b| type_of(b) == Some("tool_use"))
            {
                saw(Format::Anthropic);
            }
        }
        _ => {}
    }
    match seen.as_slice() {
        [] => Err(ParseError::Undetected),
        [one] => Ok(*one),
        [first, second, ..] => Err(ParseError::Ambiguous {
            first: *first,
            second: *second,
        }),
    }
}

/// A call whose id an earlier call already has is not run: the API could not tell their results
/// apart, and running a write twice by mistake is worse than not running it.
fn mark_duplicates(calls: &mut [ParsedCall]) {
    let mut seen: HashSet<String> = HashSet::new();
    for call in calls {
        let Some(id) = id_and_name(call).0 else {
            continue;
        };
        if seen.insert(id.to_owned()) {
            continue;
        }
        if let Ok(c) = call {
            *call = Err(BrokenCall {
                id: Some(c.id.clone()),
                name: Some(c.name.clone()),
                error: CallError::DuplicateId { id: c.id.clone() },
            });
        }
    }
}

#[cfg(test)]
pub(super) mod tests;
