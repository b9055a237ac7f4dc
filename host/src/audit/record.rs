//! The audit record and its wire shape; building a record is pure, writing it is `writer`'s job.

use std::str::FromStr;
use std::time::Duration;

use super::breaker::BreakerNote;
use super::hash::input_sha256;
use chrono::{DateTime, SubsecRound, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use toolhost_call::call::ErrorKind;

/// The schema version written in every line's `"v"` field. Bumped only on incompatible changes;
/// new optional fields do not bump it, so readers must ignore fields they do not know.
///
/// - 1: one line per finished call.
/// - 2: also a `"event":"begin"` line when a call starts executing, written before it runs, so that
///   a daemon killed mid-call still shows what was running; finished lines say `"event":"end"` and
///   are otherwise v1 lines. Readers pair the two by `call_id` (see [`read_records`](super::read_records)).
pub const SCHEMA_VERSION: u32 = 2;

/// Which of a call's lines this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// The call is about to run: written before the plugin starts (see [`BeginRecord`](super::BeginRecord)).
    Begin,
    /// The call finished; v1 lines, which have no `event`, are all of this kind.
    #[default]
    End,
}

/// One finished call, as one line of the audit log.
///
/// Every field is always written (absent values as `null`), except `input`, which appears only
/// when the log is configured to include inputs, `breaker`, which appears only when the tool's
/// circuit breaker refused the call or changed state because of it, and `detail`, only for a call
/// that could not be set up. Field order is stable, `"v"`
/// first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Schema version, [`SCHEMA_VERSION`] for records written by this build.
    pub v: u32,
    /// Always [`Event::End`] for a record; absent in v1 lines.
    #[serde(default)]
    pub event: Event,
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
    /// The digest (`sha256:…`) of the plugin's component, as loaded.
    #[serde(default)]
    pub plugin_digest: Option<String>,
    /// Where the component came from: its `source` (`oci://…`, `https://…`) or its file.
    #[serde(default)]
    pub plugin_source: Option<String>,
    /// Who called, when authenticated: issuer, subject, client id, scopes. Never the token.
    #[serde(default)]
    pub caller: Option<toolhost_gate::caller::Caller>,
    /// Lowercase hex SHA-256 of the input's canonical JSON text (`canonical_json`), as the caller
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
    /// What the tool's circuit breaker did with this call, in order: refused it, admitted it as
    /// the trial after a cool-down, or opened or closed because of its outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaker: Vec<BreakerNote>,
    /// What the caller was told only in general terms: why the call could not be set up (a grant
    /// that could not be opened, with its host path and the OS error). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What the sandbox refused or could not do of what the plugin asked, the first few, each
    /// naming the grant that would allow it: a path no directory grant covers, a request outside
    /// the network allowlist. The guest saw only an error code. Absent when nothing was refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// Which of the caller's own credentials the host added to the plugin's requests, by
    /// secret and source (never a value): `"token: profile alice's secret 'github'"`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub credentials: Vec<String>,
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
            event: Event::End,
            call_id: call_id.into(),
            parent_id: None,
            origin: origin.into(),
            ts_start: now,
            ts_end: now,
            tool: tool.into(),
            plugin: None,
            plugin_digest: None,
            plugin_source: None,
            caller: None,
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
            breaker: Vec::new(),
            detail: None,
            refused: Vec::new(),
            credentials: Vec::new(),
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
        // Encoded straight into a buffer: `to_string` goes through the formatter.
        let mut buf = uuid::Uuid::encode_buffer();
        uuid::Uuid::now_v7()
            .hyphenated()
            .encode_lower(&mut buf)
            .to_owned()
    }
}

/// What the permission gate decided, serialized with a `"kind"` tag:
/// `{"kind":"allowed","by":"rule allow: fs.read"}`, `{"kind":"denied","by":"rule deny: net"}`,
/// `{"kind":"asked","answer":true}` (a person approved or declined), `{"kind":"unanswered",
/// "why":"..."}` (nobody did), `{"kind":"mismatched"}` (an answer for another input), or
/// `{"kind":"not_reached"}` for calls that failed before
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
    /// The gate asked an approver whose answer had not come when this (begin) line was written.
    Asking,
    /// The gate asked an approver, who answered.
    Asked {
        /// True when the approver allowed the call.
        answer: bool,
        /// The operator who answered in the console; absent when the client's user did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        operator: Option<String>,
    },
    /// The gate asked, and nobody answered: the question timed out or could not be put. The call
    /// did not run; nobody declined it.
    Unanswered {
        /// Why no answer came.
        why: String,
    },
    /// The gate asked, and the answer that came was given for another input than this call's.
    Mismatched,
    /// The gate asked, and the question went to the client to answer in a new request (the
    /// 2026-07-28 approval round); this call ended `input_required`.
    Deferred,
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
    /// The caller cancelled the call (or the daemon did, shutting down).
    Cancelled,
    /// The call ended by asking the client for input (a 2026-07-28 approval); the client's retry
    /// is a new call with its own record.
    InputRequired,
    /// The call began and never ended: the daemon was killed while it ran (or it is still
    /// running). Never written; the reader reports begin lines left without an end this way.
    Unfinished,
}

