//! The tools as each LLM API wants them declared, so that an agent can pass the list straight to
//! the API. Pure; in catalog (name) order.
//!
//! - `anthropic`: `{name, description, input_schema}`
//! - `openai` (Chat Completions): `{type: "function", function: {name, description, parameters}}`
//! - `openai-responses`: `{type: "function", name, description, parameters, strict: false}`;
//!   `strict` is explicit because the Responses API assumes strict schemas otherwise, and tool
//!   schemas are not written to its strict subset.

use serde_json::{Value, json};

use super::format::Format;
use crate::tool::ToolSpec;

/// Every tool of `specs` (a catalog, in name order), declared for `format`.
pub fn definitions<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>, format: Format) -> Value {
    Value::Array(specs.into_iter().map(|s| definition(s, format)).collect())
}

/// One tool, declared for `format`.
pub fn definition(spec: &ToolSpec, format: Format) -> Value {
    let (name, description, schema) = (&spec.name, &spec.description, &spec.input_schema);
    match format {
        Format::Anthropic => {
            json!({ "name": name, "description": description, "input_schema": schema })
        }
        Format::OpenAi => json!({
            "type": "function",
            "function": { "name": name, "description": description, "parameters": schema },
        }),
        Format::OpenAiResponses => json!({
            "type": "function",
            "name": name,
            "description": description,
            "parameters": schema,
            "strict": false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Hints;

    #[test]
    fn declares_a_tool_in_each_format() {
        let spec = ToolSpec {
            name: "echo".into(),
            title: Some("Echo".into()),
            description: "Returns the text.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            hints: Hints::default(),
            permission_subject: None,
        };
        assert_eq!(
            definition(&spec, Format::Anthropic),
            json!({"name": "echo", "description": "Returns the text.", "input_schema": {"type": "object"}})
        );
        assert_eq!(
            definition(&spec, Format::OpenAi),
            json!({"type": "function", "function": {"name": "echo", "description": "Returns the text.",
                   "parameters": {"type": "object"}}})
        );
        assert_eq!(
            definition(&spec, Format::OpenAiResponses),
            json!({"type": "function", "name": "echo", "description": "Returns the text.",
                   "parameters": {"type": "object"}, "strict": false})
        );
    }
}
