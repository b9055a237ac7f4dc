//! One batch as it runs over HTTP: the API's settings ([`Api`]), a batch admitted with its id,
//! deadline, cancellation and span ([`Run`]), and the headers every batch answer carries. Shared by
//! the whole-message, streamed and deferred answers; runs the batch through [`crate::batch`] and
//! decides nothing of its own.

use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::response::Response;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::batch::{self, BatchOptions, BatchReport, CallResult};
use crate::exec::Deadline;
use crate::server::shared::Shared;
use toolhost_gate::caller::Caller;

/// The response header that carries the batch id (every call's `parent_id` in the audit log).
pub const BATCH_ID_HEADER: &str = "x-toolhost-batch-id";

#[derive(Clone)]
pub(super) struct Api {
    pub(super) shared: Arc<Shared>,
    pub(super) request_timeout: Duration,
    pub(super) read_timeout: Duration,
    pub(super) max_concurrency: usize,
    pub(super) max_body_bytes: usize,
    /// Streamed batches at once: each holds a connection for as long as its model writes, so
    /// their number is bounded (by `server.max-concurrent-calls`), not only each one's time.
    pub(super) streams: Arc<Semaphore>,
}

/// `response` with the `Retry-After` a client of a daemon that is shutting down gets.
pub(super) fn shutting_down(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// `response` with the batch id header.
pub(super) fn with_batch_id(mut response: Response, batch_id: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(batch_id) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(BATCH_ID_HEADER), value);
    }
    response
}

/// One batch about to run, admitted (its ticket in `options`) until it is dropped.
pub(super) struct Run {
    pub(super) api: Api,
    pub(super) batch_id: String,
    pub(super) options: BatchOptions,
    /// Cancelled when the client goes away.
    pub(super) cancel: CancellationToken,
    /// A streamed batch's place among the streams at once.
    _slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Run {
    /// A new batch for `caller`, with its id, its cancellation (a child of the daemon's calls) and,
    /// when telemetry is on, its span under the request's trace context.
    pub(super) fn new(
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
                admitted: api.shared.services.admission.admit().ok(),
                progress: None,
            },
            cancel: CancellationToken::new(),
            _slot: None,
        }
    }

    /// The same run, holding `slot` until it ends.
    pub(super) fn holding(mut self, slot: tokio::sync::OwnedSemaphorePermit) -> Self {
        self._slot = Some(slot);
        self
    }

    /// Runs the batch; its calls end as `timeout` once the request timeout passes.
    pub(super) async fn execute(
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
    pub(super) async fn bounded<T>(
        &self,
        work: impl Future<Output = T>,
        has_errors: fn(&T) -> bool,
    ) -> T {
        let done = work.await;
        if let Some(cx) = &self.options.trace {
            crate::telemetry::end_span(cx, has_errors(&done).then_some("tool_error"));
        }
        done
    }
}
