//! A call's two lines, encoded by hand. Every call writes both, and through serde_json they cost more
//! instructions than the rest of the audit log together: each key escaped byte by byte, each value
//! through a generic serializer. Here keys are copied as the literals they are, and a string is
//! copied whole once a word-at-a-time scan finds nothing to escape; a string that needs escaping,
//! and the rare structured fields (caller, input, breaker notes), go through serde_json itself.
//!
//! The bytes are serde_json's for the same record: the tests encode records with hostile strings
//! both ways and compare. `AuditRecord`'s and `BeginRecord`'s `Serialize` stay the reference.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use super::record::{AuditRecord, Decision, Event, SCHEMA_VERSION, rfc3339_micros};

/// Bytes reserved for one encoded line: an end record of a call by a plugin loaded from a file
/// takes about 800.
const LINE_CAPACITY: usize = 1024;

/// The end line of `record` (its [`Serialize`] form), `input` left out unless `keep_input`.
pub(super) fn end(record: &AuditRecord, keep_input: bool) -> Result<Vec<u8>, serde_json::Error> {
    // Every field named, none bound: a field added to the record fails to compile here until it
    // is written below (or in `shared`) and the tests' reference record sets it.
    let AuditRecord {
        v: _,
        event: _,
        call_id: _,
        parent_id: _,
        origin: _,
        ts_start: _,
        ts_end: _,
        tool: _,
        plugin: _,
        plugin_digest: _,
        plugin_source: _,
        caller: _,
        input_sha256: _,
        input: _,
        decision: _,
        coercions: _,
        outcome: _,
        error_kind: _,
        duration_us: _,
        fuel_used: _,
        peak_memory_bytes: _,
        output_bytes: _,
        truncated: _,
        breaker: _,
        detail: _,
        refused: _,
        credentials: _,
    } = record;
    let mut line = Line::new();
    let head = (record.v, record.event, Some(record.ts_end));
    shared(&mut line, record, head, keep_input)?;
    line.str("outcome", record.outcome.as_str());
    line.opt_str("error_kind", record.error_kind.map(|k| k.as_str()));
    line.u64("duration_us", record.duration_us);
    line.opt_u64("fuel_used", record.fuel_used);
    line.opt_u64("peak_memory_bytes", record.peak_memory_bytes);
    line.u64("output_bytes", record.output_bytes);
    line.key("truncated");
    line.raw(if record.truncated { "true" } else { "false" });
    if !record.breaker.is_empty() {
        line.serde("breaker", &record.breaker)?;
    }
    if let Some(detail) = &record.detail {
        line.str("detail", detail);
    }
    if !record.refused.is_empty() {
        line.serde("refused", &record.refused)?;
    }
    if !record.credentials.is_empty() {
        line.serde("credentials", &record.credentials)?;
    }
    Ok(line.finish())
}

/// The begin line of `record` (its [`BeginRecord`]'s [`Serialize`] form), `input` left out unless
/// `keep_input`.
pub(super) fn begin(record: &AuditRecord, keep_input: bool) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = Line::new();
    shared(
        &mut line,
        record,
        (SCHEMA_VERSION, Event::Begin, None),
        keep_input,
    )?;
    Ok(line.finish())
}

/// The fields both lines have, in their order, with the line's own version and event, and
/// `ts_end` only in an end line.
fn shared(
    line: &mut Line,
    record: &AuditRecord,
    (v, event, ts_end): (u32, Event, Option<DateTime<Utc>>),
    keep_input: bool,
) -> Result<(), serde_json::Error> {
    line.u64("v", u64::from(v));
    line.str("event", event_name(event));
    line.str("call_id", &record.call_id);
    line.opt_str("parent_id", record.parent_id.as_deref());
    line.str("origin", &record.origin);
    line.time("ts_start", &record.ts_start);
    if let Some(ts_end) = &ts_end {
        line.time("ts_end", ts_end);
    }
    line.str("tool", &record.tool);
    line.opt_str("plugin", record.plugin.as_deref());
    line.opt_str("plugin_digest", record.plugin_digest.as_deref());
    line.opt_str("plugin_source", record.plugin_source.as_deref());
    match &record.caller {
        Some(caller) => line.serde("caller", caller)?,
        None => line.null("caller"),
    }
    line.str("input_sha256", &record.input_sha256);
    if let Some(input) = record.input.as_ref().filter(|_| keep_input) {
        line.serde("input", input)?;
    }
    line.key("decision");
    line.decision(&record.decision);
    line.key("coercions");
    line.raw("[");
    for (i, coercion) in record.coercions.iter().enumerate() {
        if i > 0 {
            line.raw(",");
        }
        line.string(coercion);
    }
    line.raw("]");
    Ok(())
}

fn event_name(event: Event) -> &'static str {
    match event {
        Event::Begin => "begin",
        Event::End => "end",
    }
}

/// A JSON object being written into a line's buffer, one field at a time.
struct Line(Vec<u8>);

