//! The batch HTTP API: `POST /v1/tool-calls` takes an assistant message from an LLM API and answers
//! with the tool results in that API's shape; `GET /v1/tools?format=` declares the tools to it.
//!
//! `POST /v1/tool-calls[?format=auto|anthropic|openai|openai-responses][&concurrency=N]` answers
//! with the JSON the API expects, once every call has finished. With `?stream=ndjson` (or
//! `Accept: application/x-ndjson`) it streams one line per result as each completes, then a final
//! line with the whole answer in order; `?stream=sse` (or `Accept: text/event-stream`) sends the
//! same as `result` and `answer` events. The batch id is in the `x-toolhost-batch-id` header.
//!
//! The request body may itself be the model's raw streaming response (`Content-Type:
//! text/event-stream` or `application/x-ndjson`: the Anthropic, Chat Completions or Responses
//! streaming events, relayed as they arrive). It is read as it comes, each call starting as soon as
//! its arguments are complete ([`crate::batch::open`]); the answer then always streams, in the
//! request's framing unless `?stream=`/`Accept` say otherwise: `pending` while a call's arguments
//! arrive, `started` when it runs, `result` when it ends, and the `answer` with how the model's
//! stream ended.
//!
//! A batch is cancelled when the client goes away, when the request timeout passes (the calls
//! still running are answered as cancelled, and the answer is still sent), and at the end of the
//! daemon's shutdown grace period. The body is read under the read timeout before any of this
//! (`server::body`): a client that trickles it is answered 408. Bad requests are answered
//! `{"error": "..."}` with a 4xx status; a call that fails is a result, not an HTTP error. Nothing
//! here decides or runs a call: that is [`crate::batch`] and the pipeline's work.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::codec::{BytesCodec, FramedRead};
use tokio_util::sync::CancellationToken;

use super::body::is_event_stream;
use super::guard::Guard;
use super::reply::error;
use super::shared::Shared;
use crate::batch::stream::{Decoder, Framing, Limits};
use crate::batch::{
    self, BatchOptions, BatchReport, CallResult, DEFAULT_CONCURRENCY, Format, FormatChoice,
    ParseError, Progress, answer_event, result_event,
};
use toolhost_policy::caller::Caller;
use toolhost_policy::config::ServerConfig;

/// The response header that carries the batch id (every call's `parent_id` in the audit log).
pub const BATCH_ID_HEADER: &str = "x-toolhost-batch-id";

/// Bytes of stream output buffered for a slow reader before the writer waits.
const STREAM_BUFFER: usize = 64 << 10;

/// The batch routes over `shared`, behind the same Host, Origin and token checks as `/mcp`, for
/// tests and embedding ([`Server::batch_router`](super::Server::batch_router)). The daemon mounts
/// `routes` on its own listener instead, behind its guard.
pub(crate) fn router(shared: Arc<Shared>, config: &ServerConfig) -> Router {
    super::auth::layer(routes(shared.clone(), config), &shared, config)
        .layer(middleware::from_fn_with_state(
            super::http::body_deadlines(config),
            super::body::bounded,
        ))
        .layer(middleware::from_fn_with_state(
            Arc::new(Guard::new(config)),
            super::reply::guarded,
        ))
}

/// The batch routes over `shared`, unguarded: for the daemon's router, whose guard covers them.
/// Batches count as calls in flight for the shutdown, and are cancelled with the other calls.
pub(crate) fn routes(shared: Arc<Shared>, config: &ServerConfig) -> Router {
    let api = Api {
        shared,
        request_timeout: config.request_timeout,
        max_concurrency: config.max_concurrent_calls.max(1),
        max_body_bytes: config.max_body_bytes,
    };
    Router::new()
        .route("/v1/tool-calls", post(tool_calls))
        .route(
            "/v1/tool-calls/{id}",
            get(super::deferred::status).with_state(api.shared.clone()),
        )
        .route("/v1/tools", get(tools))
        .with_state(api)
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
}

#[derive(Clone)]
struct Api {
    shared: Arc<Shared>,
    request_timeout: Duration,
    max_concurrency: usize,
    max_body_bytes: usize,
}

/// How the answer goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delivery {
    /// One JSON document when the batch is done.
    Whole,
    /// A JSON line per result, then the answer.
    Ndjson,
    /// An event per result, then the answer.
    Sse,
}

