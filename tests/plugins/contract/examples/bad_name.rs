//! A tool named `read file!`, which does not match ^[A-Za-z0-9_-]{1,64}$ (and one valid `fine`).

use contract::{Guest, OBJECT, ToolError, ToolOutput, ToolSpec, spec};

struct Plugin;

impl Guest for Plugin {
    fn describe() -> Vec<ToolSpec> {
        vec![spec("fine", OBJECT), spec("read file!", OBJECT)]
    }

    fn call(name: String, _input: String) -> Result<ToolOutput, ToolError> {
        contract::ok(&name)
    }
}

contract::export!(Plugin with_types_in contract);