impl Line {
    fn new() -> Self {
        let mut buf = Vec::with_capacity(LINE_CAPACITY);
        buf.push(b'{');
        Self(buf)
    }

    /// The object closed, and the newline that ends every line.
    fn finish(mut self) -> Vec<u8> {
        self.0.extend_from_slice(b"}\n");
        self.0
    }

    /// `"key":`, after a comma unless it is the first. Keys are this module's literals, none of
    /// which needs escaping.
    fn key(&mut self, key: &'static str) {
        debug_assert!(is_plain(key.as_bytes()), "{key}");
        if self.0.len() > 1 {
            self.0.push(b',');
        }
        self.0.push(b'"');
        self.0.extend_from_slice(key.as_bytes());
        self.0.extend_from_slice(b"\":");
    }

    /// Text that is JSON already.
    fn raw(&mut self, json: &str) {
        self.0.extend_from_slice(json.as_bytes());
    }

    fn str(&mut self, key: &'static str, value: &str) {
        self.key(key);
        self.string(value);
    }

    fn opt_str(&mut self, key: &'static str, value: Option<&str>) {
        match value {
            Some(value) => self.str(key, value),
            None => self.null(key),
        }
    }

    fn null(&mut self, key: &'static str) {
        self.key(key);
        self.raw("null");
    }

    fn u64(&mut self, key: &'static str, value: u64) {
        self.key(key);
        self.raw(itoa::Buffer::new().format(value));
    }

    fn opt_u64(&mut self, key: &'static str, value: Option<u64>) {
        match value {
            Some(value) => self.u64(key, value),
            None => self.null(key),
        }
    }

    fn time(&mut self, key: &'static str, t: &DateTime<Utc>) {
        self.key(key);
        match rfc3339_micros::digits(t) {
            Some(digits) => {
                self.0.push(b'"');
                self.0.extend_from_slice(&digits);
                self.0.push(b'"');
            }
            None => self.string(&t.to_rfc3339_opts(SecondsFormat::Micros, true)),
        }
    }

    fn serde(
        &mut self,
        key: &'static str,
        value: &impl Serialize,
    ) -> Result<(), serde_json::Error> {
        self.key(key);
        serde_json::to_writer(&mut self.0, value)
    }

    /// `value` as a JSON string, escaped as serde_json escapes it.
    fn string(&mut self, value: &str) {
        if is_plain(value.as_bytes()) {
            self.0.push(b'"');
            self.0.extend_from_slice(value.as_bytes());
            self.0.push(b'"');
        } else {
            // Writing into memory cannot fail; serde_json's escaping is the reference.
            let _ = serde_json::to_writer(&mut self.0, value);
        }
    }

    /// A decision as its `Serialize` writes it: `{"kind":…}` and the variant's field.
    fn decision(&mut self, decision: &Decision) {
        let (kind, by) = match decision {
            Decision::Allowed { by } => ("{\"kind\":\"allowed\"", Some(("by", by))),
            Decision::Denied { by } => ("{\"kind\":\"denied\"", Some(("by", by))),
            Decision::Asking => ("{\"kind\":\"asking\"", None),
            Decision::Asked { answer, operator } => (
                if *answer {
                    "{\"kind\":\"asked\",\"answer\":true"
                } else {
                    "{\"kind\":\"asked\",\"answer\":false"
                },
                operator.as_ref().map(|o| ("operator", o)),
            ),
            Decision::Unanswered { why } => ("{\"kind\":\"unanswered\"", Some(("why", why))),
            Decision::Mismatched => ("{\"kind\":\"mismatched\"", None),
            Decision::Deferred => ("{\"kind\":\"deferred\"", None),
            Decision::NotReached => ("{\"kind\":\"not_reached\"", None),
        };
        self.raw(kind);
        if let Some((field, text)) = by {
            self.raw(",\"");
            self.raw(field);
            self.raw("\":");
            self.string(text);
        }
        self.raw("}");
    }
}

/// True when serde_json would write `bytes` between quotes unchanged: no control character
/// (below 0x20), no `"` and no `\`. Eight bytes at a time, the last word padded with spaces, with
/// the classic "has a byte less than n" and "has a zero byte" word tests, exact as yes/no answers.
fn is_plain(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let less_than = |w: u64, n: u8| w.wrapping_sub(ONES * u64::from(n)) & !w & HIGHS;
    let has = |w: u64, b: u8| less_than(w ^ (ONES * u64::from(b)), 1);
    let escapes = |w: u64| less_than(w, 0x20) | has(w, b'"') | has(w, b'\\');
    let mut words = bytes.chunks_exact(8);
    let mut found = 0;
    for word in &mut words {
        found |= escapes(u64::from_ne_bytes(word.try_into().unwrap_or_default()));
    }
    let rest = words.remainder();
    let mut last = [b' '; 8];
    last[..rest.len()].copy_from_slice(rest);
    found |= escapes(u64::from_ne_bytes(last));
    found == 0
}

#[cfg(test)]
#[path = "line_tests.rs"]
mod tests;
