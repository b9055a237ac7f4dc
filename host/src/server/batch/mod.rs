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
//! this (`server::http::body`): a client that trickles it is answered 408; a streamed one must show its
//! format within the read timeout, then may take the request timeout, never stalling longer than
//! the read timeout between two chunks. Bad requests are answered
//! `{"error": "..."}` with a 4xx status; a call that fails is a result, not an HTTP error. Nothing
//! here decides or runs a call: that is [`crate::batch`] and the pipeline's work.

mod deferred;
mod run;
mod stream;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Semaphore;

pub use self::run::BATCH_ID_HEADER;
use self::run::{Api, Run, shutting_down, with_batch_id};
use self::stream::{Delivery, delivery, stream, stream_opened};
use crate::batch::stream::{Decoder, Framing, Limits};
use crate::batch::{self, DEFAULT_CONCURRENCY, Format, FormatChoice, ParseError};
use crate::exec::Stopping;
use crate::server::http::body::event_stream_framing;
use crate::server::http::reply::error;
use crate::server::shared::Shared;
use toolhost_config::config::ServerConfig;
use toolhost_gate::caller::Caller;

/// The batch routes over `shared`, unguarded: the daemon's router and
/// [`Server::batch_router`](crate::server::Server::batch_router) put them behind the guard.
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
            get(deferred::status).with_state(api.shared.clone()),
        )
        .route("/v1/tools", get(tools))
        .with_state(api)
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
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
    /// `all=true`: every tool the caller sees, beyond `server.short-list`.
    all: Option<String>,
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
            let catalog = api.shared.services.listing().await;
            let all = params.all.as_deref() == Some("true");
            let services = &api.shared.services;
            let specs = catalog.specs().filter(|s| {
                if all {
                    services.sees(caller, &s.name)
                } else {
                    services.lists(caller, &s.name)
                }
            });
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
        Some("true") => return deferred::start(&api.shared, batch, run.options).await,
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
                Ok(report) => match report.all_rate_limited() {
                    // Every call was over its caller's share: the whole request was too early.
                    Some(wait) => {
                        let mut response =
                            (StatusCode::TOO_MANY_REQUESTS, Json(report.answer())).into_response();
                        let secs = toolhost_gate::quota::whole_seconds(wait);
                        response
                            .headers_mut()
                            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
                        response
                    }
                    None => Json(report.answer()).into_response(),
                },
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
