//! OpenAI Chat Completions: an assistant message's `tool_calls` (or a whole chat completion, or the
//! array itself) in, one `{"role":"tool","tool_call_id","content"}` message per call out, errors as
//! text; tools declared as `{type: "function", function: {name, description, parameters}}`.
//!
//! Pure shapes of this one API: the batch, its errors, detection and the order of calls are shared
//! (`parse`, `answer`, `tools`); nothing here runs a call.

use serde_json::{Value, json};
use toolhost_call::tool::ToolSpec;

use super::calls::{
    BrokenCall, CallError, ParseError, ParsedCall, arguments, push, ready, require, text, type_of,
};
use super::format::Format;
use super::result::CallResult;

const SHAPE: &str = "an assistant message with `tool_calls`, a chat completion with `choices`, or the `tool_calls` array";

/// The calls of `message`, in order.
pub(super) fn calls(message: &Value) -> Result<Vec<ParsedCall>, ParseError> {
    let shape = || ParseError::Shape {
        format: Format::OpenAi,
        expected: SHAPE,
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
    if let (Some(_), Some(kind)) = (&id, type_of(call))
        && kind != "function"
    {
        let error = CallError::UnsupportedType {
            kind: kind.to_string(),
        };
        return Err(BrokenCall { id, name, error });
    }
    let (id, name) = require(id, name, "id", "function.name")?;
    let input = arguments(&name, function.and_then(|f| f.get("arguments")));
    ready(id, name, input)
}

/// One call's result: a `tool` message.
pub(super) fn item(result: &CallResult) -> Value {
    let o = &result.outcome;
    json!({
        "role": "tool",
        "tool_call_id": result.id,
        "content": o.content,
    })
}

/// The answer: the `tool` messages, one per call.
pub(super) fn answer(items: Vec<Value>) -> Value {
    Value::Array(items)
}

/// One tool, declared as Chat Completions wants it.
pub(super) fn definition(spec: &ToolSpec) -> Value {
    let (name, description, schema) = (&spec.name, &spec.description, &spec.input_schema);
    json!({
        "type": "function",
        "function": { "name": name, "description": description, "parameters": schema },
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::answer::tests::report;
    use super::super::parse::tests::{auto, summary};
    use super::super::tools::{definition, tests::echo};
    use super::*;

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
    fn a_broken_call_is_an_error_for_that_call_alone() {
        let b = auto(json!({"tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "calc", "arguments": "{\"a\": 1,"}},
            {"type": "function", "function": {"name": "calc", "arguments": "{}"}},
            {"id": "c", "type": "function", "function": {"arguments": "{}"}},
            {"id": "d", "type": "custom", "custom": {"name": "x", "input": "y"}},
            {"id": "e", "type": "function", "function": {"name": "calc", "arguments": "{}"}},
            7
        ]}));
        let errors: Vec<Option<&CallError>> = b
            .calls
            .iter()
            .map(|c| c.as_ref().err().map(|b| &b.error))
            .collect();
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
    fn declares_a_tool_for_openai_chat() {
        let spec = echo();
        assert_eq!(
            definition(&spec, Format::OpenAi),
            json!({"type": "function", "function": {"name": "echo", "description": "Returns the text.",
                   "parameters": {"type": "object"}}})
        );
    }
}
