//! The `echo` example plugin: returns its input text, optionally repeated.
//!
//! Deliberately tiny: it is the tool the host's benchmarks call. It needs no WASI, so
//! `scripts/build-plugins.sh` builds it for `wasm32-unknown-unknown`: its component imports only
//! the contract, and each call's fresh sandbox has less to set up.

#[cfg(target_os = "unknown")]
mod arena;
#[cfg(target_os = "unknown")]
#[global_allocator]
static ALLOCATOR: arena::Bump = arena::Bump;

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "plugin",
});

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::json;
use toolhost::plugin::types::ToolHints;

const MAX_REPEAT: u64 = 1000;
const DESCRIPTION: &str = "Return the given text unchanged, optionally repeated. \
                           Useful for testing the connection to the tool host.";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    text: String,
    #[serde(default = "one")]
    repeat: u64,
}

fn one() -> u64 {
    1
}

struct Echo;

impl Guest for Echo {
    fn describe() -> Vec<ToolSpec> {
        let input = json!({
            "type": "object",
            "properties": {
                "text": {
                    "type": "string",
                    "description": "The text to return."
                },
                "repeat": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_REPEAT,
                    "default": 1,
                    "description": "How many times to repeat the text (concatenated, no separator)."
                }
            },
            "required": ["text"],
            "additionalProperties": false
        });
        let output = json!({
            "type": "object",
            "properties": {
                "text": {
                    "type": "string",
                    "description": "The returned text."
                }
            },
            "required": ["text"],
            "additionalProperties": false
        });
        vec![ToolSpec {
            name: "echo".into(),
            title: Some("Echo".into()),
            description: DESCRIPTION.into(),
            input_schema: input.to_string(),
            output_schema: Some(output.to_string()),
            hints: ToolHints::READ_ONLY | ToolHints::IDEMPOTENT,
            permission_subject: None,
        }]
    }

    fn call(name: String, input: String) -> Result<ToolOutput, ToolError> {
        if name != "echo" {
            return Err(ToolError::InvalidInput(format!(
                "unknown tool '{name}'; this plugin provides only 'echo'"
            )));
        }
        let input: Input = serde_json::from_str(&input)
            .map_err(|e| ToolError::InvalidInput(format!("invalid input for 'echo': {e}")))?;
        if !(1..=MAX_REPEAT).contains(&input.repeat) {
            return Err(ToolError::InvalidInput(format!(
                "'repeat' must be between 1 and {MAX_REPEAT}, got {}",
                input.repeat
            )));
        }
        let text = input.text.repeat(input.repeat as usize);
        let structured = json!({ "text": text }).to_string();
        Ok(ToolOutput {
            content: text,
            structured: Some(structured),
        })
    }
}

export!(Echo);
