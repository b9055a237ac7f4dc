//! Bounds on an input's size and nesting, checked before any schema work touches it.
//! Measures without recursion and without serialising, so a hostile input costs one linear walk.

use std::fmt::{self, Write as _};

use serde_json::Value;

/// How much input a call may carry. Checked before validation, so the validator (which recurses)
/// only ever sees inputs nested at most `max_depth` deep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    /// The largest input, in bytes of compact serialised JSON. Default 1 MiB.
    pub max_bytes: usize,
    /// The deepest nesting of arrays and objects (`{}` is 1 deep, `{"a": []}` 2). Default 64.
    pub max_depth: usize,
}

impl Default for InputLimits {
    fn default() -> Self {
        Self {
            max_bytes: 1024 * 1024,
            max_depth: 64,
        }
    }
}

/// The size and depth of a JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Measure {
    /// Bytes of compact serialised JSON (as `serde_json::to_string` would write them).
    pub(super) bytes: usize,
    /// Nesting of arrays and objects.
    pub(super) depth: usize,
}

impl InputLimits {
    /// What is wrong with `value`'s size or depth, one line per exceeded limit.
    pub(super) fn problems(&self, value: &Value) -> Vec<String> {
        let measure = measure(value);
        let mut problems = Vec::new();
        if measure.depth > self.max_depth {
            problems.push(format!(
                "input nests {} levels deep; the limit is {}",
                measure.depth, self.max_depth
            ));
        }
        if measure.bytes > self.max_bytes {
            problems.push(format!(
                "input is {}; the limit is {}",
                Bytes(measure.bytes),
                Bytes(self.max_bytes)
            ));
        }
        problems
    }
}

/// Walk `value` with an explicit stack.
pub(super) fn measure(value: &Value) -> Measure {
    let mut bytes = 0;
    let mut depth = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        match value {
            Value::Null => bytes += 4,
            Value::Bool(b) => bytes += if *b { 4 } else { 5 },
            Value::Number(n) => {
                let mut counter = Counter(0);
                let _ = write!(counter, "{n}");
                bytes += counter.0;
            }
            Value::String(s) => bytes += string_len(s),
            Value::Array(items) => {
                depth = depth.max(level + 1);
                bytes += 2 + items.len().saturating_sub(1);
                stack.extend(items.iter().map(|item| (item, level + 1)));
            }
            Value::Object(fields) => {
                depth = depth.max(level + 1);
                // `{}`, a `:` per field and the `,` between fields.
                bytes += 2 + fields.len() + fields.len().saturating_sub(1);
                for (key, item) in fields {
                    bytes += string_len(key);
                    stack.push((item, level + 1));
                }
            }
        }
    }
    Measure { bytes, depth }
}

/// The serialised length of a JSON string, quotes and escapes included.
fn string_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

struct Counter(usize);

impl fmt::Write for Counter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// A byte count for people: `900 bytes`, `3.2 KiB`, `1 MiB`.
struct Bytes(usize);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const KIB: usize = 1024;
        let (scale, unit) = match self.0 {
            n if n < KIB => return write!(f, "{n} bytes"),
            n if n < KIB * KIB => (KIB, "KiB"),
            _ => (KIB * KIB, "MiB"),
        };
        // Precision beyond one decimal is not shown, so the float conversion is fine.
        let value = self.0 as f64 / scale as f64;
        let shown = format!("{value:.1}");
        write!(f, "{} {unit}", shown.strip_suffix(".0").unwrap_or(&shown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> Value {
        let mut value = json!(1);
        for _ in 0..depth {
            value = json!([value]);
        }
        value
    }

    #[test]
    fn measures_exactly_what_serde_json_writes() {
        let samples = [
            json!(null),
            json!({}),
            json!([]),
            json!({"a": [1, 2.5, -3, true, false, null], "b\"\\": "x\n\t\u{1}é", "c": {}}),
            json!([1e300, 12345678901234567890u64, -0.0, "\u{8}\u{c}\r"]),
        ];
        for sample in samples {
            let expected = serde_json::to_string(&sample).unwrap().len();
            assert_eq!(measure(&sample).bytes, expected, "{sample}");
        }
    }

    #[test]
    fn counts_nesting_of_containers() {
        assert_eq!(measure(&json!(1)).depth, 0);
        assert_eq!(measure(&json!({})).depth, 1);
        assert_eq!(measure(&json!({"a": [], "b": {"c": [1]}})).depth, 3);
        assert_eq!(measure(&nested(200)).depth, 200);
    }

    #[test]
    fn rejects_deep_input_with_a_clear_message() {
        let problems = InputLimits::default().problems(&nested(200));
        assert_eq!(problems, ["input nests 200 levels deep; the limit is 64"]);
        assert!(InputLimits::default().problems(&nested(64)).is_empty());
    }

    #[test]
    fn rejects_large_input_with_a_clear_message() {
        let big = json!({ "data": "x".repeat(3_355_443) });
        let problems = InputLimits::default().problems(&big);
        assert_eq!(problems, ["input is 3.2 MiB; the limit is 1 MiB"]);
        let small = InputLimits {
            max_bytes: 10,
            max_depth: 64,
        };
        assert_eq!(
            small.problems(&json!("abcdefghijk")),
            ["input is 13 bytes; the limit is 10 bytes"]
        );
    }

    #[test]
    fn shows_byte_counts_for_people() {
        assert_eq!(Bytes(900).to_string(), "900 bytes");
        assert_eq!(Bytes(1536).to_string(), "1.5 KiB");
        assert_eq!(Bytes(1024 * 1024).to_string(), "1 MiB");
    }
}
