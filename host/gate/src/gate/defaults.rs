//! Schema defaults, filled in before the gate judges a call, so that the rules see what the tool
//! will use: a `grep` without `path` whose schema says `"default": "."` is judged, and run, as a
//! search of `.`, not as a call with no path at all.
//!
//! Only `properties` with a `default` are filled, recursively into objects the input has; a local
//! `$ref` (`#/...`) is followed. Combinators (`anyOf`, `if`, ...) are not guessed through.

use serde_json::{Map, Value};

/// How deep into the schema defaults are looked for; inputs are bounded far below this anyway.
const MAX_DEPTH: usize = 64;

/// Fill the defaults of `schema` into `input`; returns the JSON pointers filled, in order.
pub fn fill(schema: &Value, input: &mut Value) -> Vec<String> {
    let mut filled = Vec::new();
    fill_at(schema, schema, input, String::new(), 0, &mut filled);
    filled
}

fn fill_at(
    root: &Value,
    schema: &Value,
    input: &mut Value,
    pointer: String,
    depth: usize,
    filled: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = follow(root, schema);
    let (Some(properties), Value::Object(object)) =
        (schema.get("properties").and_then(Value::as_object), input)
    else {
        return;
    };
    fill_object(root, properties, object, &pointer, depth, filled);
}

fn fill_object(
    root: &Value,
    properties: &Map<String, Value>,
    object: &mut Map<String, Value>,
    pointer: &str,
    depth: usize,
    filled: &mut Vec<String>,
) {
    for (key, sub) in properties {
        let sub = follow(root, sub);
        // The pointer is spelled out only where it is needed: most properties are given as scalars.
        let here = || toolhost_call::pointer::join(pointer, key);
        match object.get_mut(key) {
            Some(value @ Value::Object(_)) => fill_at(root, sub, value, here(), depth + 1, filled),
            Some(_) => {}
            None => {
                if let Some(default) = sub.get("default") {
                    object.insert(key.clone(), default.clone());
                    filled.push(here());
                }
            }
        }
    }
}

/// `schema`, or what its local `$ref` points to (a few hops at most).
fn follow<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..8 {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) if r.starts_with('#') => match root.pointer(&r[1..]) {
                Some(target) => schema = target,
                None => break,
            },
            _ => break,
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fills_missing_properties_with_their_defaults() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "default": "."},
                "pattern": {"type": "string"},
                "opts": {"type": "object", "properties": {"depth": {"default": 3}}},
                "via": {"$ref": "#/$defs/via"}
            },
            "$defs": {"via": {"type": "string", "default": "x"}}
        });
        let mut input = json!({"pattern": "a", "opts": {}});
        let filled = fill(&schema, &mut input);
        assert_eq!(
            input,
            json!({"pattern": "a", "path": ".", "opts": {"depth": 3}, "via": "x"})
        );
        assert_eq!(filled, ["/opts/depth", "/path", "/via"]);
    }

    #[test]
    fn pointers_escape_tildes_and_slashes_in_names() {
        let schema = json!({"properties": {
            "a/b~c": {"default": 1},
            "o~/": {"properties": {"~~//": {"default": 2}}}
        }});
        let mut input = json!({"o~/": {}});
        assert_eq!(fill(&schema, &mut input), ["/a~1b~0c", "/o~0~1/~0~0~1~1"]);
        assert_eq!(input, json!({"a/b~c": 1, "o~/": {"~~//": 2}}));
    }

    #[test]
    fn leaves_given_values_and_non_objects_alone() {
        let schema = json!({"properties": {"path": {"default": "."}}});
        let mut input = json!({"path": "src"});
        assert!(fill(&schema, &mut input).is_empty());
        assert_eq!(input, json!({"path": "src"}));
        let mut not_object = json!([1]);
        assert!(fill(&schema, &mut not_object).is_empty());
        let looping = json!({"$ref": "#", "properties": {"a": {"$ref": "#"}}});
        let mut deep = json!({"a": {"a": {"a": {}}}});
        assert!(fill(&looping, &mut deep).is_empty());
    }
}
