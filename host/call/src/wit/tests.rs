use proptest::prelude::*;
use serde_json::{Value, json};

use super::json::{from_json, to_json};
use super::*;

fn rec(fields: &[(&str, WitType)]) -> WitType {
    WitType::Record(
        fields
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect(),
    )
}

fn opt(t: WitType) -> WitType {
    WitType::Option(Box::new(t))
}

fn export(params: &[(&str, WitType)], result: Option<WitType>) -> Export {
    Export {
        interface: Some("test:rich/shapes@0.1.0".into()),
        function: "area".into(),
        params: params
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect(),
        result,
    }
}

/// Every problem `input` has for `export`, by the schema and by the exact reading together.
fn problems(export: &Export, input: &Value) -> Vec<String> {
    let schema = jsonschema::validator_for(&export.input_schema()).unwrap();
    let by_schema = schema.iter_errors(input).count();
    let exact = export.arguments(input).err().unwrap_or_default();
    // The exact reading refuses all the schema refuses, and beyond it only what a float cannot hold.
    if exact.is_empty() {
        assert_eq!(
            by_schema, 0,
            "the schema refuses {input}, the exact reading accepts it"
        );
    }
    if by_schema == 0 {
        assert!(
            exact.iter().all(|p| p.contains("not exact as written")),
            "the schema accepts {input}, the exact reading refuses it: {exact:?}"
        );
    }
    exact
}

