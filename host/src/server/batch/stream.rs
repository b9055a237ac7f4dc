//! Answers that stream: a line (NDJSON) or an event (SSE) per result as each call ends, then the
//! whole answer in order; for a streamed request also `pending` and `started` as its calls arrive
//! and start. Nothing here runs a call: the batch runs in [`crate::batch`], and these functions
//! frame what it reports.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::codec::{BytesCodec, FramedRead};
use tokio_util::sync::CancellationToken;

use super::run::Run;
use crate::batch::{self, Progress, answer_event, result_event};

/// Bytes of stream output buffered for a slow reader before the writer waits.
const STREAM_BUFFER: usize = 64 << 10;

/// Bytes of answer waiting for a slow reader past which `pending` events are dropped: they are
/// previews, superseded by the next one and by the result. Results and the answer are never
/// dropped (they are bounded by the calls of the batch and their output caps).
const PENDING_BACKLOG: usize = 256 << 10;

/// How the answer goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Delivery {
    /// One JSON document when the batch is done.
    Whole,
    /// A JSON line per result, then the answer.
    Ndjson,
    /// An event per result, then the answer.
    Sse,
}

/// `?stream=` wins over `Accept`.
pub(super) fn delivery(stream: Option<&str>, headers: &HeaderMap) -> Result<Delivery, String> {
    match stream {
        Some("ndjson") => return Ok(Delivery::Ndjson),
        Some("sse") => return Ok(Delivery::Sse),
        Some(other) => return Err(format!("unknown stream {other:?}: expected ndjson or sse")),
        None => {}
    }
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    Ok(if accept.contains("application/x-ndjson") {
        Delivery::Ndjson
    } else if accept.contains("text/event-stream") {
        Delivery::Sse
    } else {
        Delivery::Whole
    })
}

/// Streams each result as it completes, then the ordered answer.
pub(super) fn stream(run: Run, batch: batch::Batch, delivery: Delivery) -> Response {
    let format = batch.format;
    streaming(run.cancel.clone(), delivery, move |lines| async move {
        let mut run = run;
        run.options.progress = Some(progress_to(&lines, delivery));
        let results = lines.clone();
        let report = run
            .execute(batch, move |r| {
                results.send(frame(delivery, "result", &result_event(format, r)));
            })
            .await;
        lines.send(frame(delivery, "answer", &answer_event(&report, None)));
    })
}

/// Streams what a streamed request's calls do as they do it, then the ordered answer.
pub(super) fn stream_opened<S, E>(
    run: Run,
    opened: batch::Opened<S>,
    delivery: Delivery,
) -> Response
where
    S: futures_util::Stream<Item = Result<axum::body::Bytes, E>> + Unpin + Send + 'static,
    E: std::fmt::Display + 'static,
{
    let format = opened.format();
    // Shutting down: the stream is read no further (its open calls are cut), what runs finishes.
    let opened = opened.until(run.api.shared.services.admission.stopping().clone());
    streaming(run.cancel.clone(), delivery, move |lines| async move {
        let mut run = run;
        run.options.progress = Some(progress_to(&lines, delivery));
        let events = lines.clone();
        let on_progress = move |progress: Progress<'_>| {
            let (name, event) = progress.event(format);
            let line = frame(delivery, name, &event);
            match progress {
                Progress::Pending(_) => events.offer(line),
                _ => events.send(line),
            }
        };
        let api = run.api.clone();
        let work = opened.run(
            &api.shared.pipeline,
            &run.batch_id,
            &run.options,
            &run.cancel,
            on_progress,
        );
        let streamed = run.bounded(work, |s| s.report.has_errors()).await;
        let answer = answer_event(&streamed.report, Some(&streamed));
        lines.send(frame(delivery, "answer", &answer));
    })
}

/// `progress` events for `lines`: each call's progress and partial output as it runs. Offered like
/// `pending` (dropped for a client far behind): the result carries the whole either way.
fn progress_to(lines: &Lines, delivery: Delivery) -> batch::OnCallProgress {
    let lines = lines.clone();
    Arc::new(move |index, id, name, p| {
        let event = batch::progress_event(index, id, name, &p);
        lines.offer(frame(delivery, "progress", &event));
    })
}

