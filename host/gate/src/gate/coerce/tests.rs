//! Coercion: strings that become the numbers, booleans, null or JSON a schema wants, and those left
//! alone or refused.

use super::*;
use crate::gate::validate::{InputValidator, Validated};
use serde_json::json;

fn check(schema: Value, input: Value) -> Result<Validated, String> {
    InputValidator::compile(&schema)
        .unwrap()
        .check("t", input, &InputLimits::default())
        .map_err(|e| e.to_string())
}

fn coerced(schema: Value, input: Value) -> (Value, Vec<String>) {
    let validated = check(schema, input).unwrap();
    let shown = validated
        .coercions
        .iter()
        .map(ToString::to_string)
        .collect();
    (validated.input, shown)
}

fn props(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

#[test]
fn coerces_numeric_strings_to_numbers() {
    let schema = props(json!({"count": {"type": "integer"}, "ratio": {"type": "number"}}));
    let (input, shown) = coerced(schema, json!({"count": "3", "ratio": "2.5"}));
    assert_eq!(input, json!({"count": 3, "ratio": 2.5}));
    assert_eq!(
        shown,
        [
            r#"/count: string "3" -> integer"#,
            r#"/ratio: string "2.5" -> number"#
        ]
    );
}

#[test]
fn does_not_coerce_unsafe_numbers() {
    let integer = props(json!({"n": {"type": "integer"}}));
    for text in [
        "2.5",
        "+3",
        " 3",
        "3 ",
        "0x10",
        "NaN",
        "inf",
        "1e999",
        "",
        "99999999999999999999",
        "3.",
    ] {
        assert!(
            check(integer.clone(), json!({"n": text})).is_err(),
            "{text:?}"
        );
    }
    let number = props(json!({"n": {"type": "number"}}));
    for text in ["NaN", "Infinity", "-inf", "1e999", ".5", "1_000"] {
        assert!(
            check(number.clone(), json!({"n": text})).is_err(),
            "{text:?}"
        );
    }
    let (input, _) = coerced(number, json!({"n": "-1e3"}));
    assert_eq!(input, json!({"n": -1000.0}));
}

#[test]
fn coerces_booleans_and_null() {
    let schema = props(json!({"a": {"type": "boolean"}, "b": {"type": "null"}}));
    let (input, shown) = coerced(schema.clone(), json!({"a": "false", "b": "null"}));
    assert_eq!(input, json!({"a": false, "b": null}));
    assert_eq!(
        shown,
        [
            r#"/a: string "false" -> boolean"#,
            r#"/b: string "null" -> null"#
        ]
    );
    assert!(check(schema, json!({"a": "True"})).is_err());
}

#[test]
fn parses_json_strings_and_coerces_inside_them() {
    let schema = props(json!({
        "opts": {"type": "object", "properties": {"depth": {"type": "integer"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
    }));
    let input = json!({"opts": "{\"depth\": \"2\"}", "tags": " [\"a\", \"b\"]\n"});
    let (input, shown) = coerced(schema, input);
    assert_eq!(input, json!({"opts": {"depth": 2}, "tags": ["a", "b"]}));
    assert_eq!(shown.len(), 3);
    assert_eq!(shown[2], r#"/opts/depth: string "2" -> integer"#);
}

#[test]
fn coerces_within_any_of() {
    let schema = props(json!({"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}));
    let (input, _) = coerced(schema.clone(), json!({"n": "4"}));
    assert_eq!(input, json!({"n": 4}));
    let (input, _) = coerced(schema, json!({"n": "null"}));
    assert_eq!(input, json!({"n": null}));
    let multi = props(json!({"n": {"type": ["integer", "boolean"]}}));
    let (input, _) = coerced(multi, json!({"n": "true"}));
    assert_eq!(input, json!({"n": true}));
}

#[test]
fn coerces_the_root() {
    let (input, shown) = coerced(json!({"type": "object"}), json!("{}"));
    assert_eq!(input, json!({}));
    assert_eq!(shown, [r#"/: string "{}" -> object"#]);
}

#[test]
fn reports_original_errors_when_coercion_is_not_enough() {
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 10}},
        "required": ["n", "m"],
    });
    let err = check(schema, json!({"n": "3"})).unwrap_err();
    assert_eq!(
        err,
        "Invalid input for tool 't':\n- /: \"m\" is a required property\n\
         - /n: \"3\" is not of type \"integer\""
    );
}

#[test]
fn keeps_strings_where_strings_are_wanted() {
    let schema = props(json!({"s": {"type": "string"}, "n": {"type": "integer"}}));
    let (input, _) = coerced(schema, json!({"s": "3", "n": "4"}));
    assert_eq!(input, json!({"s": "3", "n": 4}));
}

#[test]
fn refuses_coercions_that_break_the_limits() {
    let mut deep = String::new();
    for _ in 0..100 {
        deep.push('[');
    }
    for _ in 0..100 {
        deep.push(']');
    }
    let schema = props(json!({"a": {"type": "array"}}));
    assert!(check(schema, json!({"a": deep})).is_err());
}

#[test]
fn abbreviates_long_strings_in_display() {
    let c = Coercion {
        path: "/x".to_owned(),
        from: format!("[{}]", "1,".repeat(100)),
        to: "array",
    };
    assert_eq!(
        c.to_string(),
        format!("/x: string \"[{}...\" -> array", "1,".repeat(19) + "1")
    );
}
