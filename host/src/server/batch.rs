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
//! A batch is cancelled when the client goes away. Its calls share one deadline, the request
//! timeout, past which the pipeline ends each one still running or not yet started as `timeout`
//! (and the answer is still sent); the pipeline also stops them at the end of the daemon's
//! shutdown grace period. Once shutdown has started the pipeline admits no new batch: a whole
//! message's calls are each refused and recorded as `busy` and answered with `503` and
//! `Retry-After`; a streamed one gets `503` before any call is read. A whole message is read under the read timeout before any of
//! this (`server::body`): a client that trickles it is answered 408; a streamed one must show its
//! format within the read timeout, then may take the request timeout, never stalling longer than
//! the read timeout between two chunks. Bad requests are answered
//! `{"error": "..."}` with a 4xx status; a call that fails is a result, not an HTTP error. Nothing
//! here decides or runs a call: that is [`crate::batch`] and the pipeline's work.

use std::sync::Arc;
use std::time::Duration;

mod stream;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use self::stream::{Delivery, delivery, stream, stream_opened};
use super::body::event_stream_framing;
use super::guard::Guard;
use super::reply::error;
use super::shared::Shared;
use crate::batch::stream::{Decoder, Framing, Limits};
use crate::batch::{
    self, BatchOptions, BatchReport, CallResult, DEFAULT_CONCURRENCY, Format, FormatChoice,
    ParseError,
};
use crate::exec::{Deadline, Stopping};
use toolhost_policy::caller::Caller;
use toolhost_policy::config::ServerConfig;

/// The response header that carries the batch id (every call's `parent_id` in the audit log).
pub const BATCH_ID_HEADER: &str = "x-toolhost-batch-id";

/// The batch routes over `shared`, behind the same Host, Origin and token checks as `/mcp`, for
/// tests and embedding ([`Server::batch_router`](super::Server::batch_router)). The daemon mounts
/// `routes` on its own listener instead, behind its guard.
pub(crate) fn router(shared: Arc<Shared>, config: &ServerConfig) -> Router {
    super::http::guarded(
        routes(shared.clone(), config),
        Arc::new(Guard::new(config)),
        &shared,
        config,
    )
}

/// The batch routes over `shared`, unguarded: for the daemon's router, whose guard covers them.
/// Batches count as calls in flight for the shutdown, and are cancelled with the other calls.
pub(crate) fn routes(shared: Arc<Shared>, config: &ServerConfig) -> Router {
    let api = Api {
        shared,
        request_timeout: config.request_timeout,
        read_timeout: config.read_timeout,
        max_concurrency: config.max_concurrent_calls.max(1),
        max_body_bytes: config.max_body_bytes,
        streams: Arc::new(Semaphore::new(config.max_concurrent_calls.max(1))),
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
    read_timeout: Duration,
    max_concurrency: usize,
    max_body_bytes: usize,
    /// Streamed batches at once: each holds a connection for as long as its model writes, so
    /// their number is bounded (by `server.max-concurrent-calls`), not only each one's time.
    streams: Arc<Semaphore>,
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
    let streamed = event_stream_framing(&headers);
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
        return streamed_batch(
            api,
            caller,
            &headers,
            (choice, framing),
            concurrency,
            delivery,
            body,
        )
        .await;
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
    if run.options.admitted.is_none() {
        return refused(run, batch).await;
    }
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

/// A whole batch the pipeline admitted no more work for (shutdown): each call is refused and
/// recorded by it, and the answer, with every call `busy`, comes with `503` and `Retry-After`.
async fn refused(run: Run, batch: batch::Batch) -> Response {
    let batch_id = run.batch_id.clone();
    let report = run.execute(batch, |_| {}).await;
    let response = (StatusCode::SERVICE_UNAVAILABLE, Json(report.answer())).into_response();
    with_batch_id(shutting_down(response), &batch_id)
}

/// `response` with the `Retry-After` a client of a daemon that is shutting down gets.
fn shutting_down(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
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

/// A request whose body is the model's stream: read until its format shows (under the strict
/// read timeout, so that only a real stream gets the longer deadlines), then run as it arrives.
async fn streamed_batch(
    api: Api,
    caller: Option<Extension<Arc<Caller>>>,
    headers: &HeaderMap,
    (choice, framing): (FormatChoice, Framing),
    concurrency: usize,
    delivery: Delivery,
    body: Body,
) -> Response {
    let Ok(slot) = api.streams.clone().try_acquire_owned() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many streamed batches at once (server.max-concurrent-calls); try again shortly",
        );
    };
    // Admitted from here, so that a shutdown waits for it (and it sees the shutdown); refused
    // before a call is read once shutdown has started.
    let run = Run::new(&api, caller, headers, concurrency, None);
    if run.options.admitted.is_none() {
        return shutting_down(error(StatusCode::SERVICE_UNAVAILABLE, Stopping.to_string()));
    }
    let decoder = Decoder::with_framing(choice, framing, Limits::default());
    let opening = batch::open(decoder, body.into_data_stream());
    let opened = match tokio::time::timeout(api.read_timeout, opening).await {
        Ok(Ok(opened)) => opened,
        Ok(Err(e)) => return bad_request(e.to_string()),
        Err(_) => {
            return error(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the stream's first event did not arrive within {} ms (server.read-timeout-ms)",
                    api.read_timeout.as_millis()
                ),
            );
        }
    };
    let batch_id = run.batch_id.clone();
    let response = stream_opened(run.holding(slot), opened, delivery);
    with_batch_id(response, &batch_id)
}

/// One batch about to run, admitted (its ticket in `options`) until it is dropped.
struct Run {
    api: Api,
    batch_id: String,
    options: BatchOptions,
    /// Cancelled when the client goes away.
    cancel: CancellationToken,
    /// A streamed batch's place among the streams at once.
    _slot: Option<tokio::sync::OwnedSemaphorePermit>,
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
                deadline: Some(Deadline::after(api.request_timeout)),
                admitted: api.shared.pipeline.admit().ok(),
            },
            cancel: CancellationToken::new(),
            _slot: None,
        }
    }

    /// The same run, holding `slot` until it ends.
    fn holding(mut self, slot: tokio::sync::OwnedSemaphorePermit) -> Self {
        self._slot = Some(slot);
        self
    }

    /// Runs the batch; its calls end as `timeout` once the request timeout passes.
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

    /// `work`, with the batch's span ended as it ends. The pipeline ends each call at the
    /// batch's deadline, so `work` ends by then too.
    async fn bounded<T>(&self, work: impl Future<Output = T>, has_errors: fn(&T) -> bool) -> T {
        let done = work.await;
        if let Some(cx) = &self.options.trace {
            crate::telemetry::end_span(cx, has_errors(&done).then_some("tool_error"));
        }
        done
    }
}
