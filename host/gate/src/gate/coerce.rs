//! Safe coercions of an invalid input: strings that models often send in place of booleans,
//! numbers, `null` or JSON, turned into the type the schema wants at that place.
//! Driven by the validator's type errors; the caller accepts the result only if it validates.

use std::fmt;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, JsonTypeSet, ValidationError, Validator};
use serde::Serialize;
use serde_json::{Number, Value};

use super::limits::InputLimits;
use super::violation::{describe, display_path};

/// Coercion rounds at most: parsing a JSON string can expose type errors inside it.
const MAX_ROUNDS: usize = 8;

/// One string in the input replaced by the value the schema wants there.
///
/// Where the schema wants (only) a type that the string is not, the string is replaced by:
/// - a boolean, if it is exactly `true` or `false`;
/// - an integer, if it is a JSON integer literal that fits 64 bits (`"3"`, `"-7"`, not `"+3"`,
///   `" 3"` or `"2.5"`);
/// - a number, if it is any JSON number literal (`"2.5"`, `"1e3"`; never NaN or infinity);
/// - `null`, if it is exactly `null`;
/// - an object or array, if it parses as JSON of that type (surrounding whitespace allowed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coercion {
    /// A JSON pointer to the value (`/` for the root).
    pub path: String,
    /// The string as given.
    pub from: String,
    /// The JSON type it became: `boolean`, `integer`, `number`, `null`, `object` or `array`.
    pub to: &'static str,
}

impl fmt::Display for Coercion {
    /// `/count: string "3" -> integer`, with a long string abbreviated.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 40;
        let from = match self.from.char_indices().nth(SHOWN) {
            Some((cut, _)) => format!("{}...", &self.from[..cut]),
            None => self.from.clone(),
        };
        write!(f, "{}: string {from:?} -> {}", self.path, self.to)
    }
}

/// Instance paths with the JSON types the schema wanted there, in the validator's order.
#[derive(Debug, Default)]
pub(super) struct Targets(Vec<(String, JsonTypeSet)>);

impl Targets {
    /// Record the type errors in `error`, including those inside `anyOf` and `oneOf` branches.
    pub(super) fn note(&mut self, error: &ValidationError<'_>) {
        self.note_kind(
            error.kind(),
            error.instance_path().as_str(),
            error.instance(),
        );
    }

    fn note_kind(&mut self, kind: &ValidationErrorKind, path: &str, instance: &Value) {
        let mut pending = vec![(kind, path, instance)];
        while let Some((kind, path, instance)) = pending.pop() {
            match kind {
                ValidationErrorKind::Type { kind } if instance.is_string() => {
                    let wanted = match kind {
                        TypeKind::Single(one) => JsonTypeSet::from(*one),
                        TypeKind::Multiple(set) => *set,
                    };
                    self.add(path, wanted);
                }
                ValidationErrorKind::AnyOf { context }
                | ValidationErrorKind::OneOfNotValid { context } => {
                    for error in context.iter().flatten() {
                        pending.push((
                            error.kind(),
                            error.instance_path().as_str(),
                            &**error.instance(),
                        ));
                    }
                }
                _ => {}
            }
        }
    }

    fn add(&mut self, path: &str, wanted: JsonTypeSet) {
        match self.0.iter_mut().find(|(p, _)| p == path) {
            Some((_, set)) => {
                for ty in wanted {
                    *set = *set | ty;
                }
            }
            None => self.0.push((path.to_owned(), wanted)),
        }
    }
}

/// Apply coercions to `input` until it validates, for at most [`MAX_ROUNDS`] rounds; `None` if
/// it never does, if a round changes nothing, or if a coerced input breaks `limits`.
pub(super) fn repair(
    validator: &Validator,
    input: &Value,
    mut targets: Targets,
    limits: &InputLimits,
) -> Option<(Value, Vec<Coercion>)> {
    let mut value = input.clone();
    let mut coercions = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let before = coercions.len();
        for (path, wanted) in &targets.0 {
            let Some(slot) = value.pointer_mut(path) else {
                continue;
            };
            let Value::String(text) = &mut *slot else {
                continue;
            };
            let Some((new, to)) = convert(text, *wanted) else {
                continue;
            };
            let from = std::mem::take(text);
            *slot = new;
            coercions.push(Coercion {
                path: display_path(path).to_owned(),
                from,
                to,
            });
        }
        if coercions.len() == before || !limits.problems(&value).is_empty() {
            return None;
        }
        targets = Targets::default();
        let problems = describe(validator.iter_errors(&value), |e| targets.note(e));
        if problems.is_empty() {
            return Some((value, coercions));
        }
    }
    None
}

/// `text` as one of the `wanted` types, and that type's name.
fn convert(text: &str, wanted: JsonTypeSet) -> Option<(Value, &'static str)> {
    let wants = |ty| wanted.contains(ty);
    match text {
        "true" | "false" if wants(JsonType::Boolean) => {
            return Some((Value::Bool(text == "true"), "boolean"));
        }
        "null" if wants(JsonType::Null) => return Some((Value::Null, "null")),
        _ => {}
    }
    if (wants(JsonType::Integer) || wants(JsonType::Number))
        && let Some(number) = number(text)
    {
        let integral = number.is_i64() || number.is_u64();
        if integral && wants(JsonType::Integer) {
            return Some((Value::Number(number), "integer"));
        }
        if wants(JsonType::Number) {
            return Some((Value::Number(number), "number"));
        }
    }
    let trimmed = text.trim_start();
    let container = (trimmed.starts_with('{') && wants(JsonType::Object))
        || (trimmed.starts_with('[') && wants(JsonType::Array));
    if container {
        // serde_json stops at 128 levels of nesting; the caller re-checks the limits.
        match serde_json::from_str::<Value>(text).ok()? {
            parsed @ Value::Object(_) => return Some((parsed, "object")),
            parsed @ Value::Array(_) => return Some((parsed, "array")),
            _ => {}
        }
    }
    None
}

/// A JSON number literal with nothing around it; integer literals must fit 64 bits.
fn number(text: &str) -> Option<Number> {
    let first = text.bytes().next()?;
    let last = text.bytes().last()?;
    if !(first == b'-' || first.is_ascii_digit()) || !last.is_ascii_digit() {
        return None;
    }
    let Ok(Value::Number(number)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    let integer_literal = !text.contains(['.', 'e', 'E']);
    if integer_literal && !(number.is_i64() || number.is_u64()) {
        return None;
    }
    Some(number)
}

#[cfg(test)]
mod tests;
