//! Anthropic Messages: `tool_use` content blocks in, one user message of `tool_result` blocks out
//! (`tool_use_id`, `content`, `is_error`), tools declared as `{name, description, input_schema}`.
//!
//! Pure shapes of this one API: the batch, its errors, detection and the order of calls are shared
//! (`parse`, `answer`, `tools`); nothing here runs a call.

use serde_json::{Value, json};
use toolhost_call::tool::ToolSpec;

use super::calls::{Call, ParseError, ParsedCall, empty_object, push, require, text, type_of};
use super::format::Format;
use super::result::CallResult;

const SHAPE: &str = "an assistant message with a `content` array of blocks, or that array";

/// The calls of `message`, in order.
pub(super) fn calls(message: &Value) -> Result<Vec<ParsedCall>, ParseError> {
    let shape = || ParseError::Shape {
        format: Format::Anthropic,
        expected: SHAPE,
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
    let (id, name) = require(text(block, "id"), text(block, "name"), "id", "name")?;
    let input = match block.get("input") {
        None | Some(Value::Null) => empty_object(),
        Some(v) => v.clone(),
    };
    Ok(Call { id, name, input })
}

/// One call's result: a `tool_result` block.
pub(super) fn item(result: &CallResult) -> Value {
    let o = &result.outcome;
    json!({
        "type": "tool_result",
        "tool_use_id": result.id,
        "content": o.content,
        "is_error": o.is_error(),
    })
}

/// The answer: one user message holding every `tool_result` block.
pub(super) fn answer(items: Vec<Value>) -> Value {
    json!({ "role": "user", "content": items })
}

/// One tool, declared as Anthropic wants it.
pub(super) fn definition(spec: &ToolSpec) -> Value {
    let (name, description, schema) = (&spec.name, &spec.description, &spec.input_schema);
    json!({ "name": name, "description": description, "input_schema": schema })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::answer::tests::report;
    use super::super::parse::tests::{auto, summary};
    use super::super::tools::{definition, tests::echo};
    use super::*;

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
    fn declares_a_tool_for_anthropic() {
        let spec = echo();
        assert_eq!(
            definition(&spec, Format::Anthropic),
            json!({"name": "echo", "description": "Returns the text.", "input_schema": {"type": "object"}})
        );
    }
}
