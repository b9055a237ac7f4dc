//! A plugin that calls the host's `toolhost:plugin/tools` interface directly, with any name it is
//! given: the attacker's side of the calling capability, without a script runner's courtesy
//! table in between. `call_tool {name, input}` calls `name`; `list_tools` lists what it may call.

wit_bindgen::generate!({
    path: "../../../wit",
    world: "tool-caller",
});

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use toolhost::plugin::tools;
use toolhost::plugin::types::ToolHints;

struct Plugin;

fn spec(name: &str, schema: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: None,
        description: format!("[test fixture] {name}"),
        input_schema: schema.into(),
        output_schema: None,
        hints: ToolHints::READ_ONLY,
        permission_subject: None,
    }
}

impl Guest for Plugin {
    fn describe() -> Vec<ToolSpec> {
        vec![
            spec(
                "call_tool",
                r#"{"type":"object","properties":{"name":{"type":"string"},"input":{"type":"string"}},"required":["name","input"]}"#,
            ),
            spec("list_tools", r#"{"type":"object"}"#),
        ]
    }

    fn call(name: String, input: String) -> Result<ToolOutput, ToolError> {
        if name == "list_tools" {
            let names: Vec<String> = tools::list().into_iter().map(|s| s.name).collect();
            return Ok(ToolOutput {
                content: names.join(","),
                structured: None,
            });
        }
        let tool = string_field(&input, "name");
        let nested = string_field(&input, "input");
        match tools::call(&tool, &nested) {
            Ok(out) => Ok(ToolOutput {
                content: format!("ok: {}", out.content),
                structured: None,
            }),
            Err(f) => Ok(ToolOutput {
                content: format!("{}: {}", f.kind, f.message),
                structured: None,
            }),
        }
    }
}

/// The JSON string value of `key` in the object text `json`, unescaped (`\"`, `\\`, `\n` and
/// `\uXXXX` only): enough for this fixture, which has no JSON parser of its own.
fn string_field(json: &str, key: &str) -> String {
    let Some(at) = json.find(&format!("\"{key}\":\"")) else {
        return String::new();
    };
    let mut out = String::new();
    let mut chars = json[at + key.len() + 4..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let code = u32::from_str_radix(&hex, 16).unwrap_or(0xfffd);
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}

export!(Plugin);
