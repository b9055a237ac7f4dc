use super::*;
use crate::gate::violation::MAX_PROBLEMS;
use serde_json::json;

fn validator(schema: Value) -> InputValidator {
    InputValidator::compile(&schema).unwrap()
}

fn read_file() -> InputValidator {
    validator(json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1},
        },
        "required": ["path"],
        "additionalProperties": false,
    }))
}

fn check(v: &InputValidator, input: Value) -> Result<Validated, InvalidInput> {
    v.check("read_file", input, &InputLimits::default())
}

#[test]
fn accepts_valid_input_unchanged() {
    let input = json!({"path": "a.txt", "limit": 3});
    let validated = check(&read_file(), input.clone()).unwrap();
    assert_eq!(validated.input, input);
    assert!(validated.coercions.is_empty());
}

#[test]
fn reports_every_violation_at_once() {
    let err = check(&read_file(), json!({"limit": "x", "extra": 1})).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("Invalid input for tool 'read_file':\n- "),
        "{text}"
    );
    assert!(
        text.contains("\n- /: \"path\" is a required property"),
        "{text}"
    );
    assert!(
        text.contains("\n- /limit: \"x\" is not of type \"integer\""),
        "{text}"
    );
    assert!(
        text.contains("\n- /: Additional properties are not allowed"),
        "{text}"
    );
    assert_eq!(err.problems().len(), 3);
}

#[test]
fn orders_violations_deterministically() {
    let v = read_file();
    let input = json!({"limit": 0, "a": 1, "b": 2});
    let first = check(&v, input.clone()).unwrap_err();
    for _ in 0..5 {
        assert_eq!(check(&v, input.clone()).unwrap_err(), first);
    }
}

#[test]
fn bounds_input_before_validating() {
    let mut deep = json!("x");
    for _ in 0..200 {
        deep = json!({ "a": deep });
    }
    let err = check(&read_file(), json!({"path": deep})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid input for tool 'read_file':\n- input nests 201 levels deep; the limit is 64"
    );
    let limits = InputLimits {
        max_bytes: 16,
        max_depth: 64,
    };
    let err = read_file()
        .check(
            "read_file",
            json!({"path": "a-long-file-name.txt"}),
            &limits,
        )
        .unwrap_err();
    assert_eq!(err.problems(), ["input is 31 bytes; the limit is 16 bytes"]);
}

#[test]
fn abbreviates_huge_values_in_messages() {
    let v = validator(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
    let err = check(&v, json!({"n": "y".repeat(10_000)})).unwrap_err();
    let line = &err.problems()[0];
    assert!(line.len() < 200, "{line}");
    assert!(line.starts_with("/n: \"yyyy"), "{line}");
    assert!(line.ends_with("... is not of type \"integer\""), "{line}");
}

#[test]
fn caps_the_number_of_violations() {
    let v = validator(json!({"type": "array", "items": {"type": "integer"}}));
    let items: Vec<Value> = (0..500).map(|i| json!(format!("x{i}"))).collect();
    let err = check(&v, Value::Array(items)).unwrap_err();
    assert_eq!(err.problems().len(), MAX_PROBLEMS + 1);
    assert_eq!(err.problems()[MAX_PROBLEMS], "... and 400 more violations");
}

#[test]
fn formats_plugin_errors_like_host_errors() {
    let err = InvalidInput::from_plugin("read_file", "no such file: a.txt\n");
    assert_eq!(
        err.to_string(),
        "Invalid input for tool 'read_file':\n- no such file: a.txt"
    );
    let err = InvalidInput::from_plugin("x", "first\nsecond");
    assert_eq!(
        err.to_string(),
        "Invalid input for tool 'x':\n- first\n  second"
    );
}

#[test]
fn refuses_references_outside_the_schema() {
    for reference in [
        "https://example.com/s.json",
        "other.json",
        "file:///etc/passwd",
    ] {
        let schema = json!({"properties": {"a": {"$ref": reference}}});
        let err = InputValidator::compile(&schema).unwrap_err();
        assert!(
            matches!(err, SchemaError::ExternalRef { .. }),
            "{reference}: {err}"
        );
        assert!(err.to_string().contains("does not fetch schemas"), "{err}");
    }
}

#[test]
fn resolves_references_inside_the_schema() {
    let v = validator(json!({
        "$defs": {"count": {"type": "integer"}},
        "properties": {"n": {"$ref": "#/$defs/count"}},
    }));
    assert!(check(&v, json!({"n": 1})).is_ok());
    assert!(check(&v, json!({"n": [1]})).is_err());
    let missing = json!({"properties": {"n": {"$ref": "#/$defs/nothing"}}});
    let err = InputValidator::compile(&missing).unwrap_err();
    assert!(matches!(err, SchemaError::Invalid { .. }), "{err:?}");
}

#[test]
fn explains_which_options_were_offered() {
    let v = validator(json!({
        "properties": {"n": {"oneOf": [{"type": "integer"}, {"type": "object", "required": ["k"]}]}},
    }));
    let err = check(&v, json!({"n": {}})).unwrap_err();
    assert_eq!(
        err.problems(),
        [
            r#"/n: {} is not valid under any of the schemas listed in the 'oneOf' keyword (option 1: {} is not of type "integer"; option 2: "k" is a required property)"#
        ]
    );
}

#[test]
fn rejects_unknown_drafts() {
    let err = InputValidator::compile(&json!({"$schema": "https://example.com/meta"})).unwrap_err();
    assert_eq!(
        err,
        SchemaError::UnknownDraft {
            uri: "https://example.com/meta".to_owned()
        }
    );
}

#[test]
fn rejects_invalid_schemas_with_the_place() {
    let err = InputValidator::compile(&json!({"type": "integr"})).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("integr"), "{text}");
    assert!(text.contains("(at /type)"), "{text}");
}

#[test]
fn defaults_to_draft_2020_12_and_respects_schema() {
    // `prefixItems` exists only in 2020-12; draft 7 ignores it.
    let schema = json!({"prefixItems": [{"type": "integer"}]});
    assert!(check(&validator(schema.clone()), json!(["x"])).is_err());
    let mut draft7 = schema;
    draft7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
    assert!(check(&validator(draft7), json!(["x"])).is_ok());
}

#[test]
fn checks_outputs_without_coercing() {
    let v = OutputValidator::compile(&json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }))
    .unwrap();
    assert!(v.check(&json!({"n": 1})).is_ok());
    let err = v.check(&json!({"n": "1"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "The structured output does not match the tool's output schema:\n\
         - /n: \"1\" is not of type \"integer\""
    );
}

#[test]
fn validators_can_be_shared_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<InputValidator>();
    shareable::<OutputValidator>();
}
