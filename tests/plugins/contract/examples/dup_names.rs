//! Two tools named `same` (and one `unique`).

use contract::{Guest, OBJECT, ToolError, ToolOutput, ToolSpec, spec};

struct Plugin;

impl Guest for Plugin {
    fn describe() -> Vec<ToolSpec> {
        vec![
            spec("same", OBJECT),
            spec("unique", OBJECT),
            spec("same", OBJECT),
        ]
    }

    fn call(name: String, _input: String) -> Result<ToolOutput, ToolError> {
        contract::ok(&name)
    }
}

contract::export!(Plugin with_types_in contract);