impl Outcome {
    /// The outcome of a call that failed with `error_kind`, or succeeded with `None`.
    pub fn from_error_kind(error_kind: Option<ErrorKind>) -> Self {
        match error_kind {
            None => Self::Ok,
            Some(ErrorKind::Cancelled) => Self::Cancelled,
            Some(ErrorKind::InputRequired) => Self::InputRequired,
            Some(_) => Self::Error,
        }
    }

    /// The name used in audit lines: "ok", "error", "cancelled", "input_required", "unfinished".
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
            Self::InputRequired => "input_required",
            Self::Unfinished => "unfinished",
        }
    }
}

/// A string that names no [`Outcome`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown outcome {0:?}: expected ok, error, cancelled, input_required or unfinished")]
pub struct UnknownOutcome(pub String);

impl FromStr for Outcome {
    type Err = UnknownOutcome;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ok" => Ok(Self::Ok),
            "error" => Ok(Self::Error),
            "cancelled" => Ok(Self::Cancelled),
            "input_required" => Ok(Self::InputRequired),
            "unfinished" => Ok(Self::Unfinished),
            other => Err(UnknownOutcome(other.to_owned())),
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
pub(super) mod rfc3339_micros {
    use chrono::{DateTime, SecondsFormat, Utc};
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _, ser::Error as _};
    pub(in crate::audit) use toolhost_call::text::rfc3339_micros as digits;

    pub(crate) fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        match digits(t) {
            Some(text) => s.serialize_str(std::str::from_utf8(&text).map_err(S::Error::custom)?),
            None => s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Micros, true)),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
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

    proptest::proptest! {
        #[test]
        fn timestamps_are_written_as_chrono_writes_them(secs in -62_167_219_200i64..253_402_300_800, nanos in 0u32..2_000_000_000) {
            if let Some(t) = DateTime::<Utc>::from_timestamp(secs, nanos) {
                let ours = rfc3339_micros::digits(&t).map(|d| String::from_utf8(d.to_vec()).unwrap());
                let chrono = t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
                proptest::prop_assert!(ours.as_ref().is_none_or(|o| *o == chrono), "{ours:?} vs {chrono}");
                proptest::prop_assert!(ours.is_some() || nanos >= 1_000_000_000);
            }
        }
    }

    /// A record with every field set, fixed in time: the golden line.
    pub(in crate::audit) fn sample() -> AuditRecord {
        AuditRecord {
            v: SCHEMA_VERSION,
            event: Event::End,
            call_id: "0190a5c4-7d2e-7b3a-9c1f-2f6f0e4b8a11".into(),
            parent_id: Some("batch-7".into()),
            origin: "mcp".into(),
            ts_start: "2025-06-01T12:00:00.000123Z".parse().unwrap(),
            ts_end: "2025-06-01T12:00:00.042123Z".parse().unwrap(),
            tool: "fetch_url".into(),
            plugin: Some("net-tools".into()),
            plugin_digest: Some(
                "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03".into(),
            ),
            plugin_source: Some("plugins/net-tools.wasm".into()),
            caller: Some(toolhost_gate::caller::Caller {
                issuer: "https://idp.example.com".into(),
                subject: "alice".into(),
                client_id: Some("claude-code".into()),
                scopes: vec!["tools.read".into()],
                groups: Vec::new(),
                // Never written: a record's caller is who, not how.
                token: Some(toolhost_gate::network::Secret::new("eyJ.never.written")),
            }),
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
            breaker: Vec::new(),
            detail: None,
            refused: Vec::new(),
            credentials: Vec::new(),
        }
    }

    /// The golden v2 file: a call's begin line, then its end line.
    const GOLDEN: &str = "audit/record.v2.jsonl";

    #[test]
    fn writes_the_golden_begin_and_end_lines() {
        let record = sample();
        let lines = format!(
            "{}\n{}\n",
            serde_json::to_string(&record.begin_line()).unwrap(),
            serde_json::to_string(&record).unwrap()
        );
        crate::audit::golden::check_text(GOLDEN, &lines);
    }

    #[test]
    fn reads_the_v1_golden_line_as_an_end_record() {
        let golden = crate::audit::golden::path("audit/record.v1.jsonl");
        let text = std::fs::read_to_string(golden).unwrap();
        let back: AuditRecord = serde_json::from_str(text.trim_end()).unwrap();
        let v1 = AuditRecord {
            v: 1,
            plugin_digest: None,
            plugin_source: None,
            caller: None,
            ..sample()
        };
        assert_eq!(back, v1);
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
            Decision::Asked {
                answer: false,
                operator: Some("sub=\"alice\"".into()),
            },
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
            assert!(line.starts_with(r#"{"v":2,"event":"end","#), "{line}");
            let back: AuditRecord = serde_json::from_str(&line).unwrap();
            assert_eq!(back, record);
        }
    }

    #[test]
    fn not_reached_is_tagged_like_the_other_decisions() {
        let text = serde_json::to_string(&Decision::NotReached).unwrap();
        assert_eq!(text, r#"{"kind":"not_reached"}"#);
        let text = serde_json::to_string(&Decision::Asked {
            answer: true,
            operator: None,
        })
        .unwrap();
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
