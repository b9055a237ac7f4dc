//! `describe` panics (a trap while the host loads the plugin).

use contract::{Guest, ToolError, ToolOutput, ToolSpec};

struct Plugin;

impl Guest for Plugin {
    fn describe() -> Vec<ToolSpec> {
        panic!("describe_traps: describe fails on purpose");
    }

    fn call(name: String, _input: String) -> Result<ToolOutput, ToolError> {
        contract::ok(&name)
    }
}

contract::export!(Plugin with_types_in contract);
