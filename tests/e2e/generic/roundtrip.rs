//! Property: any value of every kind survives JSON -> component value -> a real component -> component
//! value -> JSON, through the pipeline and the Rust fixture's `mirror` function.

use serde_json::json;
use toolhost::exec::CallRequest;
use toolhost_call::call::CallStatus;
use toolhost_call::wit::WitType;
use toolhost_call::wit::json::to_json;
use toolhost_call::wit::strategy::any_value;

use super::BYPASS;
use crate::harness::Env;

/// The fixture's `mirror.everything`, written out here as the oracle (tests/plugins/generic/wit).
fn everything() -> WitType {
    use WitType as T;
    let boxed = |t: WitType| Box::new(t);
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let point = T::Record(vec![("x".into(), T::F64), ("y".into(), T::F64)]);
    let shape = T::Variant(vec![
        ("circle".into(), Some(T::F64)),
        ("rectangle".into(), Some(T::Tuple(vec![T::F64, T::F64]))),
        ("polygon".into(), Some(T::List(boxed(point)))),
        ("dot".into(), None),
    ]);
    let unit = T::Enum(names(&["mm", "cm", "m"]));
    let summary = T::Record(vec![
        ("count".into(), T::U32),
        ("total".into(), T::S64),
        ("label".into(), T::Option(boxed(T::String))),
        ("units".into(), T::List(boxed(unit.clone()))),
    ]);
    T::Record(
        [
            ("b", T::Bool),
            ("i8", T::S8),
            ("n8", T::U8),
            ("i16", T::S16),
            ("n16", T::U16),
            ("i32", T::S32),
            ("n32", T::U32),
            ("i64", T::S64),
            ("n64", T::U64),
            ("x32", T::F32),
            ("x64", T::F64),
            ("letter", T::Char),
            ("text", T::String),
            ("bytes", T::List(boxed(T::U8))),
            ("sparse", T::List(boxed(T::Option(boxed(T::S16))))),
            ("pair", T::Tuple(vec![T::U8, T::String])),
            ("fixed", shape),
            ("unit", unit),
            ("style", T::Flags(names(&["bold", "italic", "underline"]))),
            ("maybe", T::Option(boxed(T::Option(boxed(T::U32))))),
            (
                "outcome",
                T::Result {
                    ok: Some(boxed(T::U32)),
                    err: Some(boxed(T::String)),
                },
            ),
            (
                "bare",
                T::Result {
                    ok: None,
                    err: None,
                },
            ),
            ("summaries", T::List(boxed(summary))),
        ]
        .into_iter()
        .map(|(n, t)| (n.to_string(), t))
        .collect(),
    )
}

/// Any value of `everything`, given to the component and given back, unchanged.
#[test]
fn every_value_survives_a_round_trip_through_a_component() {
    use proptest::test_runner::{Config, TestRunner};

    let env = Env::new(&["generic"], BYPASS);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pipeline = rt.block_on(env.pipeline(4));
    let ty = everything();
    let mut runner = TestRunner::new(Config::with_cases(200));
    runner
        .run(&any_value(&ty), |value| {
            let json = to_json(&ty, &value).unwrap();
            let outcome = rt.block_on(pipeline.call(CallRequest {
                tool: "mirror_mirror".into(),
                input: json!({"v": json}),
                origin: "test",
                ..CallRequest::default()
            }));
            let CallStatus::Ok { structured } = outcome.status else {
                panic!("{json} was refused: {}", outcome.content);
            };
            proptest::prop_assert_eq!(structured, Some(json));
            Ok(())
        })
        .unwrap();
}