/// The framed lines of a streaming answer on their way to the client, with how many bytes of them
/// the client has not read yet.
#[derive(Clone)]
struct Lines {
    tx: mpsc::UnboundedSender<String>,
    backlog: Arc<AtomicUsize>,
}

impl Lines {
    /// Queues `line`.
    fn send(&self, line: String) {
        self.backlog.fetch_add(line.len(), Ordering::Relaxed);
        let _ = self.tx.send(line);
    }

    /// Queues `line` unless the client is already [`PENDING_BACKLOG`] behind.
    fn offer(&self, line: String) {
        if self.backlog.load(Ordering::Relaxed) < PENDING_BACKLOG {
            self.send(line);
        }
    }
}

/// A streaming response fed by `produce`, which sends it framed lines; when the client goes away,
/// `cancel` stops the calls rather than run them for nobody.
fn streaming<F>(
    cancel: CancellationToken,
    delivery: Delivery,
    produce: impl FnOnce(Lines) -> F,
) -> Response
where
    F: Future<Output = ()> + Send + 'static,
{
    let (tx, mut pending) = mpsc::unbounded_channel::<String>();
    let lines = Lines {
        tx,
        backlog: Arc::new(AtomicUsize::new(0)),
    };
    let backlog = lines.backlog.clone();
    let (mut writer, reader) = tokio::io::duplex(STREAM_BUFFER);
    tokio::spawn(async move {
        while let Some(line) = pending.recv().await {
            let written = writer.write_all(line.as_bytes()).await;
            backlog.fetch_sub(line.len(), Ordering::Relaxed);
            if written.is_err() {
                cancel.cancel();
                break;
            }
        }
    });
    tokio::spawn(produce(lines));
    let content_type = match delivery {
        Delivery::Sse => "text/event-stream",
        _ => "application/x-ndjson",
    };
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(FramedRead::new(reader, BytesCodec::new())),
    )
        .into_response()
}

/// One NDJSON line, or one SSE event (JSON text has no raw newlines, so one `data:` line).
fn frame(delivery: Delivery, event: &str, value: &Value) -> String {
    match delivery {
        Delivery::Sse => format!("event: {event}\ndata: {value}\n\n"),
        _ => format!("{value}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn chooses_the_delivery_from_the_query_then_accept() {
        let none = HeaderMap::new();
        assert_eq!(delivery(None, &none), Ok(Delivery::Whole));
        assert_eq!(
            delivery(None, &accept("application/x-ndjson")),
            Ok(Delivery::Ndjson)
        );
        assert_eq!(
            delivery(None, &accept("text/event-stream")),
            Ok(Delivery::Sse)
        );
        assert_eq!(
            delivery(Some("sse"), &accept("application/x-ndjson")),
            Ok(Delivery::Sse)
        );
        assert!(
            delivery(Some("yes"), &none)
                .unwrap_err()
                .contains("expected ndjson or sse")
        );
    }

    #[test]
    fn frames_lines_and_events() {
        let v = json!({"a": "x\ny"});
        assert_eq!(frame(Delivery::Ndjson, "result", &v), "{\"a\":\"x\\ny\"}\n");
        assert_eq!(
            frame(Delivery::Sse, "answer", &v),
            "event: answer\ndata: {\"a\":\"x\\ny\"}\n\n"
        );
    }

    #[tokio::test]
    async fn previews_wait_for_a_slow_reader_no_longer_than_the_backlog() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let lines = Lines {
            tx,
            backlog: Arc::new(AtomicUsize::new(0)),
        };
        let big = "x".repeat(PENDING_BACKLOG / 4);
        for _ in 0..8 {
            lines.offer(big.clone());
        }
        lines.send("result".into());
        let mut got = Vec::new();
        while let Ok(line) = rx.try_recv() {
            got.push(line);
        }
        assert_eq!(got.len(), 5, "four previews fit, the result always");
        assert_eq!(got.last().unwrap(), "result");
    }
}
