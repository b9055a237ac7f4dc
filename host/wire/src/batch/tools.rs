//! The tools as each LLM API wants them declared, so that an agent can pass the list straight to
//! the API. Pure; in catalog (name) order. Each API's shape is in its own module (`anthropic`,
//! `openai`, `responses`); this one only lists and dispatches.

use serde_json::Value;
use toolhost_call::tool::ToolSpec;

use super::format::Format;
use super::{anthropic, openai, responses};

/// Every tool of `specs` (a catalog, in name order), declared for `format`.
pub fn definitions<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>, format: Format) -> Value {
    Value::Array(specs.into_iter().map(|s| definition(s, format)).collect())
}

/// One tool, declared for `format`.
pub fn definition(spec: &ToolSpec, format: Format) -> Value {
    match format {
        Format::Anthropic => anthropic::definition(spec),
        Format::OpenAi => openai::definition(spec),
        Format::OpenAiResponses => responses::definition(spec),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use serde_json::json;

    use super::*;
    use toolhost_call::tool::Hints;

    /// A tool to declare.
    pub(in crate::batch) fn echo() -> ToolSpec {
        ToolSpec {
            name: "echo".into(),
            title: Some("Echo".into()),
            description: "Returns the text.".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            hints: Hints::default(),
            permission_subject: None,
        }
    }
}
