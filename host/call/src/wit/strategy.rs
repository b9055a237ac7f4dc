//! proptest strategies for WIT types and their values (feature `proptest`): this crate's
//! property tests and the host's round trips through real components share them.

use proptest::prelude::*;

use super::{WitType, WitValue};

fn names(prefix: &'static str) -> impl Strategy<Value = Vec<String>> {
    (1usize..4).prop_map(move |n| (0..n).map(|i| format!("{prefix}-{i}")).collect())
}

/// Any type with a JSON form, nested up to three deep.
pub fn any_type() -> impl Strategy<Value = WitType> {
    let leaf = prop_oneof![
        Just(WitType::Bool),
        Just(WitType::S8),
        Just(WitType::U8),
        Just(WitType::S16),
        Just(WitType::U16),
        Just(WitType::S32),
        Just(WitType::U32),
        Just(WitType::S64),
        Just(WitType::U64),
        Just(WitType::F32),
        Just(WitType::F64),
        Just(WitType::Char),
        Just(WitType::String),
        names("e").prop_map(WitType::Enum),
        names("f").prop_map(WitType::Flags),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| WitType::List(Box::new(t))),
            (inner.clone(), 0u32..3).prop_map(|(t, n)| WitType::FixedList(Box::new(t), n)),
            inner.clone().prop_map(|t| WitType::Option(Box::new(t))),
            prop::collection::vec(inner.clone(), 0..3).prop_map(WitType::Tuple),
            prop::collection::vec(inner.clone(), 1..4).prop_map(|ts| WitType::Record(
                ts.into_iter()
                    .enumerate()
                    .map(|(i, t)| (format!("field-{i}"), t))
                    .collect()
            )),
            prop::collection::vec(prop::option::of(inner.clone()), 1..4).prop_map(|ts| {
                WitType::Variant(
                    ts.into_iter()
                        .enumerate()
                        .map(|(i, t)| (format!("case-{i}"), t))
                        .collect(),
                )
            }),
            (prop::option::of(inner.clone()), prop::option::of(inner)).prop_map(|(ok, err)| {
                WitType::Result {
                    ok: ok.map(Box::new),
                    err: err.map(Box::new),
                }
            }),
        ]
    })
}

/// Any value of `ty`.
pub fn any_value(ty: &WitType) -> BoxedStrategy<WitValue> {
    use WitValue as V;
    match ty.clone() {
        WitType::Bool => any::<bool>().prop_map(V::Bool).boxed(),
        WitType::S8 => any::<i8>().prop_map(V::S8).boxed(),
        WitType::U8 => any::<u8>().prop_map(V::U8).boxed(),
        WitType::S16 => any::<i16>().prop_map(V::S16).boxed(),
        WitType::U16 => any::<u16>().prop_map(V::U16).boxed(),
        WitType::S32 => any::<i32>().prop_map(V::S32).boxed(),
        WitType::U32 => any::<u32>().prop_map(V::U32).boxed(),
        WitType::S64 => any::<i64>().prop_map(V::S64).boxed(),
        WitType::U64 => any::<u64>().prop_map(V::U64).boxed(),
        WitType::F32 => any::<f32>().prop_map(V::F32).boxed(),
        WitType::F64 => any::<f64>().prop_map(V::F64).boxed(),
        WitType::Char => any::<char>().prop_map(V::Char).boxed(),
        WitType::String => any::<String>().prop_map(V::String).boxed(),
        WitType::List(t) => prop::collection::vec(any_value(&t), 0..4)
            .prop_map(V::List)
            .boxed(),
        WitType::FixedList(t, n) => prop::collection::vec(any_value(&t), n as usize)
            .prop_map(V::List)
            .boxed(),
        WitType::Tuple(ts) => ts
            .iter()
            .map(any_value)
            .collect::<Vec<_>>()
            .prop_map(V::Tuple)
            .boxed(),
        WitType::Record(fields) => fields
            .iter()
            .map(|(n, t)| (Just(n.clone()), any_value(t)))
            .collect::<Vec<_>>()
            .prop_map(V::Record)
            .boxed(),
        WitType::Variant(cases) => prop::sample::select(cases)
            .prop_flat_map(|(name, payload)| match payload {
                None => Just(V::Variant(name, None)).boxed(),
                Some(t) => any_value(&t)
                    .prop_map(move |v| V::Variant(name.clone(), Some(Box::new(v))))
                    .boxed(),
            })
            .boxed(),
        WitType::Enum(names) => prop::sample::select(names).prop_map(V::Enum).boxed(),
        WitType::Flags(names) => prop::sample::subsequence(names.clone(), 0..=names.len())
            .prop_map(V::Flags)
            .boxed(),
        WitType::Option(t) => prop::option::of(any_value(&t).prop_map(Box::new))
            .prop_map(V::Option)
            .boxed(),
        WitType::Result { ok, err } => {
            let side = |t: Option<Box<WitType>>| match t {
                None => Just(None).boxed(),
                Some(t) => any_value(&t).prop_map(|v| Some(Box::new(v))).boxed(),
            };
            prop_oneof![
                side(ok).prop_map(|v| V::Result(Ok(v))),
                side(err).prop_map(|v| V::Result(Err(v))),
            ]
            .boxed()
        }
    }
}
