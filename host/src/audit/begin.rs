//! The line written when a call starts running, before the plugin does: what runs, for whom, with
//! which input (by hash) and by whose decision. With the end line (an [`AuditRecord`]) it brackets the
//! call, so a daemon killed mid-call still leaves a trace. Pure: building and pairing, no I/O.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::{AuditRecord, Decision, Event, Outcome, SCHEMA_VERSION, rfc3339_micros};

/// A call that has passed the gate and is about to run: one `"event":"begin"` line.
///
/// Its fields are those of the call's end record known at that point, with the same names, so a
/// reader can take either line alone. Field order is stable, `"v"` first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeginRecord {
    /// Schema version, [`SCHEMA_VERSION`] for lines written by this build.
    pub v: u32,
    /// Always [`Event::Begin`].
    pub event: Event,
    /// The id of this call; its end record has the same.
    pub call_id: String,
    /// The batch or request this call belongs to.
    pub parent_id: Option<String>,
    /// Which front end asked: "cli", "mcp", "batch", ...
    pub origin: String,
    /// When the call arrived, UTC, microsecond precision.
    #[serde(with = "rfc3339_micros")]
    pub ts_start: DateTime<Utc>,
    /// The tool name as the caller gave it.
    pub tool: String,
    /// The plugin providing the tool.
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
    /// Lowercase hex SHA-256 of the input's canonical JSON text, as in the end record.
    pub input_sha256: String,
    /// The input itself, only when the log is configured with `include-input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// What the permission gate decided: the call runs because of this.
    pub decision: Decision,
    /// What the validator changed to make the input fit the schema.
    #[serde(default)]
    pub coercions: Vec<String>,
}

impl AuditRecord {
    /// The begin line of this (not yet finished) call.
    pub fn begin_line(&self) -> BeginRecord {
        BeginRecord {
            v: SCHEMA_VERSION,
            event: Event::Begin,
            call_id: self.call_id.clone(),
            parent_id: self.parent_id.clone(),
            origin: self.origin.clone(),
            ts_start: self.ts_start,
            tool: self.tool.clone(),
            plugin: self.plugin.clone(),
            plugin_digest: self.plugin_digest.clone(),
            plugin_source: self.plugin_source.clone(),
            caller: self.caller.clone(),
            input_sha256: self.input_sha256.clone(),
            input: self.input.clone(),
            decision: self.decision.clone(),
            coercions: self.coercions.clone(),
        }
    }
}

impl BeginRecord {
    /// The record of a call that began and has no end line: outcome `unfinished`, no duration.
    pub fn unfinished(self) -> AuditRecord {
        AuditRecord {
            v: self.v,
            event: Event::End,
            call_id: self.call_id,
            parent_id: self.parent_id,
            origin: self.origin,
            ts_start: self.ts_start,
            ts_end: self.ts_start,
            tool: self.tool,
            plugin: self.plugin,
            plugin_digest: self.plugin_digest,
            plugin_source: self.plugin_source,
            caller: self.caller,
            input_sha256: self.input_sha256,
            input: self.input,
            decision: self.decision,
            coercions: self.coercions,
            outcome: Outcome::Unfinished,
            error_kind: None,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::record::tests::sample;

    #[test]
    fn a_begin_line_without_its_end_reads_as_unfinished() {
        let begun = sample().begin_line();
        let text = serde_json::to_string(&begun).unwrap();
        assert!(
            text.starts_with(r#"{"v":2,"event":"begin","call_id":"#),
            "{text}"
        );
        assert!(!text.contains("outcome"), "{text}");
        let back: BeginRecord = serde_json::from_str(&text).unwrap();
        let record = back.unfinished();
        assert_eq!(record.outcome, Outcome::Unfinished);
        assert_eq!(
            (record.call_id, record.decision),
            (sample().call_id, sample().decision)
        );
        assert_eq!(record.duration_us, 0);
    }
}
