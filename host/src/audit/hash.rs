//! The input hash every audit line carries: SHA-256 of a canonical JSON text, so that equal inputs hash
//! equal whatever their key order. Pure; streamed into the hasher without an intermediate string.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `input`'s [canonical JSON text](canonical_json).
///
/// Every call hashes its input, so the canonical text is streamed into the hasher as it is produced: no
/// intermediate string, no per-key copies.
pub fn input_sha256(input: &Value) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    write_canonical(input, &mut hasher);
    let mut hex = [0u8; 64];
    for (pair, byte) in hex.chunks_exact_mut(2).zip(hasher.finalize()) {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0xf)];
    }
    // Only the digits of `HEX` went in.
    String::from_utf8(hex.to_vec()).unwrap_or_default()
}

/// The canonical JSON text of `value`: no whitespace, object keys sorted by code point at every
/// depth, strings and numbers as serde_json writes them. Independent of serde_json's
/// `preserve_order` feature, so a hash does not change when some dependency turns it on.
/// (Close to, but not exactly, RFC 8785: keys sort by code point, numbers keep serde_json's form.)
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Only serde_json's output and ASCII punctuation went in.
    String::from_utf8(out).unwrap_or_default()
}

/// Where canonical JSON text goes: a buffer, or straight into a hasher.
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Sink for Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

/// Lets serde_json write a string or a scalar, escaped exactly as `Value`'s `Display` would, into a sink.
struct SinkWriter<'a, S: Sink>(&'a mut S);

impl<S: Sink> std::io::Write for SinkWriter<'_, S> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.put(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn write_canonical(value: &Value, out: &mut impl Sink) {
    match value {
        Value::Array(items) => {
            out.put(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(b",");
                }
                write_canonical(item, out);
            }
            out.put(b"]");
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.put(b"{");
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.put(b",");
                }
                // Writing JSON into memory cannot fail.
                let _ = serde_json::to_writer(SinkWriter(out), key);
                out.put(b":");
                write_canonical(item, out);
            }
            out.put(b"}");
        }
        scalar => {
            let _ = serde_json::to_writer(SinkWriter(out), scalar);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn hashes_equal_inputs_equally_whatever_the_key_order() {
        let a = json!({"b": 1, "a": {"y": [true, null], "x": "é\n"}});
        let b: Value = serde_json::from_str(r#"{"a":{"x":"é\n","y":[true,null]},"b":1}"#).unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"é\n","y":[true,null]},"b":1}"#
        );
        assert_eq!(input_sha256(&a), input_sha256(&b));
        assert_eq!(
            input_sha256(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn streamed_hash_is_the_hash_of_the_canonical_text() {
        let v =
            json!({"z\"q": [1.5, -2, "\u{1F600}\t"], "a": {"": null, "\u{e9}": false}, "n": 1e300});
        let text = canonical_json(&v);
        let expected: String = Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(input_sha256(&v), expected);
    }
}
