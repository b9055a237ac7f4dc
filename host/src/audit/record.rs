//! The audit record and its wire shape; building a record is pure, writing it is `writer`'s job.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::exec::ErrorKind;

/// The schema version written in every record's `"v"` field. Bumped only on incompatible changes;
/// new optional fields do not bump it, so readers must ignore fields they do not know.
pub const SCHEMA_VERSION: u32 = 1;

/// One finished call, as one line of the audit log.
///
/// Every field is always written (absent values as `null`), except `input`, which appears only
/// when the log is configured to include inputs. Field order is stable, `"v"` first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Schema version, [`SCHEMA_VERSION`] for records written by this build.
    pub v: u32,
    /// The id of this call, as returned to the caller in `CallOutcome::call_id`.
    pub call_id: String,
    /// The batch or request this call belongs to.
    pub parent_id: Option<String>,
    /// Which front end asked: "cli", "mcp", "batch", ...
    pub origin: String,
    /// When the call arrived, UTC, microsecond precision.
    #[serde(with = "rfc3339_micros")]
    pub ts_start: DateTime<Utc>,
    /// When the call finished, UTC, microsecond precision.
    #[serde(with = "rfc3339_micros")]
    pub ts_end: DateTime<Utc>,
    /// The tool name as the caller gave it (it may name no tool).
    pub tool: String,
    /// The plugin providing the tool; `None` when the tool is unknown.
    pub plugin: Option<String>,
    /// Lowercase hex SHA-256 of the input's [canonical JSON text](canonical_json), as the caller
    /// sent it (before coercion), so equal inputs hash equal whatever their key order.
    pub input_sha256: String,
    /// The input itself, only when the log is configured with `include-input`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub input: Option<Value>,
    /// What the permission gate decided.
    pub decision: Decision,
    /// What the validator changed to make the input fit the schema, one note per change.
    #[serde(default)]
    pub coercions: Vec<String>,
    /// How the call ended.
    pub outcome: Outcome,
    /// Why it failed, on every outcome but `ok`.
    pub error_kind: Option<ErrorKind>,
    /// How long the call took, in microseconds (monotonic clock, measured by the pipeline).
    pub duration_us: u64,
    /// Fuel the guest consumed, when it ran.
    pub fuel_used: Option<u64>,
    /// The guest's peak linear memory, in bytes, when it ran.
    pub peak_memory_bytes: Option<u64>,
    /// Size of the output returned to the caller, in bytes, after truncation.
    pub output_bytes: u64,
    /// Whether the output was cut to the size limit.
    pub truncated: bool,
}

impl AuditRecord {
    /// Starts a record for a call arriving now: hashes `input` (it is not stored; see
    /// [`AuditLog::begin`](super::AuditLog::begin)), and marks the call as failed with
    /// `internal` and `not_reached` until [`finish`](Self::finish) and the gate say otherwise,
    /// so a record written by mistake before the end never claims success.
    pub fn begin(
        call_id: impl Into<String>,
        origin: impl Into<String>,
        tool: impl Into<String>,
        input: &Value,
    ) -> Self {
        let now = now_micros();
        Self {
            v: SCHEMA_VERSION,
            call_id: call_id.into(),
            parent_id: None,
            origin: origin.into(),
            ts_start: now,
            ts_end: now,
            tool: tool.into(),
            plugin: None,
            input_sha256: input_sha256(input),
            input: None,
            decision: Decision::NotReached,
            coercions: Vec::new(),
            outcome: Outcome::Error,
            error_kind: Some(ErrorKind::Internal),
            duration_us: 0,
            fuel_used: None,
            peak_memory_bytes: None,
            output_bytes: 0,
            truncated: false,
        }
    }

    /// Ends the record now: sets `ts_end`, the outcome derived from `error_kind`, and the
    /// duration the pipeline measured (the same one it gives to `Stats::record`).
    pub fn finish(&mut self, error_kind: Option<ErrorKind>, duration: Duration) {
        self.ts_end = now_micros();
        self.outcome = Outcome::from_error_kind(error_kind);
        self.error_kind = error_kind;
        self.duration_us = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
    }

    /// A fresh call id: a UUID v7, so ids sort by time.
    pub fn new_call_id() -> String {
        uuid::Uuid::now_v7().to_string()
    }
}

/// What the permission gate decided, serialized with a `"kind"` tag:
/// `{"kind":"allowed","by":"rule allow: fs.read"}`, `{"kind":"denied","by":"rule deny: net"}`,
/// `{"kind":"asked","answer":true}`, or `{"kind":"not_reached"}` for calls that failed before
/// the gate (unknown tool, invalid input). `not_reached` is an object like the others rather
/// than a bare string, so every reader can branch on `decision.kind` alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    /// The gate let the call through without asking.
    Allowed {
        /// The rule or mode that allowed it.
        by: String,
    },
    /// The gate refused the call without asking.
    Denied {
        /// The rule or mode that denied it.
        by: String,
    },
    /// The gate asked an approver, who answered.
    Asked {
        /// True when the approver allowed the call.
        answer: bool,
    },
    /// The call failed before reaching the gate.
    NotReached,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool ran and succeeded.
    Ok,
    /// The call failed; `error_kind` says why.
    Error,
    /// The caller cancelled the call.
    Cancelled,
}

impl Outcome {
    /// The outcome of a call that failed with `error_kind`, or succeeded with `None`.
    pub fn from_error_kind(error_kind: Option<ErrorKind>) -> Self {
        match error_kind {
            None => Self::Ok,
            Some(ErrorKind::Cancelled) => Self::Cancelled,
            Some(_) => Self::Error,
        }
    }

