//! Reads the tool calls out of an LLM API message: Anthropic `tool_use` blocks, OpenAI Chat
//! `tool_calls`, OpenAI Responses `function_call` items. Pure and total: any JSON value gives a
//! [`Batch`] or a [`ParseError`], never a panic, and nothing here runs a call.
//!
//! A call that cannot be run (no id, no name, arguments that are not JSON, a repeated id) stays in
//! the batch with a [`CallError`], so that it is answered in its place and the others still run.
//! Only a message that holds no recognisable batch at all is a [`ParseError`].

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::format::{Format, FormatChoice};

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

/// One tool call as read from the message.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    /// The id the result must carry back (`id`, or `call_id` for Responses), when the call has one.
    pub id: Option<String>,
    /// The tool's name, when the call has one.
    pub name: Option<String>,
    /// The input to run the tool with; or why the call cannot run. When it is `Ok`, `id` and `name`
    /// are both present.
    pub input: Result<Value, CallError>,
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

const ANTHROPIC_SHAPE: &str =
    "an assistant message with a `content` array of blocks, or that array";
const OPENAI_SHAPE: &str = "an assistant message with `tool_calls`, a chat completion with `choices`, or the `tool_calls` array";
const RESPONSES_SHAPE: &str =
    "an array of output items, or a response object with an `output` array";

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
        Format::Anthropic => anthropic(message)?,
        Format::OpenAi => openai(message)?,
        Format::OpenAiResponses => responses(message)?,
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

fn anthropic(message: &Value) -> Result<Vec<ParsedCall>, ParseError> {
    let shape = || ParseError::Shape {
        format: Format::Anthropic,
        expected: ANTHROPIC_SHAPE,
    };
    let blocks: &[Value] = match message {
        Value::Array(blocks) => blocks,
        Value::Object(map) => match map.get("content") {
            Some(Value::Array(blocks)) => blocks,
            // A text-only message: no calls.
            Some(Value::String(_)) => &[],
            _ => return Err(shape()),
        },
        _ => return Err(shape()),
    };
    let mut calls = Vec::new();
    for block in blocks.iter().filter(|b| type_of(b) == Some("tool_use")) {
        push(&mut calls, tool_use(block))?;
    }
    Ok(calls)
}

fn tool_use(block: &Value) -> ParsedCall {
    let id = text(block, "id");
    let name = text(block, "name");
    let input = match (&id, &name) {
        (None, _) => Err(CallError::MissingId { field: "id" }),
        (_, None) => Err(CallError::MissingName { field: "name" }),
        _ => Ok(match block.get("input") {
            None | Some(Value::Null) => empty_object(),
            Some(v) => v.clone(),
        }),
    };
    ParsedCall { id, name, input }
}

fn openai(message: &Value) -> Result<Vec<ParsedCall>, ParseError> {
    let shape = || ParseError::Shape {
        format: Format::OpenAi,
        expected: OPENAI_SHAPE,
    };
    let message = match message.get("choices") {
        // A whole chat completion: the first choice's message.
        Some(choices) => choices
            .get(0)
            .and_then(|c| c.get("message"))
            .filter(|m| m.is_object())
            .ok_or_else(shape)?,
        None => message,
    };
    let tool_calls: &[Value] = match message {
        Value::Array(calls) => calls,
        Value::Object(map) => match map.get("tool_calls") {
            Some(Value::Array(calls)) => calls,
            // A message without calls.
            None | Some(Value::Null) if map.contains_key("role") || map.contains_key("content") => {
                &[]
            }
            _ => return Err(shape()),
        },
        _ => return Err(shape()),
    };
    let mut calls = Vec::new();
    for call in tool_calls {
        push(&mut calls, tool_call(call))?;
    }
    Ok(calls)
}

fn tool_call(call: &Value) -> ParsedCall {
    let id = text(call, "id");
    let function = call.get("function");
    let name = function.and_then(|f| text(f, "name"));
    let input = match (&id, type_of(call), &name) {
        (None, _, _) => Err(CallError::MissingId { field: "id" }),
        (_, Some(kind), _) if kind != "function" => Err(CallError::UnsupportedType {
            kind: kind.to_string(),
        }),
        (_, _, None) => Err(CallError::MissingName {
            field: "function.name",
        }),
        (_, _, Some(tool)) => arguments(tool, function.and_then(|f| f.get("arguments"))),
    };
    ParsedCall { id, name, input }
}