#[derive(Debug, Default, Deserialize)]
struct CallParams {
    format: Option<String>,
    stream: Option<String>,
    concurrency: Option<String>,
    #[serde(rename = "async")]
    deferred: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ToolsParams {
    format: Option<String>,
}

fn bad_request(message: impl Into<String>) -> Response {
    error(StatusCode::BAD_REQUEST, message)
}

async fn tools(
    State(api): State<Api>,
    caller: Option<Extension<Arc<Caller>>>,
    query: Result<Query<ToolsParams>, QueryRejection>,
) -> Response {
    let Ok(Query(params)) = query else {
        return bad_request("malformed query string");
    };
    let Some(name) = params.format else {
        return bad_request(
            "pass the format: /v1/tools?format=anthropic, openai or openai-responses",
        );
    };
    match name.parse::<Format>() {
        Ok(format) => {
            let caller = caller.as_ref().map(|Extension(c)| c.as_ref());
            let catalog = api.shared.pipeline.catalog();
            let specs = catalog
                .specs()
                .filter(|s| api.shared.pipeline.sees(caller, &s.name));
            Json(batch::definitions(specs, format)).into_response()
        }
        Err(e) => bad_request(e.to_string()),
    }
}

async fn tool_calls(
    State(api): State<Api>,
    caller: Option<Extension<Arc<Caller>>>,
    headers: HeaderMap,
    query: Result<Query<CallParams>, QueryRejection>,
    body: Body,
) -> Response {
    if api.shared.stopping.is_cancelled() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "toolhost is shutting down; no new batches",
        );
    }
    let Ok(Query(params)) = query else {
        return bad_request("malformed query string");
    };
    let choice = match params
        .format
        .as_deref()
        .map(str::parse::<FormatChoice>)
        .transpose()
    {
        Ok(choice) => choice.unwrap_or_default(),
        Err(e) => return bad_request(e.to_string()),
    };
    let streamed = is_event_stream(&headers).then(|| {
        let ndjson = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("ndjson"));
        if ndjson {
            Framing::Ndjson
        } else {
            Framing::Sse
        }
    });
    let delivery = match delivery(params.stream.as_deref(), &headers) {
        // A streamed request is answered as a stream, in its own framing unless asked otherwise.
        Ok(Delivery::Whole) if streamed == Some(Framing::Ndjson) => Delivery::Ndjson,
        Ok(Delivery::Whole) if streamed == Some(Framing::Sse) => Delivery::Sse,
        Ok(d) => d,
        Err(message) => return bad_request(message),
    };
    let concurrency = match params.concurrency.as_deref().map(str::parse::<usize>) {
        None => DEFAULT_CONCURRENCY.min(api.max_concurrency),
        Some(Ok(n)) if (1..=api.max_concurrency).contains(&n) => n,
        Some(_) => {
            return bad_request(format!(
                "concurrency must be a whole number from 1 to {}",
                api.max_concurrency
            ));
        }
    };
    if let Some(framing) = streamed {
        if params.deferred.as_deref().is_some_and(|d| d != "false") {
            return bad_request(
                "async=true takes a whole message; a streamed request is answered as it runs",
            );
        }
        let decoder = Decoder::with_framing(choice, framing, Limits::default());
        let opened = match batch::open(decoder, body.into_data_stream()).await {
            Ok(opened) => opened,
            Err(e) => return bad_request(e.to_string()),
        };
        let run = Run::new(&api, caller, &headers, concurrency, None);
        let batch_id = run.batch_id.clone();
        return with_batch_id(stream_opened(run, opened, delivery), &batch_id);
    }
    let body = match axum::body::to_bytes(body, api.max_body_bytes).await {
        Ok(b) => b,
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body exceeds {} bytes (server.max-body-kb)",
                    api.max_body_bytes
                ),
            );
        }
    };
    let parsed = serde_json::from_slice::<Value>(&body)
        .map_err(|e| ParseError::NotJson(e.to_string()))
        .and_then(|message| batch::parse(&message, choice));
    let batch = match parsed {
        Ok(b) => b,
        Err(e) => return bad_request(e.to_string()),
    };

    let run = Run::new(&api, caller, &headers, concurrency, Some(batch.calls.len()));
    match params.deferred.as_deref() {
        None | Some("false") => {}
        Some("true") => return super::deferred::start(&api.shared, batch, run.options).await,
        Some(other) => return bad_request(format!("async must be true or false, not {other:?}")),
    }
    let batch_id = run.batch_id.clone();
    let response = match delivery {
        Delivery::Whole => {
            // The calls run in their own task; if the client goes away, the guard cancels them.
            let guard = run.cancel.clone().drop_guard();
            let task = tokio::spawn(run.execute(batch, |_| {}));
            let joined = task.await;
            guard.disarm();
            match joined {
                Ok(report) => Json(report.answer()).into_response(),
                Err(e) => {
                    tracing::error!(batch_id, "the batch task failed: {e}");
                    error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("internal error in batch {batch_id}"),
                    )
                }
            }
        }
        Delivery::Ndjson | Delivery::Sse => stream(run, batch, delivery),
    };
    with_batch_id(response, &batch_id)
}

/// `response` with the batch id header.
fn with_batch_id(mut response: Response, batch_id: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(batch_id) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(BATCH_ID_HEADER), value);
    }
    response
}

