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

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use super::ty::{INFINITY, NAN, NEG_INFINITY, WitType};

/// A component value with a JSON form: the counterpart of [`WitType`].
#[derive(Debug, Clone)]
pub enum WitValue {
    /// `bool`.
    Bool(bool),
    /// `s8`.
    S8(i8),
    /// `u8`.
    U8(u8),
    /// `s16`.
    S16(i16),
    /// `u16`.
    U16(u16),
    /// `s32`.
    S32(i32),
    /// `u32`.
    U32(u32),
    /// `s64`.
    S64(i64),
    /// `u64`.
    U64(u64),
    /// `f32`.
    F32(f32),
    /// `f64`.
    F64(f64),
    /// `char`.
    Char(char),
    /// `string`.
    String(String),
    /// `list<T>` (also `list<T, N>`).
    List(Vec<WitValue>),
    /// `record`: every field, in declaration order.
    Record(Vec<(String, WitValue)>),
    /// `tuple`.
    Tuple(Vec<WitValue>),
    /// `variant`: the case and its payload.
    Variant(String, Option<Box<WitValue>>),
    /// `enum`.
    Enum(String),
    /// `option`.
    Option(Option<Box<WitValue>>),
    /// `result`.
    Result(Result<Option<Box<WitValue>>, Option<Box<WitValue>>>),
    /// `flags`: the names of the flags set.
    Flags(Vec<String>),
}

/// Values are equal when they would write the same JSON: floats by bits, every NaN alike.
impl PartialEq for WitValue {
    fn eq(&self, other: &Self) -> bool {
        use WitValue as V;
        match (self, other) {
            (V::F32(a), V::F32(b)) => (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits(),
            (V::F64(a), V::F64(b)) => (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits(),
            (V::Bool(a), V::Bool(b)) => a == b,
            (V::S8(a), V::S8(b)) => a == b,
            (V::U8(a), V::U8(b)) => a == b,
            (V::S16(a), V::S16(b)) => a == b,
            (V::U16(a), V::U16(b)) => a == b,
            (V::S32(a), V::S32(b)) => a == b,
            (V::U32(a), V::U32(b)) => a == b,
            (V::S64(a), V::S64(b)) => a == b,
            (V::U64(a), V::U64(b)) => a == b,
            (V::Char(a), V::Char(b)) => a == b,
            (V::String(a), V::String(b)) | (V::Enum(a), V::Enum(b)) => a == b,
            (V::List(a), V::List(b)) | (V::Tuple(a), V::Tuple(b)) => a == b,
            (V::Record(a), V::Record(b)) => a == b,
            (V::Variant(a, x), V::Variant(b, y)) => a == b && x == y,
            (V::Option(a), V::Option(b)) => a == b,
            (V::Result(a), V::Result(b)) => a == b,
            (V::Flags(a), V::Flags(b)) => a == b,
            _ => false,
        }
    }
}

/// A value that does not have the type it is said to have: a host bug, never the guest's doing
/// (wasmtime lifts results by their declared type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a {found} value where the type says {expected}")]
pub struct TypeMismatch {
    expected: String,
    found: String,
}

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
            let ty = cases
                .iter()
                .find(|(name, _)| name == case)
                .ok_or_else(|| mismatch(ty, value))?;
            match (&ty.1, payload) {
                (None, None) => json!({"tag": case}),
                (Some(t), Some(v)) => json!({"tag": case, "value": to_json(t, v)?}),
                _ => return Err(mismatch(ty.1.as_ref().unwrap_or(&T::Bool), value)),
            }
        }
        (T::Enum(_), V::Enum(name)) => json!(name),
        (T::Flags(_), V::Flags(names)) => json!(names),
        (T::Option(_), V::Option(None)) => Value::Null,
        (T::Option(t), V::Option(Some(v))) if t.is_optional() => json!({"some": to_json(t, v)?}),
        (T::Option(t), V::Option(Some(v))) => to_json(t, v)?,
        (T::Result { ok, .. }, V::Result(Ok(v))) => json!({"ok": side_json(ok.as_deref(), v)?}),
        (T::Result { err, .. }, V::Result(Err(v))) => {
            json!({"err": side_json(err.as_deref(), v)?})
        }
        _ => return Err(mismatch(ty, value)),
    })
}

