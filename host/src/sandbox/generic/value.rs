//! Component values across wasmtime's dynamic API: [`WitValue`] to and from `Val`.

use wasmtime::component::Val;

use toolhost_call::wit::{WitType, WitValue};

/// A value for wasmtime, of type `ty`; `None` if it is not of that type (values come from
/// [`toolhost_call::wit::json::from_json`] with the same type, so this is a host bug).
pub(crate) fn to_val(ty: &WitType, value: WitValue) -> Option<Val> {
    use WitType as T;
    use WitValue as V;
    let all = |t: &WitType, items: Vec<WitValue>| {
        items
            .into_iter()
            .map(|v| to_val(t, v))
            .collect::<Option<Vec<_>>>()
    };
    let boxed = |t: Option<&WitType>, v: Option<Box<WitValue>>| match (t, v) {
        (Some(t), Some(v)) => to_val(t, *v).map(|v| Some(Box::new(v))),
        (None, None) => Some(None),
        _ => None,
    };
    Some(match (ty, value) {
        (T::Bool, V::Bool(b)) => Val::Bool(b),
        (T::S8, V::S8(n)) => Val::S8(n),
        (T::U8, V::U8(n)) => Val::U8(n),
        (T::S16, V::S16(n)) => Val::S16(n),
        (T::U16, V::U16(n)) => Val::U16(n),
        (T::S32, V::S32(n)) => Val::S32(n),
        (T::U32, V::U32(n)) => Val::U32(n),
        (T::S64, V::S64(n)) => Val::S64(n),
        (T::U64, V::U64(n)) => Val::U64(n),
        (T::F32, V::F32(x)) => Val::Float32(x),
        (T::F64, V::F64(x)) => Val::Float64(x),
        (T::Char, V::Char(c)) => Val::Char(c),
        (T::String, V::String(s)) => Val::String(s),
        (T::List(t), V::List(items)) => Val::List(all(t, items)?),
        (T::FixedList(t, _), V::List(items)) => Val::FixedLengthList(all(t, items)?),
        (T::Tuple(types), V::Tuple(items)) if types.len() == items.len() => Val::Tuple(
            types
                .iter()
                .zip(items)
                .map(|(t, v)| to_val(t, v))
                .collect::<Option<_>>()?,
        ),
        (T::Record(fields), V::Record(values)) if fields.len() == values.len() => Val::Record(
            fields
                .iter()
                .zip(values)
                .map(|((_, t), (name, v))| Some((name, to_val(t, v)?)))
                .collect::<Option<_>>()?,
        ),
        (T::Variant(cases), V::Variant(case, payload)) => {
            let (_, t) = cases.iter().find(|(n, _)| *n == case)?;
            Val::Variant(case, boxed(t.as_ref(), payload)?)
        }
        (T::Enum(_), V::Enum(name)) => Val::Enum(name),
        (T::Flags(_), V::Flags(names)) => Val::Flags(names),
        (T::Option(t), V::Option(v)) => Val::Option(match v {
            None => None,
            Some(v) => Some(Box::new(to_val(t, *v)?)),
        }),
        (T::Result { ok, err }, V::Result(r)) => Val::Result(match r {
            Ok(v) => Ok(boxed(ok.as_deref(), v)?),
            Err(v) => Err(boxed(err.as_deref(), v)?),
        }),
        _ => return None,
    })
}

/// A value from wasmtime; `None` for a kind no [`WitType`] has (wasmtime lifts results by their
/// declared type, which [`read`] checked, so this is a host bug).
pub(crate) fn from_val(value: Val) -> Option<WitValue> {
    use WitValue as V;
    let boxed = |v: Option<Box<Val>>| match v {
        None => Some(None),
        Some(v) => from_val(*v).map(|v| Some(Box::new(v))),
    };
    let all = |items: Vec<Val>| items.into_iter().map(from_val).collect::<Option<Vec<_>>>();
    Some(match value {
        Val::Bool(b) => V::Bool(b),
        Val::S8(n) => V::S8(n),
        Val::U8(n) => V::U8(n),
        Val::S16(n) => V::S16(n),
        Val::U16(n) => V::U16(n),
        Val::S32(n) => V::S32(n),
        Val::U32(n) => V::U32(n),
        Val::S64(n) => V::S64(n),
        Val::U64(n) => V::U64(n),
        Val::Float32(x) => V::F32(x),
        Val::Float64(x) => V::F64(x),
        Val::Char(c) => V::Char(c),
        Val::String(s) => V::String(s),
        Val::List(items) | Val::FixedLengthList(items) => V::List(all(items)?),
        Val::Tuple(items) => V::Tuple(all(items)?),
        Val::Record(fields) => V::Record(
            fields
                .into_iter()
                .map(|(n, v)| Some((n, from_val(v)?)))
                .collect::<Option<_>>()?,
        ),
        Val::Variant(case, payload) => V::Variant(case, boxed(payload)?),
        Val::Enum(name) => V::Enum(name),
        Val::Option(v) => V::Option(boxed(v)?),
        Val::Result(Ok(v)) => V::Result(Ok(boxed(v)?)),
        Val::Result(Err(v)) => V::Result(Err(boxed(v)?)),
        Val::Flags(names) => V::Flags(names),
        Val::Map(_) | Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => {
            return None;
        }
    })
}