/// `?stream=` wins over `Accept`.
fn delivery(stream: Option<&str>, headers: &HeaderMap) -> Result<Delivery, String> {
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

/// One batch about to run.
struct Run {
    api: Api,
    batch_id: String,
    options: BatchOptions,
    cancel: CancellationToken,
}

impl Run {
    /// A new batch for `caller`, with its id, its cancellation (a child of the daemon's calls) and,
    /// when telemetry is on, its span under the request's trace context.
    fn new(
        api: &Api,
        caller: Option<Extension<Arc<Caller>>>,
        headers: &HeaderMap,
        concurrency: usize,
        calls: Option<usize>,
    ) -> Self {
        let batch_id = batch::new_batch_id();
        let trace = crate::telemetry::is_on().then(|| {
            let parent = crate::telemetry::remote_parent(
                headers.get("traceparent").and_then(|v| v.to_str().ok()),
                headers.get("tracestate").and_then(|v| v.to_str().ok()),
            );
            let mut attributes = vec![opentelemetry::KeyValue::new(
                "toolhost.batch.id",
                batch_id.clone(),
            )];
            if let Some(n) = calls {
                attributes.push(opentelemetry::KeyValue::new(
                    "toolhost.batch.calls",
                    n as i64,
                ));
            }
            crate::telemetry::server_span("batch".to_owned(), &parent, attributes)
        });
        Self {
            api: api.clone(),
            batch_id,
            options: BatchOptions {
                concurrency,
                approver: None,
                caller: caller.map(|Extension(c)| c),
                trace,
            },
            cancel: api.shared.calls.child_token(),
        }
    }

    /// Runs the batch, counted in flight, cancelling it when the request timeout passes.
    async fn execute(
        self,
        batch: batch::Batch,
        on_result: impl FnMut(&CallResult) + Send,
    ) -> BatchReport {
        let api = self.api.clone();
        let (batch_id, options, cancel) = (&self.batch_id, &self.options, &self.cancel);
        let work = batch::run(
            &api.shared.pipeline,
            batch_id,
            batch,
            options,
            cancel,
            on_result,
        );
        self.bounded(work, |report| report.has_errors()).await
    }

    /// `work`, counted in flight, cancelled when the request timeout passes (and then awaited:
    /// every call is still answered).
    async fn bounded<T>(&self, work: impl Future<Output = T>, has_errors: fn(&T) -> bool) -> T {
        let _in_flight = self.api.shared.in_flight.enter();
        tokio::pin!(work);
        let done = tokio::select! {
            done = &mut work => done,
            () = tokio::time::sleep(self.api.request_timeout) => {
                tracing::warn!(batch_id = self.batch_id, "the batch took longer than the request timeout; cancelling it");
                self.cancel.cancel();
                work.await
            }
        };
        if let Some(cx) = &self.options.trace {
            crate::telemetry::end_span(cx, has_errors(&done).then_some("tool_error"));
        }
        done
    }
}

/// Streams each result as it completes, then the ordered answer.
fn stream(run: Run, batch: batch::Batch, delivery: Delivery) -> Response {
    let format = batch.format;
    streaming(run.cancel.clone(), delivery, move |lines| async move {
        let results = lines.clone();
        let report = run
            .execute(batch, move |r| {
                let _ = results.send(frame(delivery, "result", &result_event(format, r)));
            })
            .await;
        let _ = lines.send(frame(delivery, "answer", &answer_event(&report, None)));
    })
}

/// Streams what a streamed request's calls do as they do it, then the ordered answer.
fn stream_opened<S, E>(run: Run, opened: batch::Opened<S>, delivery: Delivery) -> Response
where
    S: futures_util::Stream<Item = Result<axum::body::Bytes, E>> + Unpin + Send + 'static,
    E: std::fmt::Display + 'static,
{
    let format = opened.format();
    streaming(run.cancel.clone(), delivery, move |lines| async move {
        let events = lines.clone();
        let on_progress = move |progress: Progress<'_>| {
            let (name, event) = progress.event(format);
            let _ = events.send(frame(delivery, name, &event));
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
        let _ = lines.send(frame(delivery, "answer", &answer));
    })
}

/// A streaming response fed by `produce`, which sends it framed lines; when the client goes away,
/// `cancel` stops the calls rather than run them for nobody.
fn streaming<F>(
    cancel: CancellationToken,
    delivery: Delivery,
    produce: impl FnOnce(mpsc::UnboundedSender<String>) -> F,
) -> Response
where
    F: Future<Output = ()> + Send + 'static,
{
    let (lines, mut pending) = mpsc::unbounded_channel::<String>();
    let (mut writer, reader) = tokio::io::duplex(STREAM_BUFFER);
    tokio::spawn(async move {
        while let Some(line) = pending.recv().await {
            if writer.write_all(line.as_bytes()).await.is_err() {
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
}
