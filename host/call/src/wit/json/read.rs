//! Reading JSON by a WIT type, every problem noted at its JSON pointer.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;

use super::super::ty::{INFINITY, NAN, NEG_INFINITY, WitType};
use super::WitValue;

/// Walks JSON by a type, noting each problem at its JSON pointer.
#[derive(Default)]
pub(super) struct Reader {
    path: String,
    pub(super) problems: Vec<String>,
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
        crate::pointer::push(&mut self.path, segment);
        let out = f(self);
        self.path.truncate(len);
        out
    }

    pub(super) fn read(&mut self, ty: &WitType, json: &Value) -> Option<WitValue> {
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
    pub(super) fn fields(
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