    /// The name used in audit lines: "ok", "error" or "cancelled".
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// A string that names no [`Outcome`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown outcome {0:?}: expected ok, error or cancelled")]
pub struct UnknownOutcome(pub String);

impl FromStr for Outcome {
    type Err = UnknownOutcome;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ok" => Ok(Self::Ok),
            "error" => Ok(Self::Error),
            "cancelled" => Ok(Self::Cancelled),
            other => Err(UnknownOutcome(other.to_owned())),
        }
    }
}

/// Lowercase hex SHA-256 of `input`'s [canonical JSON text](canonical_json).
///
/// Every call hashes its input, so the canonical text is streamed into the hasher as it is produced: no
/// intermediate string, no per-key copies.
pub fn input_sha256(input: &Value) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    write_canonical(input, &mut hasher);
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize() {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    hex
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

/// Now, cut to the microseconds the wire format keeps, so a record equals itself after a round trip.
fn now_micros() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

/// Keeps `"input": null` as `Some(Value::Null)`; a missing key is `None` through `default`.
fn present_value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// RFC 3339 in UTC with exactly six fractional digits and a `Z`: `2025-06-01T12:00:00.000123Z`.
mod rfc3339_micros {
    use chrono::{DateTime, SecondsFormat, Utc};
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub(super) fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Micros, true))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(D::Error::custom)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    /// A record with every field set, fixed in time: the golden line.
    pub(in crate::audit) fn sample() -> AuditRecord {
        AuditRecord {
            v: SCHEMA_VERSION,
            call_id: "0190a5c4-7d2e-7b3a-9c1f-2f6f0e4b8a11".into(),
            parent_id: Some("batch-7".into()),
            origin: "mcp".into(),
            ts_start: "2025-06-01T12:00:00.000123Z".parse().unwrap(),
            ts_end: "2025-06-01T12:00:00.042123Z".parse().unwrap(),
            tool: "fetch_url".into(),
            plugin: Some("net-tools".into()),
            input_sha256: input_sha256(&json!({"url": "https://example.com"})),
            input: None,
            decision: Decision::Allowed {
                by: "rule allow: net.example.com".into(),
            },
            coercions: vec!["timeout: \"5\" -> 5".into()],
            outcome: Outcome::Ok,
            error_kind: None,
            duration_us: 42000,
            fuel_used: Some(1_250_000),
            peak_memory_bytes: Some(2_097_152),
            output_bytes: 1024,
            truncated: false,
        }
    }

    #[test]
    fn serializes_to_the_golden_line() {
        let line = serde_json::to_string(&sample()).unwrap();
        let golden = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/audit/testdata/record.v1.jsonl"
        );
        if std::env::var_os("BLESS").is_some() {
            std::fs::write(golden, format!("{line}\n")).unwrap();
        }
        let expected = std::fs::read_to_string(golden).expect("golden file; run with BLESS=1");
        assert_eq!(line, expected.trim_end());
    }

    #[test]
    fn round_trips_every_decision_and_optional_input() {
        let decisions = [
            Decision::Allowed {
                by: "mode: trust".into(),
            },
            Decision::Denied {
                by: "rule deny: x".into(),
            },
            Decision::Asked { answer: false },
            Decision::NotReached,
        ];
        for (decision, input) in
            decisions
                .into_iter()
                .zip([None, Some(json!(null)), Some(json!({"a": [1, 2]})), None])
        {
            let record = AuditRecord {
                decision,
                input,
                error_kind: Some(ErrorKind::Denied),
                outcome: Outcome::Error,
                ..sample()
            };
            let line = serde_json::to_string(&record).unwrap();
            assert!(line.starts_with(r#"{"v":1,"#), "{line}");
            let back: AuditRecord = serde_json::from_str(&line).unwrap();
            assert_eq!(back, record);
        }
    }

    #[test]
    fn not_reached_is_tagged_like_the_other_decisions() {
        let text = serde_json::to_string(&Decision::NotReached).unwrap();
        assert_eq!(text, r#"{"kind":"not_reached"}"#);
        let text = serde_json::to_string(&Decision::Asked { answer: true }).unwrap();
        assert_eq!(text, r#"{"kind":"asked","answer":true}"#);
    }

    #[test]
    fn timestamps_have_six_fractional_digits_in_utc() {
        let record = AuditRecord {
            ts_start: "2025-06-01T14:00:00+02:00".parse().unwrap(),
            ..sample()
        };
        let value = serde_json::to_value(&record).unwrap();
        assert_eq!(value["ts_start"], "2025-06-01T12:00:00.000000Z");
    }

    #[test]
    fn reads_records_with_unknown_fields_and_missing_coercions() {
        let mut value = serde_json::to_value(sample()).unwrap();
        let map = value.as_object_mut().unwrap();
        map.remove("coercions");
        map.insert("added_later".into(), json!(true));
        let back: AuditRecord = serde_json::from_value(value).unwrap();
        assert!(back.coercions.is_empty());
    }

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

    #[test]
    fn begin_and_finish_fill_the_call_timeline() {
        let mut record = AuditRecord::begin("id-1", "cli", "echo", &json!({"text": "hi"}));
        assert_eq!(record.outcome, Outcome::Error);
        assert_eq!(record.decision, Decision::NotReached);
        record.finish(Some(ErrorKind::Cancelled), Duration::from_micros(1500));
        assert_eq!(record.outcome, Outcome::Cancelled);
        assert_eq!(record.duration_us, 1500);
        assert!(record.ts_end >= record.ts_start);
        record.finish(None, Duration::from_millis(2));
        assert_eq!((record.outcome, record.error_kind), (Outcome::Ok, None));
    }

    #[test]
    fn parses_outcome_names() {
        assert_eq!("cancelled".parse::<Outcome>(), Ok(Outcome::Cancelled));
        assert!("fine".parse::<Outcome>().is_err());
    }
}
