//! `describe` returns 5000 valid tools, `tool_0000` to `tool_4999`.

use contract::{Guest, OBJECT, ToolError, ToolOutput, ToolSpec, spec};

const COUNT: usize = 5000;

struct Plugin;

impl Guest for Plugin {
    fn describe() -> Vec<ToolSpec> {
        (0..COUNT)
            .map(|i| spec(&format!("tool_{i:04}"), OBJECT))
            .collect()
    }

    fn call(name: String, _input: String) -> Result<ToolOutput, ToolError> {
        contract::ok(&name)
    }
}

contract::export!(Plugin with_types_in contract);
