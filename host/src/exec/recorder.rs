//! The one recorder: every outcome, run or refused, leaves here as one end record in the audit
//! log, one count in the stats and, when telemetry is on, its metrics and stage spans, always with
//! the caller, and one log line (target [`CALL_LOG`]). Nothing else in the daemon writes a call's end.

use std::fmt;
use std::time::Duration;

use super::live::Live;
use super::shape::error;
use super::timing::{StageTimes, Stopwatch};
use crate::audit::{AuditLog, AuditRecord, Decision};
use crate::stats::{Stats, UNKNOWN_TOOL};
use crate::telemetry;
use toolhost_call::call::{CallOutcome, ErrorKind};
use toolhost_call::text::OneLine;

/// The log target of the one line per finished call. `serve` logs it by default (at `info`), so an
/// operator sees the calls go by without reading the audit log; `TOOLHOST_LOG` decides otherwise.
pub const CALL_LOG: &str = "toolhost::call";

use super::health::Admitted;
use super::request::CallRequest;

/// What a finished stage hands to the recorder.
pub(super) struct Finished {
    pub(super) outcome: CallOutcome,
    pub(super) fuel: Option<u64>,
    pub(super) peak_memory: Option<u64>,
    pub(super) truncated: bool,
    /// The breaker's admission, when the call was let run: given back with the outcome.
    pub(super) admitted: Option<Admitted>,
    /// What the operator should know and the caller was told only in general terms (why a call
    /// could not be set up: host paths, OS errors), for the audit record.
    pub(super) detail: Option<String>,
    /// What the sandbox refused or could not do of the plugin's requests (paths no grant covers,
    /// network requests), for the audit record.
    pub(super) refused: Vec<String>,
}

impl Finished {
    /// A call that ended as `kind` without running, explained by `content`.
    pub(super) fn failed(call_id: &str, kind: ErrorKind, content: String) -> Self {
        Self {
            outcome: error(call_id, kind, content),
            fuel: None,
            peak_memory: None,
            truncated: false,
            admitted: None,
            detail: None,
            refused: Vec::new(),
        }
    }
}

/// A call's record and clock from its first moment, before anything about it is decided.
pub(super) struct Started {
    pub(super) record: AuditRecord,
    pub(super) clock: Stopwatch,
    pub(super) wall_start: Option<std::time::SystemTime>,
}

/// The record stage, over the audit log, the live calls and the stats: the one place a call's
/// end is written.
pub(super) struct Recorder<'a> {
    pub(super) audit: &'a AuditLog,
    pub(super) live: &'a Live,
    pub(super) stats: &'a Stats,
}

impl Recorder<'_> {
    /// Open the record of `req`: its id, origin, tool, input digest, parent and caller.
    pub(super) fn start(&self, req: &CallRequest) -> Started {
        let clock = Stopwatch::start();
        let wall_start = req.trace.as_ref().map(|_| std::time::SystemTime::now());
        let call_id = AuditRecord::new_call_id();
        let mut record = self
            .audit
            .begin(&call_id, req.origin, &req.tool, &req.input);
        record.parent_id = req.parent_id.clone();
        record.caller = req.caller.as_deref().cloned();
        Started {
            record,
            clock,
            wall_start,
        }
    }

    /// Record how `req` ended, and give the outcome back: the audit line, the stats, telemetry.
    pub(super) fn record(
        &self,
        req: &CallRequest,
        started: Started,
        mut finished: Finished,
    ) -> (CallOutcome, StageTimes) {
        let Started {
            mut record,
            mut clock,
            wall_start,
        } = started;
        let kind = finished.outcome.error_kind();
        let elapsed = clock.elapsed();
        record.fuel_used = finished.fuel;
        record.peak_memory_bytes = finished.peak_memory;
        record.output_bytes = finished.outcome.content.len() as u64;
        record.truncated = finished.truncated;
        record.detail = finished.detail.take();
        record.refused = std::mem::take(&mut finished.refused);
        record.finish(kind, elapsed);
        let _ = self.audit.write(&record); // failures are logged by the writer; `run` refuses when configured to
        // Formats nothing unless the target is on (tracing checks the level first). One message
        // rather than seven fields, written as the text it is (the binary's field formatter): 2% of
        // a stdio call's instructions (issue 42); the line reads the same.
        tracing::info!(target: CALL_LOG, "{}", CallLine { record: &record, kind, elapsed });
        self.live.end(&record);
        // Metrics are labelled by catalogue names only: a call that found no tool (a made-up or
        // hidden name, or one refused before the lookup) counts under one fixed label, so that
        // no client can grow `/metrics` by what it sends. The plugin is named once found.
        let label = match record.plugin {
            Some(_) => req.tool.as_str(),
            None => UNKNOWN_TOOL,
        };
        self.stats
            .record(label, kind.map_or(Ok(()), Err), elapsed, finished.fuel);
        clock.mark(super::timing::Stage::Record);
        let times = clock.finish();
        if let (Some(parent), Some(started)) = (&req.trace, wall_start) {
            telemetry::stage_spans(parent, started, &times.spans());
        }
        if telemetry::is_on() {
            let error = kind.map(telemetry::error_type);
            telemetry::record_call(label, error, finished.fuel, finished.peak_memory);
        }
        (finished.outcome, times)
    }
}

