//! The tools the MCP conformance suite (`@modelcontextprotocol/conformance`) calls, as far as a
//! toolhost plugin can provide them: text results, a failing tool, progress, logging, a JSON Schema
//! 2020-12 input schema, a tool that changes the tool list through hot reload, and tools that the
//! test configuration guards with an `ask` rule so that the suite meets toolhost's approval round
//! trip (the only input request toolhost makes).

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "plugin",
});

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use serde_json::json;
use toolhost::plugin::host;
use toolhost::plugin::types::ToolHints;

struct Conformance;

fn spec(name: &str, description: &str, input_schema: serde_json::Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: None,
        description: description.into(),
        input_schema: input_schema.to_string(),
        output_schema: None,
        hints: ToolHints::READ_ONLY | ToolHints::IDEMPOTENT,
        permission_subject: None,
    }
}

fn text(content: &str) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput {
        content: content.into(),
        structured: None,
    })
}

impl Guest for Conformance {
    fn describe() -> Vec<ToolSpec> {
        let none = json!({ "type": "object" });
        let schema_2020_12 = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
                }
            },
            "properties": {
                "name": { "type": "string" },
                "address": { "$ref": "#/$defs/address" },
                "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                "phone": { "type": "string" },
                "email": { "type": "string" }
            },
            "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
            "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
            "then": { "required": ["phone"] },
            "else": { "required": ["email"] },
            "additionalProperties": false
        });
        vec![
            spec(
                "test_simple_text",
                "Return a simple text response.",
                none.clone(),
            ),
            spec("test_error_handling", "Always fail.", none.clone()),
            spec(
                "test_tool_with_progress",
                "Report progress 0, 50 and 100 of 100.",
                none.clone(),
            ),
            spec(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                schema_2020_12,
            ),
            spec(
                "test_trigger_tool_change",
                "Ask the test's operator script to add or remove the spare plugin in the plugins folder \
                 (a request file in this plugin's granted folder; no grant may reach the plugins folder \
                 itself), so that hot reload changes the tool list.",
                none.clone(),
            ),
            spec(
                "test_logging_tool",
                "Write log lines through the host (never to the client).",
                none.clone(),
            ),
            spec(
                "test_streaming_elicitation",
                "Needs approval (an `ask` rule in the test configuration).",
                none.clone(),
            ),
            spec(
                "test_input_required_result_tampered_state",
                "Needs approval (an `ask` rule in the test configuration).",
                none.clone(),
            ),
            spec(
                "test_input_required_result_capabilities",
                "Needs approval (an `ask` rule in the test configuration).",
                none,
            ),
        ]
    }

    fn call(name: String, _input: String) -> Result<ToolOutput, ToolError> {
        match name.as_str() {
            "test_simple_text" => text("This is a simple text response for testing."),
            "test_error_handling" => Err(ToolError::Failed(
                "This tool intentionally returns an error for testing".into(),
            )),
            "test_tool_with_progress" => {
                for (i, done) in [0, 50, 100].into_iter().enumerate() {
                    if i > 0 {
                        // A sleep on purpose: the tool's own work, spaced so progress arrives apart.
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                    host::progress(done, Some(100), &format!("{done} of 100"));
                }
                text("Progress reported.")
            }
            "json_schema_2020_12_tool" => text("ok"),
            "test_trigger_tool_change" => {
                std::fs::write("swap", "")
                    .map_err(|e| ToolError::Failed(format!("cannot request a swap: {e}")))?;
                // The operator script swaps the spare plugin, then removes the request.
                for _ in 0..250 {
                    if std::fs::metadata("swap").is_err() {
                        return text("swapped the spare plugin");
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(ToolError::Failed("nobody answered the swap request".into()))
            }
            "test_logging_tool" => {
                for level in [
                    host::LogLevel::Info,
                    host::LogLevel::Warn,
                    host::LogLevel::Error,
                ] {
                    host::log(level, "a log line for the host's log, not for the client");
                }
                text("Logged.")
            }
            "test_streaming_elicitation"
            | "test_input_required_result_tampered_state"
            | "test_input_required_result_capabilities" => text("approved"),
            other => Err(ToolError::InvalidInput(format!("unknown tool '{other}'"))),
        }
    }
}

export!(Conformance);