fn side_json(ty: Option<&WitType>, value: &Option<Box<WitValue>>) -> Result<Value, TypeMismatch> {
    match (ty, value) {
        (None, None) => Ok(Value::Null),
        (Some(t), Some(v)) => to_json(t, v),
        (_, Some(v)) => Err(mismatch(&WitType::Tuple(Vec::new()), v)),
        (Some(t), None) => Err(TypeMismatch {
            expected: format!("{t:?}"),
            found: "missing".into(),
        }),
    }
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

/// Walks JSON by a type, noting each problem at its JSON pointer.
#[derive(Default)]
struct Reader {
    path: String,
    problems: Vec<String>,
}

/// At most this many problems are listed.
const MAX_PROBLEMS: usize = 100;

impl Reader {
    fn problem(&mut self, message: impl Into<String>) {
        if self.problems.len() < MAX_PROBLEMS {
            let at = if self.path.is_empty() {
                "/"
            } else {
                &self.path
            };
            self.problems.push(format!("{at}: {}", message.into()));
        }
    }

    /// Run `f` with `segment` pushed onto the path.
    fn at<T>(&mut self, segment: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        let len = self.path.len();
        self.path.push('/');
        for c in segment.chars() {
            match c {
                '~' => self.path.push_str("~0"),
                '/' => self.path.push_str("~1"),
                c => self.path.push(c),
            }
        }
        let out = f(self);
        self.path.truncate(len);
        out
    }

    fn read(&mut self, ty: &WitType, json: &Value) -> Option<WitValue> {
        use WitType as T;
        use WitValue as V;
        match ty {
            T::Bool => match json {
                Value::Bool(b) => Some(V::Bool(*b)),
                other => self.wrong(other, "a boolean"),
            },
            T::S8 => self.integer(ty, json).map(|n| V::S8(n as i8)),
            T::U8 => self.integer(ty, json).map(|n| V::U8(n as u8)),
            T::S16 => self.integer(ty, json).map(|n| V::S16(n as i16)),
            T::U16 => self.integer(ty, json).map(|n| V::U16(n as u16)),
            T::S32 => self.integer(ty, json).map(|n| V::S32(n as i32)),
            T::U32 => self.integer(ty, json).map(|n| V::U32(n as u32)),
            T::S64 => self.integer(ty, json).map(|n| V::S64(n as i64)),
            T::U64 => self.integer(ty, json).map(|n| V::U64(n as u64)),
            T::F32 => {
                let x = self.float(json)?;
                if x.is_finite() && x.abs() > f64::from(f32::MAX) {
                    return self.bad(format!(
                        "{} is beyond the range of f32 (±{:e})",
                        shown(json),
                        f32::MAX
                    ));
                }
                Some(V::F32(x as f32))
            }
            T::F64 => self.float(json).map(V::F64),
            T::Char => {
                let Value::String(s) = json else {
                    return self.wrong(json, "a one-character string");
                };
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Some(V::Char(c)),
                    _ => self.bad(format!("{} is not exactly one character", shown(json))),
                }
            }
            T::String => match json {
                Value::String(s) => Some(V::String(s.clone())),
                other => self.wrong(other, "a string"),
            },
            T::List(_) if ty.is_bytes() => {
                let Value::String(s) = json else {
                    return self.wrong(json, "a base64 string");
                };
                match BASE64.decode(s) {
                    Ok(bytes) => Some(V::List(bytes.into_iter().map(V::U8).collect())),
                    Err(e) => self.bad(format!("not valid base64 ({e})")),
                }
            }
            T::List(t) => {
                let Value::Array(items) = json else {
                    return self.wrong(json, "an array");
                };
                self.items(std::iter::repeat(&**t), items).map(V::List)
            }
            T::FixedList(t, n) => {
                let Value::Array(items) = json else {
                    return self.wrong(json, "an array");
                };
                if items.len() != *n as usize {
                    return self.bad(format!("has {} items; it must have {n}", items.len()));
                }
                self.items(std::iter::repeat(&**t), items).map(V::List)
            }
            T::Tuple(types) => {
                let Value::Array(items) = json else {
                    return self.wrong(json, "an array");
                };
                if items.len() != types.len() {
                    return self.bad(format!(
                        "has {} items; it must have {}",
                        items.len(),
                        types.len()
                    ));
                }
                self.items(types.iter(), items).map(V::Tuple)
            }
            T::Record(fields) => self.fields(fields, json).map(V::Record),
            T::Variant(cases) => self.variant(cases, json),
            T::Enum(names) => {
                let Value::String(s) = json else {
                    return self.wrong(json, "a string");
                };
                if names.contains(s) {
                    Some(V::Enum(s.clone()))
                } else {
                    self.bad(format!("{} is not one of {}", shown(json), listed(names)))
                }
            }
            T::Flags(names) => {
                let Value::Array(items) = json else {
                    return self.wrong(json, "an array of flag names");
                };
                let mut set: Vec<String> = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.at(&i.to_string(), |r| match item {
                        Value::String(s) if set.contains(s) => {
                            r.problem(format!("{} appears twice", shown(item)));
                        }
                        Value::String(s) if names.contains(s) => set.push(s.clone()),
                        Value::String(_) => {
                            r.problem(format!("{} is not one of {}", shown(item), listed(names)))
                        }
                        other => {
                            r.wrong::<()>(other, "a flag name");
                        }
                    });
                }
                Some(V::Flags(set))
            }
            T::Option(_) if json.is_null() => Some(V::Option(None)),
            T::Option(t) if t.is_optional() => {
                let inner = self.tagged(json, &["some"])?;
                let v = self.at("some", |r| r.read(t, inner.1))?;
                Some(V::Option(Some(Box::new(v))))
            }
            T::Option(t) => self.read(t, json).map(|v| V::Option(Some(Box::new(v)))),
            T::Result { ok, err } => {
                let (side, inner) = self.tagged(json, &["ok", "err"])?;
                let ty = if side == "ok" { ok } else { err };
                let v = self.at(side, |r| match ty {
                    None if inner.is_null() => Some(None),
                    None => r.bad("must be null: this side of the result has no value"),
                    Some(t) => r.read(t, inner).map(|v| Some(Box::new(v))),
                })?;
                Some(V::Result(if side == "ok" { Ok(v) } else { Err(v) }))
            }
        }
    }

    /// An object with exactly one key, one of `keys`: that key and its value.
    fn tagged<'j>(
        &mut self,
        json: &'j Value,
        keys: &[&'static str],
    ) -> Option<(&'static str, &'j Value)> {
        let want = || {
            keys.iter()
                .map(|k| format!("{{\"{k}\": …}}"))
                .collect::<Vec<_>>()
                .join(" or ")
        };
        let Value::Object(object) = json else {
            return self.wrong(json, &want());
        };
        let mut found = object
            .iter()
            .filter_map(|(k, v)| keys.iter().find(|key| **key == k).map(|key| (*key, v)));
        match (found.next(), object.len()) {
            (Some(hit), 1) => Some(hit),
            _ => self.bad(format!("must be {}, with no other keys", want())),
        }
    }

    fn variant(&mut self, cases: &[(String, Option<WitType>)], json: &Value) -> Option<WitValue> {
        let Value::Object(object) = json else {
            return self.wrong(json, "an object with a \"tag\"");
        };
        let mut ok = true;
        for key in object
            .keys()
            .filter(|k| !matches!(k.as_str(), "tag" | "value"))
        {
            self.problem(format!(
                "unknown property \"{key}\" (a case has \"tag\" and \"value\")"
            ));
            ok = false;
        }
        let Some(tag) = object.get("tag") else {
            return self.bad("\"tag\" is a required property");
        };
        let names: Vec<String> = cases.iter().map(|(n, _)| n.clone()).collect();
        let Some((name, payload)) = cases.iter().find(|(n, _)| Some(n.as_str()) == tag.as_str())
        else {
            return self.at("tag", |r| {
                r.bad(format!("{} is not one of {}", shown(tag), listed(&names)))
            });
        };
        let value = match (payload, object.get("value")) {
            (None, None) => None,
            (None, Some(_)) => {
                return self.bad(format!("case \"{name}\" takes no \"value\""));
            }
            (Some(t), None) if t.is_optional() => Some(Box::new(WitValue::Option(None))),
            (Some(_), None) => return self.bad(format!("case \"{name}\" needs a \"value\"")),
            (Some(t), Some(v)) => Some(Box::new(self.at("value", |r| r.read(t, v))?)),
        };
        ok.then(|| WitValue::Variant(name.clone(), value))
    }

    /// An object with these fields (`option` ones may be missing), nothing else.
    fn fields(
        &mut self,
        fields: &[(String, WitType)],
        json: &Value,
    ) -> Option<Vec<(String, WitValue)>> {
        let Value::Object(object) = json else {
            return self.wrong(json, "an object");
        };
        let mut ok = true;
        for key in object.keys() {
            if !fields.iter().any(|(name, _)| name == key) {
                let known: Vec<String> = fields.iter().map(|(n, _)| n.clone()).collect();
                self.problem(format!(
                    "unknown property \"{key}\" (allowed: {})",
                    listed(&known)
                ));
                ok = false;
            }
        }
        let mut out = Vec::with_capacity(fields.len());
        for (name, ty) in fields {
            let value = match object.get(name) {
                Some(v) => self.at(name, |r| r.read(ty, v)),
                None if ty.is_optional() => Some(WitValue::Option(None)),
                None => {
                    self.problem(format!("\"{name}\" is a required property"));
                    None
                }
            };
            match value {
                Some(v) => out.push((name.clone(), v)),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn items<'t>(
        &mut self,
        types: impl Iterator<Item = &'t WitType>,
        items: &[Value],
    ) -> Option<Vec<WitValue>> {
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, (ty, item)) in types.zip(items).enumerate() {
            match self.at(&i.to_string(), |r| r.read(ty, item)) {
                Some(v) => out.push(v),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// An integer within `ty`'s bounds, as an i128 that fits it.
    fn integer(&mut self, ty: &WitType, json: &Value) -> Option<i128> {
        let Value::Number(n) = json else {
            return self.wrong(json, "an integer");
        };
        let exact = if let Some(u) = n.as_u64() {
            i128::from(u)
        } else if let Some(i) = n.as_i64() {
            i128::from(i)
        } else {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x.fract() != 0.0 {
                return self.bad(format!("{n} is not an integer"));
            }
            // Beyond 2^53 a float no longer holds every integer: the text may not be what it meant.
            if x.abs() > 9_007_199_254_740_992.0 {
                return self.bad(format!(
                    "{n} is not exact as written; write the integer in full, without a fraction or exponent"
                ));
            }
            x as i128
        };
        let (min, max) = ty.integer_bounds().expect("an integer type");
        let (min, max) = (as_i128(&min), as_i128(&max));
        if exact < min || exact > max {
            return self.bad(format!(
                "{n} is out of range for {} ({min} to {max})",
                wit_name(ty)
            ));
        }
        Some(exact)
    }

    fn float(&mut self, json: &Value) -> Option<f64> {
        match json {
            Value::Number(n) => n
                .as_f64()
                .or_else(|| self.bad(format!("{n} is not a number"))),
            Value::String(s) if s == NAN => Some(f64::NAN),
            Value::String(s) if s == INFINITY => Some(f64::INFINITY),
            Value::String(s) if s == NEG_INFINITY => Some(f64::NEG_INFINITY),
            other => self.wrong(other, "a number (or \"NaN\", \"Infinity\", \"-Infinity\")"),
        }
    }

    fn wrong<T>(&mut self, json: &Value, expected: &str) -> Option<T> {
        self.bad(format!("{} is not {expected}", shown(json)))
    }

    fn bad<T>(&mut self, message: impl Into<String>) -> Option<T> {
        self.problem(message);
        None
    }
}

fn as_i128(v: &Value) -> i128 {
    v.as_u64()
        .map(i128::from)
        .or_else(|| v.as_i64().map(i128::from))
        .unwrap_or_default()
}

fn wit_name(ty: &WitType) -> &'static str {
    match ty {
        WitType::S8 => "s8",
        WitType::U8 => "u8",
        WitType::S16 => "s16",
        WitType::U16 => "u16",
        WitType::S32 => "s32",
        WitType::U32 => "u32",
        WitType::S64 => "s64",
        WitType::U64 => "u64",
        _ => "this type",
    }
}

/// A JSON value as shown in a message, abbreviated when long.
fn shown(json: &Value) -> String {
    let text = json.to_string();
    if text.len() > 60 {
        format!("{}...", crate::text::prefix(&text, 60))
    } else {
        text
    }
}

fn listed(names: &[String]) -> String {
    let mut out: Vec<String> = names.iter().take(20).map(|n| format!("\"{n}\"")).collect();
    if names.len() > 20 {
        out.push(format!("… {} more", names.len() - 20));
    }
    out.join(", ")
}
