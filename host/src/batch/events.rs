//! The events a batch answered as a stream sends, the same from every front end (`POST
//! /v1/tool-calls` with a streamed answer, `toolhost batch --stream`): `pending` while a streamed
//! call's arguments arrive, `started` when it runs, `progress` while it runs (its plugin's progress
//! and partial output), `result` as each call ends, and last the `answer`, whole and in order.

use serde_json::{Value, json};

use super::streamed::{Progress, StreamReport};
use toolhost_wire::batch::{BatchReport, CallResult, Format, item};

impl Progress<'_> {
    /// The event's name and body.
    pub fn event(&self, format: Format) -> (&'static str, Value) {
        match self {
            Progress::Result(r) => ("result", result_event(format, r)),
            Progress::Pending(_) => ("pending", json!(self)),
            Progress::Started { .. } => ("started", json!(self)),
        }
    }
}

/// A `result` event: the call's result as its API shapes it, with what a client needs to place it.
pub fn result_event(format: Format, r: &CallResult) -> Value {
    json!({
        "type": "result",
        "index": r.index,
        "id": r.id,
        "name": r.name,
        "is_error": r.outcome.is_error(),
        "error_kind": r.outcome.error_kind(),
        "call_id": r.outcome.call_id,
        "item": item(format, r),
    })
}

/// A `progress` event: what call `index` (the model's `id`, tool `name`) reported while running.
/// A WASI 0.3 plugin's partial output is its `message`, `done` counting the bytes so far.
pub fn progress_event(index: usize, id: &str, name: &str, p: &crate::exec::Progress) -> Value {
    json!({
        "type": "progress",
        "index": index,
        "id": id,
        "name": name,
        "done": p.done,
        "total": p.total,
        "message": p.message,
    })
}

/// The `answer` event: the whole answer in order and, for a streamed request, how its stream ended
/// (`ending`) and why its bytes stopped early (`broken`), if they did.
pub fn answer_event(report: &BatchReport, streamed: Option<&StreamReport>) -> Value {
    let mut answer = json!({
        "type": "answer",
        "batch_id": report.batch_id,
        "format": report.format,
        "answer": report.answer(),
    });
    if let Some(s) = streamed {
        answer["stream"] = json!({ "ending": s.ending, "broken": s.broken });
    }
    answer
}