#[test]
fn integers_are_exact_and_bounded() {
    let e = export(
        &[
            ("n", WitType::U8),
            ("big", WitType::U64),
            ("neg", WitType::S64),
        ],
        None,
    );
    assert!(problems(&e, &json!({"n": 255, "big": u64::MAX, "neg": i64::MIN})).is_empty());
    assert!(problems(&e, &json!({"n": 3.0, "big": 0, "neg": -1})).is_empty());
    let p = problems(&e, &json!({"n": 256, "big": -1, "neg": 1.5}));
    assert_eq!(
        p,
        [
            "/n: 256 is out of range for u8 (0 to 255)",
            "/big: -1 is out of range for u64 (0 to 18446744073709551615)",
            "/neg: 1.5 is not an integer",
        ]
    );
    // 2^64 does not fit, and 1e19 is a float that may not be the integer its writer meant.
    let p = export(&[("big", WitType::U64)], None)
        .arguments(&json!({"big": 1e19}))
        .unwrap_err();
    assert!(p[0].contains("not exact as written"), "{p:?}");
    let too_big: Value = serde_json::from_str(r#"{"big": 18446744073709551616}"#).unwrap();
    assert!(!problems(&export(&[("big", WitType::U64)], None), &too_big).is_empty());
}

#[test]
fn records_want_every_field_and_nothing_else() {
    let point = rec(&[("x", WitType::S32), ("label", opt(WitType::String))]);
    let e = export(&[("p", point)], None);
    assert!(problems(&e, &json!({"p": {"x": 1}})).is_empty());
    assert!(problems(&e, &json!({"p": {"x": 1, "label": null}})).is_empty());
    assert_eq!(
        problems(&e, &json!({"p": {"y": 1}})),
        [
            "/p: unknown property \"y\" (allowed: \"x\", \"label\")",
            "/p: \"x\" is a required property"
        ]
    );
    assert_eq!(
        problems(&e, &json!({})),
        ["/: \"p\" is a required property"]
    );
    assert_eq!(
        problems(&e, &json!({"p": {"x": 1}, "q": 2})),
        ["/: unknown property \"q\" (allowed: \"p\")"]
    );
}

#[test]
fn variants_are_tagged_objects() {
    let shape = WitType::Variant(vec![
        ("circle".into(), Some(WitType::F64)),
        ("square".into(), Some(WitType::F64)),
        ("dot".into(), None),
    ]);
    let e = export(&[("s", shape)], Some(WitType::F64));
    assert!(problems(&e, &json!({"s": {"tag": "circle", "value": 2.0}})).is_empty());
    assert!(problems(&e, &json!({"s": {"tag": "dot"}})).is_empty());
    assert_eq!(
        problems(&e, &json!({"s": {"tag": "triangle", "value": 1}})),
        ["/s/tag: \"triangle\" is not one of \"circle\", \"square\", \"dot\""]
    );
    assert_eq!(
        problems(&e, &json!({"s": {"tag": "dot", "value": 1}})),
        ["/s: case \"dot\" takes no \"value\""]
    );
    assert_eq!(
        problems(&e, &json!({"s": {"tag": "circle"}})),
        ["/s: case \"circle\" needs a \"value\""]
    );
    assert_eq!(
        problems(&e, &json!({"s": {"tag": "circle", "value": "x"}})),
        ["/s/value: \"x\" is not a number (or \"NaN\", \"Infinity\", \"-Infinity\")"]
    );
}

#[test]
fn bytes_flags_enums_chars_and_tuples() {
    let e = export(
        &[
            ("data", WitType::List(Box::new(WitType::U8))),
            ("perms", WitType::Flags(vec!["read".into(), "write".into()])),
            ("color", WitType::Enum(vec!["red".into(), "green".into()])),
            ("c", WitType::Char),
            ("pair", WitType::Tuple(vec![WitType::String, WitType::U16])),
        ],
        None,
    );
    let good =
        json!({"data": "aGk=", "perms": ["write"], "color": "red", "c": "é", "pair": ["a", 7]});
    let args = e.arguments(&good).unwrap();
    assert_eq!(
        args[0],
        WitValue::List(vec![WitValue::U8(b'h'), WitValue::U8(b'i')])
    );
    let bad = json!({"data": "###", "perms": ["write", "write", "exec"], "color": "blue", "c": "ab", "pair": ["a"]});
    let p = e.arguments(&bad).unwrap_err();
    assert!(p[0].starts_with("/data: not valid base64"), "{p:?}");
    assert_eq!(
        &p[1..],
        [
            "/perms/1: \"write\" appears twice",
            "/perms/2: \"exec\" is not one of \"read\", \"write\"",
            "/color: \"blue\" is not one of \"red\", \"green\"",
            "/c: \"ab\" is not exactly one character",
            "/pair: has 1 items; it must have 2",
        ]
    );
}

#[test]
fn floats_beyond_json_are_named() {
    let t = WitType::F32;
    assert_eq!(to_json(&t, &WitValue::F32(f32::NAN)).unwrap(), json!("NaN"));
    assert_eq!(
        to_json(&WitType::F64, &WitValue::F64(f64::NEG_INFINITY)).unwrap(),
        json!("-Infinity")
    );
    assert_eq!(
        from_json(&t, &json!("Infinity")).unwrap(),
        WitValue::F32(f32::INFINITY)
    );
    assert_eq!(
        from_json(&t, &json!(1e39)).unwrap_err(),
        ["/: 1e+39 is beyond the range of f32 (±3.4028235e38)"]
    );
}

#[test]
fn nested_options_keep_some_none_apart() {
    let t = opt(opt(WitType::U8));
    let some_none = WitValue::Option(Some(Box::new(WitValue::Option(None))));
    assert_eq!(to_json(&t, &some_none).unwrap(), json!({"some": null}));
    assert_eq!(to_json(&t, &WitValue::Option(None)).unwrap(), json!(null));
    assert_eq!(from_json(&t, &json!({"some": null})).unwrap(), some_none);
}

#[test]
fn results_answer_or_fail() {
    let e = export(
        &[],
        Some(WitType::Result {
            ok: Some(Box::new(WitType::F64)),
            err: Some(Box::new(WitType::String)),
        }),
    );
    assert_eq!(
        e.output_schema().unwrap()["properties"]["result"],
        WitType::F64.schema()
    );
    let ok = WitValue::Result(Ok(Some(Box::new(WitValue::F64(2.5)))));
    assert_eq!(
        e.answer(Some(&ok)).unwrap(),
        Answer::Done {
            content: "2.5".into(),
            structured: Some(json!({"result": 2.5}))
        }
    );
    let err = WitValue::Result(Err(Some(Box::new(WitValue::String(
        "negative size".into(),
    )))));
    assert_eq!(
        e.answer(Some(&err)).unwrap(),
        Answer::Failed("negative size".into())
    );
    // A record is the structured output itself; nothing returned is "done".
    let stats = rec(&[("words", WitType::U32)]);
    let e = export(&[], Some(stats.clone()));
    assert_eq!(e.output_schema().unwrap(), stats.schema());
    let none = export(&[], None);
    assert_eq!(none.output_schema(), None);
    assert!(matches!(
        none.answer(None).unwrap(),
        Answer::Done {
            structured: None,
            ..
        }
    ));
}

#[test]
fn names_follow_the_documented_rule() {
    let f = |interface: Option<&str>, function: &str| Export {
        interface: interface.map(Into::into),
        function: function.into(),
        params: Vec::new(),
        result: None,
    };
    let exports = [
        f(Some("docs:text/word-count@0.1.0"), "count-words"),
        f(None, "greet"),
        f(Some("other:pkg/word-count"), "count-words"),
        f(Some("docs:text/word-count@0.2.0"), "count-words"),
        f(Some("helpers"), "x"),
        f(Some("a:b/c"), &"long-".repeat(20)),
    ];
    let names = naming::tool_names(&exports);
    assert_eq!(
        names[..5],
        [
            "word_count_count_words",
            "greet",
            "other_pkg_word_count_count_words",
            "docs_text_word_count_count_words",
            "helpers_x",
        ]
    );
    assert_eq!(names[5].len(), 64);
    assert!(names.iter().all(|n| crate::tool::is_valid_name(n)));
    // A third clash of the same qualified name gets a number.
    let again = naming::tool_names(&[exports[0].clone(), exports[0].clone(), exports[0].clone()]);
    assert_eq!(again[2], "docs_text_word_count_count_words_2");
}

#[test]
fn docs_come_from_package_docs_sections() {
    let v1 = br#"{"interfaces":{"word-count":{"funcs":{"count-words":{"docs":"Counts words."}}}},"worlds":{"w":{"func_exports":{"greet":{"docs":" Says hello. "}}}}}"#;
    let mut section = vec![1u8];
    section.extend_from_slice(v1);
    let mut v0 = vec![0u8];
    v0.extend_from_slice(br#"{"interfaces":{"old":{"funcs":{"f":"Old style."}}}}"#);
    let docs = Docs::parse([section.as_slice(), v0.as_slice(), b"\x07junk".as_slice()]);
    assert_eq!(
        docs.function(Some("docs:text/word-count@0.1.0"), "count-words")
            .as_deref(),
        Some("Counts words.")
    );
    assert_eq!(docs.function(None, "greet").as_deref(), Some("Says hello."));
    assert_eq!(
        docs.function(Some("x:y/old"), "f").as_deref(),
        Some("Old style.")
    );
    assert_eq!(docs.function(None, "nothing"), None);
}

// --- Property: every value of every generated type survives JSON and back, and its JSON is valid
// by the type's schema. ---

use super::strategy::{any_type, any_value};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_value_survives_json(
        (ty, value) in any_type().prop_flat_map(|t| (Just(t.clone()), any_value(&t)))
    ) {
        let json = to_json(&ty, &value).unwrap();
        let schema = jsonschema::validator_for(&ty.schema()).unwrap();
        let problems: Vec<String> = schema.iter_errors(&json).map(|e| e.to_string()).collect();
        prop_assert!(problems.is_empty(), "{json} breaks {}: {problems:?}", ty.schema());
        prop_assert_eq!(from_json(&ty, &json).unwrap(), value);
    }

    #[test]
    fn any_json_is_read_or_refused_with_paths(
        ty in any_type(),
        json in any_json(),
    ) {
        if let Err(problems) = from_json(&ty, &json) {
            prop_assert!(!problems.is_empty());
            prop_assert!(problems.iter().all(|p| p.starts_with('/')), "{problems:?}");
        }
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[a-z-]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z-]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
