//! The estimator against explosive schemas (refused, naming the place) and real ones (accepted).

use serde_json::{Value, json};

use super::*;

/// `levels` definitions, each an `anyOf` of `fan` references to the next: `fan^levels` evaluations.
fn ladder(levels: usize, fan: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..levels {
        let options: Vec<Value> = (0..fan)
            .map(|_| json!({"$ref": format!("#/$defs/a{}", i + 1)}))
            .collect();
        defs.insert(format!("a{i}"), json!({"anyOf": options}));
    }
    defs.insert(format!("a{levels}"), json!({"type": "string"}));
    json!({
        "type": "object",
        "properties": {"x": {"not": {"$ref": "#/$defs/a0"}}},
        "$defs": defs,
    })
}

#[test]
fn refuses_nested_alternatives_over_shared_definitions() {
    let schema = ladder(20, 3);
    assert!(schema.to_string().len() < 2048, "the attack fits in 2 KB");
    let err = estimate(&schema).unwrap_err();
    let CostError::TooCostly {
        count,
        location,
        depth,
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert!(*count > MAX_EVALUATIONS, "{err}");
    assert_eq!(*depth, 1, "{err}");
    assert!(location.starts_with("/$defs/a"), "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with("validating one value could take"),
        "{text}"
    );
    assert!(text.contains("the limit is 10000"), "{text}");
}

#[test]
fn counts_fan_out_exactly_for_a_small_ladder() {
    // /properties/x, its `not`, a0; then 2 options and a1 twice, 4 and a2 4 times, 8 and a3 8 times.
    let cost = estimate(&ladder(3, 2)).unwrap();
    assert_eq!(cost, 1 + 1 + 1 + 2 * 2 + 4 * 2 + 8 * 2);
}

#[test]
fn refuses_alternatives_that_multiply_with_depth() {
    let schema = json!({"anyOf": [{"items": {"$ref": "#"}}, {"items": {"$ref": "#"}}]});
    let err = estimate(&schema).unwrap_err();
    assert!(
        matches!(err, CostError::TooCostly { depth, .. } if (8..20).contains(&depth)),
        "{err}"
    );
}

#[test]
fn refuses_reference_cycles_that_never_descend() {
    let schema = json!({
        "$defs": {
            "a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/b"}]},
            "b": {"allOf": [{"$ref": "#/$defs/a"}]},
        },
        "properties": {"x": {"$ref": "#/$defs/a"}},
    });
    let err = estimate(&schema).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CostError::Cycle { .. }), "{text}");
    assert!(text.contains("/$defs/a"), "{text}");
    assert!(text.contains("/$defs/b"), "{text}");
    assert!(text.contains("recurse forever"), "{text}");
    let root = json!({"$ref": "#"});
    assert!(matches!(estimate(&root), Err(CostError::Cycle { .. })));
}

#[test]
fn accepts_recursive_schemas_that_descend() {
    // A filter language: a condition, or `and`/`or` over filters; recursion through children.
    let filter = json!({
        "type": "object",
        "properties": {"filter": {"$ref": "#/$defs/filter"}},
        "$defs": {
            "condition": {
                "type": "object",
                "properties": {"field": {"type": "string"}, "equals": {}},
                "required": ["field"],
            },
            "filter": {"anyOf": [
                {"$ref": "#/$defs/condition"},
                {"type": "object", "properties": {"and": {"type": "array", "items": {"$ref": "#/$defs/filter"}}}},
                {"type": "object", "properties": {"or": {"type": "array", "items": {"$ref": "#/$defs/filter"}}}},
                {"type": "object", "properties": {"not": {"$ref": "#/$defs/filter"}}},
            ]},
        },
    });
    let cost = estimate(&filter).unwrap();
    assert!(cost < 20, "{cost}");
    let tree = json!({
        "$anchor": "node",
        "type": "object",
        "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#node"}}},
    });
    assert!(estimate(&tree).unwrap() < 5);
}

#[test]
fn accepts_typical_tool_schemas() {
    let schemas = [
        json!({"type": "object"}),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to read"},
                "limit": {"type": "integer", "minimum": 1},
                "offset": {"type": "integer", "minimum": 0},
            },
            "required": ["path"],
            "additionalProperties": false,
        }),
        // The shape of an MCP tool generated from Pydantic: $defs, refs, nullable unions.
        json!({
            "$defs": {
                "Label": {"type": "object", "properties": {"name": {"type": "string"}, "color": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
                "State": {"enum": ["open", "closed"], "type": "string"},
            },
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "labels": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Label"}}, {"type": "null"}], "default": null},
                "state": {"$ref": "#/$defs/State"},
                "metadata": {"type": "object", "additionalProperties": {"type": "string"}, "propertyNames": {"pattern": "^[a-z]+$"}},
            },
            "required": ["title"],
        }),
        // Draft 7 with definitions and a tuple.
        json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"point": {"type": "array", "items": [{"type": "number"}, {"type": "number"}]}},
            "type": "object",
            "properties": {"from": {"$ref": "#/definitions/point"}, "to": {"$ref": "#/definitions/point"}},
            "if": {"required": ["to"]}, "then": {"required": ["from"]}, "else": {},
        }),
    ];
    for schema in schemas {
        let cost = estimate(&schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
        assert!(cost < 100, "{schema}: {cost}");
    }
}

#[test]
fn resolves_references_inside_embedded_resources() {
    let schema = json!({
        "$id": "https://example.com/root.json",
        "type": "object",
        "properties": {
            "a": {"$ref": "item.json"},
            "b": {"$ref": "https://example.com/item.json#/$defs/leaf"},
        },
        "$defs": {"item": {"$id": "item.json", "$defs": {"leaf": {"type": "string"}}, "$ref": "#/$defs/leaf"}},
    });
    assert!(estimate(&schema).unwrap() < 10);
}

#[test]
fn judges_inline_work_by_value_size() {
    assert!(is_quick(5, &json!({"path": "a.txt", "limit": 3})));
    let big: Vec<Value> = (0..10_000).map(|i| json!(i)).collect();
    assert!(is_quick(1, &json!(big[..1000])));
    assert!(!is_quick(5, &Value::Array(big)));
    assert!(!is_quick(1, &json!("x".repeat(1 << 20))));
}
