//! Exact conversion between JSON and component values, both ways.
//!
//! | WIT | JSON |
//! |---|---|
//! | `bool` | `true` / `false` |
//! | `s8` … `u64` | an integer within the type's bounds; `3.0` is 3, `3.5` and `1e30` are refused |
//! | `f32`, `f64` | a number (an `f32` rounds to nearest, beyond its range is refused); NaN and the infinities are the strings `"NaN"`, `"Infinity"`, `"-Infinity"` |
//! | `char` | a string of exactly one Unicode scalar value |
//! | `string` | a string |
//! | `list<u8>` | a base64 string (standard alphabet, padded) |
//! | `list<T>`, `list<T, N>` | an array (of exactly N items) |
//! | `tuple<…>` | an array of exactly that many items |
//! | `record` | an object with every field; an `option` field may be left out; no other keys |
//! | `variant` | `{"tag": case}` or `{"tag": case, "value": payload}` |
//! | `enum` | the case name as a string |
//! | `flags` | an array of distinct flag names |
//! | `option<T>` | `null` or the value; `option<option<T>>` writes `some(x)` as `{"some": x}` |
//! | `result<T, E>` | `{"ok": value}` or `{"err": value}`; `null` for a side without a payload |
//!
//! Nothing is converted lossily: a value the type cannot hold exactly is a problem reported with
//! its JSON pointer, like the schema's own violations.

mod read;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use self::read::Reader;
use super::ty::{INFINITY, NAN, NEG_INFINITY, WitType};
pub use super::value::{TypeMismatch, WitValue};

/// Read `json` as a value of `ty`, listing every problem as `pointer: message`.
pub fn from_json(ty: &WitType, json: &Value) -> Result<WitValue, Vec<String>> {
    let mut reader = Reader::default();
    let value = reader.read(ty, json);
    match value {
        Some(v) if reader.problems.is_empty() => Ok(v),
        _ => Err(reader.problems),
    }
}

/// Read a call's input object as the function's arguments, in order: each parameter by name, an
/// `option` parameter may be left out, no other keys.
pub fn arguments_from_json(
    params: &[(String, WitType)],
    input: &Value,
) -> Result<Vec<WitValue>, Vec<String>> {
    let mut reader = Reader::default();
    let values = reader.fields(params, input);
    match values {
        Some(v) if reader.problems.is_empty() => Ok(v.into_iter().map(|(_, v)| v).collect()),
        _ => Err(reader.problems),
    }
}

/// Write `value` (of type `ty`) as JSON.
pub fn to_json(ty: &WitType, value: &WitValue) -> Result<Value, TypeMismatch> {
    use WitType as T;
    use WitValue as V;
    Ok(match (ty, value) {
        (T::Bool, V::Bool(b)) => json!(b),
        (T::S8, V::S8(n)) => json!(n),
        (T::U8, V::U8(n)) => json!(n),
        (T::S16, V::S16(n)) => json!(n),
        (T::U16, V::U16(n)) => json!(n),
        (T::S32, V::S32(n)) => json!(n),
        (T::U32, V::U32(n)) => json!(n),
        (T::S64, V::S64(n)) => json!(n),
        (T::U64, V::U64(n)) => json!(n),
        (T::F32, V::F32(x)) => float_json(f64::from(*x)),
        (T::F64, V::F64(x)) => float_json(*x),
        (T::Char, V::Char(c)) => json!(c.to_string()),
        (T::String, V::String(s)) => json!(s),
        (T::List(t), V::List(items)) if **t == T::U8 => {
            let bytes = items
                .iter()
                .map(|v| match v {
                    V::U8(b) => Ok(*b),
                    other => Err(mismatch(t, other)),
                })
                .collect::<Result<Vec<u8>, _>>()?;
            json!(BASE64.encode(bytes))
        }
        (T::List(t) | T::FixedList(t, _), V::List(items)) => Value::Array(
            items
                .iter()
                .map(|v| to_json(t, v))
                .collect::<Result<_, _>>()?,
        ),
        (T::Tuple(types), V::Tuple(items)) if types.len() == items.len() => Value::Array(
            types
                .iter()
                .zip(items)
                .map(|(t, v)| to_json(t, v))
                .collect::<Result<_, _>>()?,
        ),
        (T::Record(fields), V::Record(values)) if fields.len() == values.len() => {
            let mut object = Map::new();
            for ((name, t), (_, v)) in fields.iter().zip(values) {
                object.insert(name.clone(), to_json(t, v)?);
            }
            Value::Object(object)
        }
        (T::Variant(cases), V::Variant(case, payload)) => {
            let declared = cases.iter().find(|(name, _)| name == case);
            match (declared.map(|(_, t)| t), payload) {
                (Some(None), None) => json!({"tag": case}),
                (Some(Some(t)), Some(v)) => json!({"tag": case, "value": to_json(t, v)?}),
                _ => return Err(mismatch(ty, value)),
            }
        }
        (T::Enum(_), V::Enum(name)) => json!(name),
        (T::Flags(_), V::Flags(names)) => json!(names),
        (T::Option(_), V::Option(None)) => Value::Null,
        (T::Option(t), V::Option(Some(v))) if t.is_optional() => json!({"some": to_json(t, v)?}),
        (T::Option(t), V::Option(Some(v))) => to_json(t, v)?,
        (T::Result { ok, err }, V::Result(r)) => {
            let (side, t, v) = match r {
                Ok(v) => ("ok", ok, v),
                Err(v) => ("err", err, v),
            };
            let json = match (t, v) {
                (None, None) => Value::Null,
                (Some(t), Some(v)) => to_json(t, v)?,
                _ => return Err(mismatch(ty, value)),
            };
            json!({side: json})
        }
        _ => return Err(mismatch(ty, value)),
    })
}

fn mismatch(ty: &WitType, value: &WitValue) -> TypeMismatch {
    let name = |s: String| {
        s.split(['(', ' ', '{'])
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    TypeMismatch {
        expected: name(format!("{ty:?}")),
        found: name(format!("{value:?}")),
    }
}

fn float_json(x: f64) -> Value {
    if x.is_nan() {
        json!(NAN)
    } else if x == f64::INFINITY {
        json!(INFINITY)
    } else if x == f64::NEG_INFINITY {
        json!(NEG_INFINITY)
    } else {
        json!(x)
    }
}