/// The gate's decision in one word, for the call's log line (the audit record has the rule).
fn decision_word(d: &Decision) -> &'static str {
    match d {
        Decision::Allowed { .. } => "allow",
        Decision::Denied { .. } => "deny",
        Decision::Asking => "asking",
        Decision::Asked { answer: true, .. } => "ask:approved",
        Decision::Asked { answer: false, .. } => "ask:declined",
        Decision::Unanswered { .. } => "ask:unanswered",
        Decision::Mismatched => "ask:mismatched",
        Decision::Deferred => "ask:deferred",
        Decision::NotReached => "not-reached",
    }
}

/// A finished call's log line: `call call_id=… via=… tool=… caller=… decision=… outcome=… ms=…`.
/// Built in one buffer and handed to the log's writer whole; piece by piece, each of its fifteen
/// pieces went through the writer's escaping on its own (issue 42).
struct CallLine<'a> {
    record: &'a AuditRecord,
    kind: Option<ErrorKind>,
    elapsed: Duration,
}

impl fmt::Display for CallLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write as _;
        let r = self.record;
        let mut line = String::with_capacity(160 + r.tool.len());
        line.push_str("call call_id=");
        line.push_str(&r.call_id);
        line.push_str(" via=");
        line.push_str(&r.origin);
        write!(
            line,
            " tool={} caller={}",
            OneLine(&r.tool),
            CallerName(r.caller.as_ref())
        )?;
        line.push_str(" decision=");
        line.push_str(decision_word(&r.decision));
        write!(line, " outcome={} ms=", OutcomeWord(self.kind))?;
        // Milliseconds with one decimal, rounded half up, without floating-point formatting.
        let tenths = (self.elapsed.as_micros() + 50) / 100;
        line.push_str(itoa::Buffer::new().format(tenths / 10));
        line.push('.');
        line.push(char::from(b'0' + (tenths % 10) as u8));
        f.write_str(&line)
    }
}

/// Who called, as the console names callers ([`super::caller_name`]), without allocating.
struct CallerName<'a>(Option<&'a toolhost_gate::caller::Caller>);

impl fmt::Display for CallerName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(c) => write!(f, "{}", OneLine(&c.to_string())),
            None => f.write_str("(no token)"),
        }
    }
}

/// `ok`, or `error:KIND` (`cancelled`, `input_required` as such).
struct OutcomeWord(Option<ErrorKind>);

