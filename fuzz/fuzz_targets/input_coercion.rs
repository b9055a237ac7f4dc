//! Input validation and coercion: arbitrary JSON inputs against a set of tool-like schemas (and,
//! for one selector value in four, against an arbitrary schema). Nothing may panic or recurse out
//! of the stack; an accepted input must validate as it is handed to the tool (coercion reaches a
//! fixed point); an input accepted without coercions is handed on unchanged; a refusal lists at
//! least one problem.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolhost_gate::gate::{InputLimits, InputValidator};

fn schemas() -> Vec<Value> {
    vec![
        json!({
            "type": "object",
            "properties": {
                "a": { "type": "integer" }, "b": { "type": "number" }, "c": { "type": "boolean" },
                "d": { "type": "string" }, "e": { "type": "array", "items": { "type": "integer" } },
                "f": { "type": "object", "properties": { "g": { "type": "boolean" } }, "required": ["g"] }
            },
            "required": ["a"],
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {
                "op": { "enum": ["add", "sub", "mul", "div"] },
                "n": { "type": ["integer", "null"], "minimum": 0, "maximum": 100 },
                "flags": { "type": "array", "items": { "type": "boolean" }, "maxItems": 4 },
                "opt": { "anyOf": [ { "type": "integer" }, { "type": "string", "maxLength": 3 } ] }
            },
            "required": ["op"]
        }),
        json!({
            "type": "object",
            "properties": {
                "items": { "type": "array", "items": {
                    "type": "object",
                    "properties": { "id": { "type": "integer" }, "tags": { "type": "array", "items": { "type": "string" } } },
                    "required": ["id"]
                } },
                "nested": { "$ref": "#/$defs/node" }
            },
            "$defs": { "node": { "type": "object", "properties": { "v": { "type": "number" }, "next": { "$ref": "#/$defs/node" } } } }
        }),
        json!({ "type": "object" }),
    ]
}

/// The fixed schemas, compiled once.
fn fixed() -> &'static [InputValidator] {
    static FIXED: OnceLock<Vec<InputValidator>> = OnceLock::new();
    FIXED.get_or_init(|| {
        schemas()
            .iter()
            .map(|s| InputValidator::compile(s).unwrap())
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let compiled;
    let (validator, input_bytes) = if selector % 4 == 3 {
        // An arbitrary schema, then the input, separated by the first NUL byte.
        let Some(split) = rest.iter().position(|&b| b == 0) else {
            return;
        };
        let Ok(schema) = serde_json::from_slice::<Value>(&rest[..split]) else {
            return;
        };
        let Ok(v) = InputValidator::compile(&schema) else {
            return;
        };
        compiled = v;
        (&compiled, &rest[split + 1..])
    } else {
        (&fixed()[usize::from(selector) % 3], rest)
    };
    let Ok(input) = serde_json::from_slice::<Value>(input_bytes) else {
        return;
    };
    let limits = InputLimits {
        max_bytes: 64 << 10,
        max_depth: 16,
    };
    match validator.check("t", input.clone(), &limits) {
        Ok(v) => {
            if v.coercions.is_empty() {
                assert_eq!(v.input, input, "an input accepted as is was changed");
            }
            for c in &v.coercions {
                assert!(!c.to_string().is_empty());
            }
            let again = validator
                .check("t", v.input.clone(), &limits)
                .unwrap_or_else(|e| panic!("the coerced input {} does not validate: {e}", v.input));
            assert!(
                again.coercions.is_empty(),
                "coercion is not a fixed point: {:?}",
                again.coercions
            );
        }
        Err(e) => {
            assert!(!e.problems().is_empty());
            assert!(!e.to_string().is_empty());
        }
    }
});
