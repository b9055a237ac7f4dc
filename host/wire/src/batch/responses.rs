//! OpenAI Responses: `function_call` output items (or a response object with an `output` array) in,
//! one `{"type":"function_call_output","call_id","output"}` item per call out; tools declared as
//! `{type: "function", name, description, parameters, strict: false}`. `strict` is explicit because
//! the Responses API assumes strict schemas otherwise, and tool schemas are not written to its
//! strict subset.
//!
//! Pure shapes of this one API: the batch, its errors, detection and the order of calls are shared
//! (`parse`, `answer`, `tools`); nothing here runs a call.

use serde_json::{Value, json};
use toolhost_call::tool::ToolSpec;

use super::calls::{ParseError, ParsedCall, arguments, push, ready, require, text, type_of};
use super::format::Format;
use super::result::CallResult;

const SHAPE: &str = "an array of output items, or a response object with an `output` array";

/// The calls of `message`, in order.
pub(super) fn calls(message: &Value) -> Result<Vec<ParsedCall>, ParseError> {
    let items: &[Value] = match message {
        Value::Array(items) => items,
        Value::Object(map) => match map.get("output") {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(ParseError::Shape {
                    format: Format::OpenAiResponses,
                    expected: SHAPE,
                });
            }
        },
        _ => {
            return Err(ParseError::Shape {
                format: Format::OpenAiResponses,
                expected: SHAPE,
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
    let (id, name) = require(text(item, "call_id"), text(item, "name"), "call_id", "name")?;
    let input = arguments(&name, item.get("arguments"));
    ready(id, name, input)
}

/// One call's result: a `function_call_output` item.
pub(super) fn item(result: &CallResult) -> Value {
    let o = &result.outcome;
    json!({
        "type": "function_call_output",
        "call_id": result.id,
        "output": o.content,
    })
}

/// The answer: the `function_call_output` items, one per call.
pub(super) fn answer(items: Vec<Value>) -> Value {
    Value::Array(items)
}

/// One tool, declared as the Responses API wants it.
pub(super) fn definition(spec: &ToolSpec) -> Value {
    let (name, description, schema) = (&spec.name, &spec.description, &spec.input_schema);
    json!({
        "type": "function",
        "name": name,
        "description": description,
        "parameters": schema,
        "strict": false,
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

    #[test]
    fn declares_a_tool_for_openai_responses() {
        let spec = echo();
        assert_eq!(
            definition(&spec, Format::OpenAiResponses),
            json!({"type": "function", "name": "echo", "description": "Returns the text.",
                   "parameters": {"type": "object"}, "strict": false})
        );
    }
}
