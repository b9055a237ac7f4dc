//! What every tool of this plugin shares: parsing input, errors that name the path and the OS
//! error, plain-text output, and the shape of a tool's spec.

use std::io;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::exports::toolhost::plugin::tool::{ToolError, ToolOutput, ToolSpec};
use crate::toolhost::plugin::types::ToolHints;

pub(crate) fn failed(msg: impl Into<String>) -> ToolError {
    ToolError::Failed(msg.into())
}

pub(crate) fn invalid(msg: impl Into<String>) -> ToolError {
    ToolError::InvalidInput(msg.into())
}

/// "cannot read 'x/y.txt': No such file or directory (os error 44)".
pub(crate) fn io_failed(verb: &str, path: impl AsRef<Path>, err: io::Error) -> ToolError {
    failed(format!(
        "cannot {verb} '{}': {err}",
        path.as_ref().display()
    ))
}

pub(crate) fn parse<'a, T: Deserialize<'a>>(tool: &str, input: &'a str) -> Result<T, ToolError> {
    serde_json::from_str(input).map_err(|e| invalid(format!("invalid input for '{tool}': {e}")))
}

pub(crate) fn text_only(content: String) -> ToolOutput {
    ToolOutput {
        content,
        structured: None,
    }
}

pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The default path: the granted directory, mounted at `.`.
pub(crate) fn dot() -> String {
    ".".into()
}

pub(crate) fn object_schema(properties: Value, required: &[&str]) -> String {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
    .to_string()
}

pub(crate) fn spec(
    name: &str,
    title: &str,
    description: &str,
    input_schema: String,
    hints: ToolHints,
) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: Some(title.into()),
        description: description.into(),
        input_schema,
        output_schema: None,
        hints,
        permission_subject: Some("/path".into()),
    }
}
