//! Test fixtures: small components that each break the plugin contract in one way. Each example
//! target is one component; this library holds the shared bindings and helpers.
//!
//! Built by `scripts/build-plugins.sh` into `target/fixtures/<example>.wasm`.

wit_bindgen::generate!({
    path: "../../../wit",
    world: "plugin",
    pub_export_macro: true,
});

pub use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
pub use toolhost::plugin::types::ToolHints;

/// A tool spec with the given name and input schema text, and nothing else.
pub fn spec(name: &str, input_schema: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: None,
        description: format!("[test fixture] {name}"),
        input_schema: input_schema.into(),
        output_schema: None,
        hints: ToolHints::READ_ONLY | ToolHints::IDEMPOTENT,
        permission_subject: None,
    }
}

/// The simplest valid input schema.
pub const OBJECT: &str = r#"{"type":"object"}"#;

/// A successful call that names the tool.
pub fn ok(name: &str) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput {
        content: format!("{name}: ok"),
        structured: None,
    })
}
