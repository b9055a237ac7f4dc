//! `describe` never returns (the host must time out while loading the plugin).

use contract::{Guest, ToolError, ToolOutput, ToolSpec};

struct Plugin;

impl Guest for Plugin {
    fn describe() -> Vec<ToolSpec> {
        let mut counter = 0u64;
        loop {
            counter = std::hint::black_box(counter.wrapping_add(1));
        }
    }

    fn call(name: String, _input: String) -> Result<ToolOutput, ToolError> {
        contract::ok(&name)
    }
}

contract::export!(Plugin with_types_in contract);
