//! Component values with a JSON form, as plain data: what [`super::json`] reads and writes and the
//! sandbox carries across wasmtime's `Val`.

/// A component value with a JSON form: the counterpart of [`WitType`](super::WitType).
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
    pub(super) expected: String,
    pub(super) found: String,
}