impl fmt::Display for OutcomeWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("ok"),
            Some(k @ (ErrorKind::Cancelled | ErrorKind::InputRequired)) => f.write_str(k.as_str()),
            Some(k) => write!(f, "error:{}", k.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(tool: &str, kind: Option<ErrorKind>, elapsed: Duration) -> String {
        let record = AuditRecord::begin("id-1", "mcp", tool, &serde_json::json!({}));
        CallLine {
            record: &record,
            kind,
            elapsed,
        }
        .to_string()
    }

    #[test]
    fn the_call_line_names_the_call_on_one_line() {
        assert_eq!(
            line("echo", None, Duration::from_micros(1_250)),
            "call call_id=id-1 via=mcp tool=echo caller=(no token) decision=not-reached outcome=ok ms=1.3"
        );
        // A name cannot break the line or steer a terminal.
        let forged = line(
            "a\nb\u{1b}[2J\u{202e}",
            Some(ErrorKind::Trap),
            Duration::ZERO,
        );
        assert!(
            forged.contains(r"tool=a\nb\u{1b}[2J\u{202e} caller="),
            "{forged}"
        );
        assert!(forged.ends_with("outcome=error:trap ms=0.0"), "{forged}");
    }

    #[test]
    fn milliseconds_round_half_up_to_one_decimal() {
        for (us, ms) in [
            (0, "0.0"),
            (49, "0.0"),
            (50, "0.1"),
            (999_949, "999.9"),
            (999_950, "1000.0"),
        ] {
            let text = line("t", None, Duration::from_micros(us));
            assert!(text.ends_with(&format!(" ms={ms}")), "{us} us: {text}");
        }
    }

    /// Records a call of `tool` that ended as `kind` (`None`: it ran and succeeded), the plugin
    /// named when `found`.
    fn record_one(
        fixture: &crate::exec::fixture::Fixture,
        tool: &str,
        kind: Option<ErrorKind>,
        found: bool,
    ) -> (CallOutcome, String) {
        let s = &fixture.services;
        let recorder = Recorder {
            audit: &s.audit,
            live: &s.live,
            stats: &s.stats,
        };
        let req = CallRequest {
            tool: tool.into(),
            origin: "test",
            ..CallRequest::default()
        };
        let mut started = recorder.start(&req);
        if found {
            started.record.plugin = Some("double".into());
        }
        let call_id = started.record.call_id.clone();
        let mut finished = Finished::failed(&call_id, ErrorKind::Internal, "x".into());
        finished.outcome = match kind {
            Some(kind) => error(&call_id, kind, "it failed".into()),
            None => CallOutcome::ok(&call_id, "42".into(), None),
        };
        finished.fuel = Some(7);
        (recorder.record(&req, started, finished).0, call_id)
    }

    #[tokio::test]
    async fn every_outcome_leaves_one_end_line_one_count_and_one_recent_call() {
        let fixture = crate::exec::fixture::Fixture::open("").await;
        let (outcome, ok_id) = record_one(&fixture, "double", None, true);
        assert!(outcome.error_kind().is_none());
        let (outcome, failed_id) = record_one(&fixture, "double", Some(ErrorKind::Timeout), true);
        assert_eq!(outcome.error_kind(), Some(ErrorKind::Timeout));
        let lines = fixture.audit_lines();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0]["event"], "end");
        assert_eq!(lines[0]["call_id"], ok_id.as_str());
        assert_eq!(lines[0]["outcome"], "ok");
        assert_eq!(lines[0]["fuel_used"], 7);
        assert_eq!(lines[1]["call_id"], failed_id.as_str());
        assert_eq!(lines[1]["error_kind"], "timeout");
        let stats = fixture.services.stats.snapshot();
        let double = stats.iter().find(|t| t.tool == "double").unwrap();
        assert_eq!((double.calls, double.successes), (2, 1));
        assert_eq!(double.failures.get(&ErrorKind::Timeout), Some(&1));
        let live = &fixture.services.live;
        assert!(live.find(&ok_id).is_some() && live.find(&failed_id).is_some());
    }

    #[tokio::test]
    async fn a_name_no_tool_answers_to_counts_under_one_label() {
        let fixture = crate::exec::fixture::Fixture::open("").await;
        for made_up in ["a", "b", "c"] {
            record_one(&fixture, made_up, Some(ErrorKind::UnknownTool), false);
        }
        let stats = fixture.services.stats.snapshot();
        assert_eq!(stats.len(), 1, "{stats:?}");
        assert_eq!((stats[0].tool.as_str(), stats[0].calls), (UNKNOWN_TOOL, 3));
        // The audit log keeps each name as the caller gave it.
        let lines = fixture.audit_lines();
        let tools: Vec<_> = lines.iter().map(|l| l["tool"].as_str().unwrap()).collect();
        assert_eq!(tools, ["a", "b", "c"]);
    }
}
