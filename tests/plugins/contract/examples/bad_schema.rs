//! Tools whose schemas are broken, next to one valid tool (`ok`):
//! - `not_json_schema`: the input schema is not JSON;
//! - `invalid_schema`: JSON, but not a valid JSON Schema (`{"type": 12}`);
//! - `non_object_schema`: a valid schema, but not of an object;
//! - `bad_output_schema`: a valid input schema, but the output schema is not JSON.

use contract::{Guest, OBJECT, ToolError, ToolOutput, ToolSpec, spec};

struct Plugin;

impl Guest for Plugin {
    fn describe() -> Vec<ToolSpec> {
        vec![
            spec("ok", OBJECT),
            spec("not_json_schema", r#"{"type": "object", "properties": "#),
            spec("invalid_schema", r#"{"type": 12}"#),
            spec("non_object_schema", r#"{"type": "string"}"#),
            ToolSpec {
                output_schema: Some("{oops".into()),
                ..spec("bad_output_schema", OBJECT)
            },
        ]
    }

    fn call(name: String, _input: String) -> Result<ToolOutput, ToolError> {
        contract::ok(&name)
    }
}

contract::export!(Plugin with_types_in contract);