fn responses(message: &Value) -> Result<Vec<ParsedCall>, ParseError> {
    let items: &[Value] = match message {
        Value::Array(items) => items,
        Value::Object(map) => match map.get("output") {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(ParseError::Shape {
                    format: Format::OpenAiResponses,
                    expected: RESPONSES_SHAPE,
                });
            }
        },
        _ => {
            return Err(ParseError::Shape {
                format: Format::OpenAiResponses,
                expected: RESPONSES_SHAPE,
            });
        }
    };
    let mut calls = Vec::new();
    for item in items.iter().filter(|i| type_of(i) == Some("function_call")) {
        push(&mut calls, function_call(item))?;
    }
    Ok(calls)
}

fn function_call(item: &Value) -> ParsedCall {
    let id = text(item, "call_id");
    let name = text(item, "name");
    let input = match (&id, &name) {
        (None, _) => Err(CallError::MissingId { field: "call_id" }),
        (_, None) => Err(CallError::MissingName { field: "name" }),
        (_, Some(tool)) => arguments(tool, item.get("arguments")),
    };
    ParsedCall { id, name, input }
}

/// OpenAI sends arguments as a JSON string; some compatible servers send the object itself, or
/// nothing (or an empty string) for a tool without parameters.
fn arguments(tool: &str, arguments: Option<&Value>) -> Result<Value, CallError> {
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

fn push(calls: &mut Vec<ParsedCall>, call: ParsedCall) -> Result<(), ParseError> {
    if calls.len() == MAX_CALLS {
        return Err(ParseError::TooManyCalls { max: MAX_CALLS });
    }
    calls.push(call);
    Ok(())
}

/// A call whose id an earlier call already has is not run: the API could not tell their results
/// apart, and running a write twice by mistake is worse than not running it.
fn mark_duplicates(calls: &mut [ParsedCall]) {
    let mut seen: HashSet<String> = HashSet::new();
    for call in calls {
        let Some(id) = &call.id else { continue };
        if !seen.insert(id.clone()) && call.input.is_ok() {
            call.input = Err(CallError::DuplicateId { id: id.clone() });
        }
    }
}

fn type_of(value: &Value) -> Option<&str> {
    value.get("type").and_then(Value::as_str)
}

/// A non-empty string field.
fn text(value: &Value, field: &str) -> Option<String> {
    value
        .get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn auto(v: Value) -> Batch {
        parse(&v, FormatChoice::Auto).unwrap()
    }

    /// (id, name, input) of every call.
    type Summary<'a> = (
        Option<&'a str>,
        Option<&'a str>,
        Result<&'a Value, &'a CallError>,
    );

    fn summary(b: &Batch) -> Vec<Summary<'_>> {
        b.calls
            .iter()
            .map(|c| (c.id.as_deref(), c.name.as_deref(), c.input.as_ref()))
            .collect()
    }

    #[test]
    fn reads_anthropic_messages_and_content_arrays() {
        let content = json!([
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
            {"type": "tool_use", "id": "toolu_2", "name": "list_dir"}
        ]);
        let message = json!({"role": "assistant", "content": content.clone()});
        for v in [content, message] {
            let b = auto(v);
            assert_eq!(b.format, Format::Anthropic);
            assert_eq!(
                summary(&b),
                vec![
                    (
                        Some("toolu_1"),
                        Some("read_file"),
                        Ok(&json!({"path": "a"}))
                    ),
                    (Some("toolu_2"), Some("list_dir"), Ok(&json!({}))),
                ]
            );
        }
    }

    #[test]
    fn reads_openai_chat_messages_completions_and_call_arrays() {
        let calls = json!([
            {"id": "call_1", "type": "function", "function": {"name": "calc", "arguments": "{\"a\":1}"}},
            {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": ""}}
        ]);
        let message = json!({"role": "assistant", "content": null, "tool_calls": calls.clone()});
        let completion = json!({"object": "chat.completion", "choices": [{"index": 0, "message": message.clone()}]});
        for v in [calls, message, completion] {
            let b = auto(v);
            assert_eq!(b.format, Format::OpenAi);
            assert_eq!(
                summary(&b),
                vec![
                    (Some("call_1"), Some("calc"), Ok(&json!({"a": 1}))),
                    (Some("call_2"), Some("now"), Ok(&json!({}))),
                ]
            );
        }
    }

    #[test]
    fn reads_responses_items_and_response_objects() {
        let items = json!([
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "echo", "arguments": "{\"text\":\"hi\"}"}
        ]);
        let response = json!({"object": "response", "output": items.clone()});
        for v in [items, response] {
            let b = auto(v);
            assert_eq!(b.format, Format::OpenAiResponses);
            assert_eq!(
                summary(&b),
                vec![(Some("call_1"), Some("echo"), Ok(&json!({"text": "hi"})))]
            );
        }
    }

    #[test]
    fn a_broken_call_is_an_error_for_that_call_alone() {
        let b = auto(json!({"tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "calc", "arguments": "{\"a\": 1,"}},
            {"type": "function", "function": {"name": "calc", "arguments": "{}"}},
            {"id": "c", "type": "function", "function": {"arguments": "{}"}},
            {"id": "d", "type": "custom", "custom": {"name": "x", "input": "y"}},
            {"id": "e", "type": "function", "function": {"name": "calc", "arguments": "{}"}},
            7
        ]}));
        let errors: Vec<Option<&CallError>> =
            b.calls.iter().map(|c| c.input.as_ref().err()).collect();
        assert!(
            matches!(errors[0], Some(CallError::ArgumentsNotJson { tool, .. }) if tool == "calc")
        );
        assert_eq!(errors[1], Some(&CallError::MissingId { field: "id" }));
        assert_eq!(
            errors[2],
            Some(&CallError::MissingName {
                field: "function.name"
            })
        );
        assert_eq!(
            errors[3],
            Some(&CallError::UnsupportedType {
                kind: "custom".into()
            })
        );
        assert_eq!(errors[4], None);
        assert_eq!(errors[5], Some(&CallError::MissingId { field: "id" }));
        assert!(
            errors[0]
                .unwrap()
                .to_string()
                .contains("not valid JSON (EOF while parsing"),
            "{:?}",
            errors[0]
        );
    }

    #[test]
    fn a_repeated_id_is_not_run_twice() {
        let b = auto(json!([
            {"type": "tool_use", "id": "x", "name": "write", "input": {}},
            {"type": "tool_use", "id": "x", "name": "write", "input": {}}
        ]));
        assert!(b.calls[0].input.is_ok());
        assert_eq!(
            b.calls[1].input,
            Err(CallError::DuplicateId { id: "x".into() })
        );
    }

    #[test]
    fn detection_needs_a_mark_and_refuses_mixtures() {
        for v in [
            json!({}),
            json!([]),
            json!(null),
            json!("text"),
            json!({"role": "assistant", "content": "hi"}),
        ] {
            assert_eq!(
                parse(&v, FormatChoice::Auto),
                Err(ParseError::Undetected),
                "{v}"
            );
        }
        let mixed = json!([{"type": "tool_use"}, {"type": "function_call"}]);
        assert!(matches!(
            parse(&mixed, FormatChoice::Auto),
            Err(ParseError::Ambiguous { .. })
        ));
    }

    #[test]
    fn a_named_format_reads_messages_without_calls_and_refuses_other_shapes() {
        let text_only = json!({"role": "assistant", "content": "done"});
        assert!(
            parse(&text_only, FormatChoice::Named(Format::Anthropic))
                .unwrap()
                .calls
                .is_empty()
        );
        assert!(
            parse(&text_only, FormatChoice::Named(Format::OpenAi))
                .unwrap()
                .calls
                .is_empty()
        );
        let e = parse(&text_only, FormatChoice::Named(Format::OpenAiResponses)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "not an OpenAI Responses message: expected an array of output items, or a response object with an `output` array"
        );
        assert!(parse(&json!(3), FormatChoice::Named(Format::Anthropic)).is_err());
        assert!(parse(&json!({"choices": []}), FormatChoice::Named(Format::OpenAi)).is_err());
    }

    #[test]
    fn refuses_more_than_the_maximum_of_calls() {
        let block = json!({"type": "function_call", "call_id": "c", "name": "echo"});
        let items = Value::Array(vec![block; MAX_CALLS + 1]);
        assert_eq!(
            parse(&items, FormatChoice::Auto),
            Err(ParseError::TooManyCalls { max: MAX_CALLS })
        );
    }

    #[test]
    fn invalid_json_text_is_a_parse_error() {
        assert!(matches!(
            parse_text("{", FormatChoice::Auto),
            Err(ParseError::NotJson(_))
        ));
        let deep = "[".repeat(10_000);
        assert!(matches!(
            parse_text(&deep, FormatChoice::Auto),
            Err(ParseError::NotJson(_))
        ));
    }

    #[test]
    fn never_panics_on_odd_values() {
        let odd = [
            json!({"content": [null, 1, "x", {"type": "tool_use"}, {"type": "tool_use", "id": 5, "name": ["x"]}]}),
            json!({"tool_calls": [{"id": "a", "function": "calc"}, {"id": "b", "type": 3, "function": {"name": "x", "arguments": 4}}]}),
            json!({"choices": [1]}),
            json!({"choices": {"0": {}}}),
            json!({"output": [{"type": "function_call", "call_id": "", "name": ""}]}),
            json!([{"type": "function", "function": {}}]),
        ];
        for v in odd {
            for choice in ["auto", "anthropic", "openai", "openai-responses"] {
                let _ = parse(&v, choice.parse().unwrap());
            }
        }
    }
}
