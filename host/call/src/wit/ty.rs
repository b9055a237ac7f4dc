//! The WIT value types a generic tool's parameters and results may have, and the JSON Schema
//! (2020-12) each one is shown to models as.

use serde_json::{Value, json};

/// A WIT type that has a JSON form. Resources, futures, streams, error contexts and maps have none:
/// the sandbox skips a function that mentions one, so they cannot appear here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WitType {
    /// `bool`.
    Bool,
    /// `s8`.
    S8,
    /// `u8`.
    U8,
    /// `s16`.
    S16,
    /// `u16`.
    U16,
    /// `s32`.
    S32,
    /// `u32`.
    U32,
    /// `s64`.
    S64,
    /// `u64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `char`: one Unicode scalar value.
    Char,
    /// `string`.
    String,
    /// `list<T>`; `list<u8>` is a base64 string.
    List(Box<WitType>),
    /// `list<T, N>`: exactly N elements.
    FixedList(Box<WitType>, u32),
    /// `record`: named fields, in order.
    Record(Vec<(String, WitType)>),
    /// `tuple<...>`.
    Tuple(Vec<WitType>),
    /// `variant`: named cases, each with an optional payload.
    Variant(Vec<(String, Option<WitType>)>),
    /// `enum`.
    Enum(Vec<String>),
    /// `option<T>`.
    Option(Box<WitType>),
    /// `result<T, E>`, either side possibly without a payload.
    Result {
        /// The success payload.
        ok: Option<Box<WitType>>,
        /// The error payload.
        err: Option<Box<WitType>>,
    },
    /// `flags`.
    Flags(Vec<String>),
}

/// The strings that stand for the float values JSON cannot write, in both directions.
pub const NAN: &str = "NaN";
/// See [`NAN`].
pub const INFINITY: &str = "Infinity";
/// See [`NAN`].
pub const NEG_INFINITY: &str = "-Infinity";

impl WitType {
    /// Whether a record field or parameter of this type may be left out (it is an `option`).
    pub fn is_optional(&self) -> bool {
        matches!(self, Self::Option(_))
    }

    /// Whether this is `list<u8>`, carried as base64 text.
    pub(crate) fn is_bytes(&self) -> bool {
        matches!(self, Self::List(t) if **t == Self::U8)
    }

    /// The inclusive bounds of an integer type, as JSON numbers.
    pub(crate) fn integer_bounds(&self) -> Option<(Value, Value)> {
        Some(match self {
            Self::S8 => (json!(i8::MIN), json!(i8::MAX)),
            Self::U8 => (json!(u8::MIN), json!(u8::MAX)),
            Self::S16 => (json!(i16::MIN), json!(i16::MAX)),
            Self::U16 => (json!(u16::MIN), json!(u16::MAX)),
            Self::S32 => (json!(i32::MIN), json!(i32::MAX)),
            Self::U32 => (json!(u32::MIN), json!(u32::MAX)),
            Self::S64 => (json!(i64::MIN), json!(i64::MAX)),
            Self::U64 => (json!(u64::MIN), json!(u64::MAX)),
            _ => return None,
        })
    }

    /// The JSON Schema of this type's JSON form (see [`super::json`] for the mapping).
    pub fn schema(&self) -> Value {
        if let Some((min, max)) = self.integer_bounds() {
            return json!({"type": "integer", "minimum": min, "maximum": max});
        }
        match self {
            Self::Bool => json!({"type": "boolean"}),
            Self::F32 => float_schema(Some(f64::from(f32::MAX))),
            Self::F64 => float_schema(None),
            Self::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
            Self::String => json!({"type": "string"}),
            Self::List(_) if self.is_bytes() => {
                json!({"type": "string", "contentEncoding": "base64"})
            }
            Self::List(t) => json!({"type": "array", "items": t.schema()}),
            Self::FixedList(t, n) => {
                json!({"type": "array", "items": t.schema(), "minItems": n, "maxItems": n})
            }
            Self::Record(fields) => object_schema(fields.iter().map(|(n, t)| (n.as_str(), t))),
            Self::Tuple(types) if types.is_empty() => json!({"type": "array", "maxItems": 0}),
            Self::Tuple(types) => json!({
                "type": "array",
                "prefixItems": types.iter().map(WitType::schema).collect::<Vec<_>>(),
                "items": false,
                "minItems": types.len(),
            }),
            Self::Variant(cases) => json!({
                "oneOf": cases
                    .iter()
                    .map(|(name, payload)| tagged(name, payload.as_ref()))
                    .collect::<Vec<_>>(),
            }),
            Self::Enum(names) => json!({"type": "string", "enum": names}),
            Self::Option(t) if t.is_optional() => json!({
                "anyOf": [
                    {"type": "null"},
                    {
                        "type": "object",
                        "properties": {"some": t.schema()},
                        "required": ["some"],
                        "additionalProperties": false,
                    },
                ],
            }),
            Self::Option(t) => json!({"anyOf": [{"type": "null"}, t.schema()]}),
            Self::Result { ok, err } => json!({
                "oneOf": [
                    side_schema("ok", ok.as_deref()),
                    side_schema("err", err.as_deref()),
                ],
            }),
            Self::Flags(names) => json!({
                "type": "array",
                "items": {"enum": names},
                "uniqueItems": true,
            }),
            _ => unreachable!("integers are handled above"),
        }
    }
}

/// A number, or one of the strings for the values JSON cannot write; `max` bounds finite ones.
fn float_schema(max: Option<f64>) -> Value {
    let mut number = json!({"type": "number"});
    if let Some(max) = max {
        number["minimum"] = json!(-max);
        number["maximum"] = json!(max);
    }
    json!({"anyOf": [number, {"enum": [NAN, INFINITY, NEG_INFINITY]}]})
}

/// An object with these properties; every one not an `option` is required; nothing else allowed.
pub(crate) fn object_schema<'a>(fields: impl Iterator<Item = (&'a str, &'a WitType)>) -> Value {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (name, ty) in fields {
        if !ty.is_optional() {
            required.push(Value::from(name));
        }
        properties.insert(name.to_owned(), ty.schema());
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// One variant case: `{"tag": name}` or `{"tag": name, "value": payload}`.
fn tagged(name: &str, payload: Option<&WitType>) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": {"tag": {"const": name}},
        "required": ["tag"],
        "additionalProperties": false,
    });
    if let Some(t) = payload {
        schema["properties"]["value"] = t.schema();
        if !t.is_optional() {
            schema["required"] = json!(["tag", "value"]);
        }
    }
    schema
}

/// One side of a `result`: `{"ok": value}` or `{"err": value}`; `null` when it has no payload.
fn side_schema(side: &str, payload: Option<&WitType>) -> Value {
    let value = payload.map_or_else(|| json!({"type": "null"}), WitType::schema);
    json!({
        "type": "object",
        "properties": {side: value},
        "required": [side],
        "additionalProperties": false,
    })
}
