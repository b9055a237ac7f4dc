//! Batches answered later: `POST /v1/tool-calls?async=true` answers `202 Accepted` with the batch's
//! id at once and runs it as a task; `GET /v1/tool-calls/{id}` gives its status and, once it is
//! done, the ordered answer. The record lives in the state store, so any daemon behind the same
//! balancer answers the `GET`; only the caller that posted the batch sees it.

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost_gate::caller::Caller;
use toolhost_gate::task::{TaskStatus, owner_of};

use super::run::BATCH_ID_HEADER;
use crate::batch::{self, BatchOptions};
use crate::server::http::reply::error;
use crate::server::shared::Shared;
use crate::state::{TaskKind, TaskRecord};
use crate::tasks::{Finish, NewTask, TaskError};

/// Start `batch` as a task; the `202` answer naming it.
pub(super) async fn start(
    shared: &Arc<Shared>,
    batch: batch::Batch,
    mut options: BatchOptions,
) -> Response {
    let Some(tasks) = shared.tasks().cloned() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "async batches need toolhost's state store, which is not reachable yet; retry shortly",
        );
    };
    let new = NewTask {
        kind: TaskKind::Batch,
        owner: owner_of(options.caller.as_deref()),
        name: batch.format.as_str().to_owned(),
        ttl: None,
    };
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let pipeline = shared.pipeline.clone();
    // A batch answered later outlives its request: no request timeout, but its admission.
    options.deadline = None;
    let work = move |handle: crate::tasks::TaskHandle| async move {
        options.approver = None;
        let report = batch::run(&pipeline, handle.id(), batch, &options, &cancel, |_| {}).await;
        if let Some(why) = batch::cut_short(&pipeline, &report) {
            return Finish::Cancelled(why);
        }
        Finish::Completed(json!({"format": report.format, "answer": report.answer()}))
    };
    match tasks.spawn(new, token, work).await {
        Ok(record) => {
            let location = format!("/v1/tool-calls/{}", record.id);
            let mut response = (StatusCode::ACCEPTED, Json(view(&record))).into_response();
            if let Ok(v) = HeaderValue::from_str(&location) {
                response.headers_mut().insert(header::LOCATION, v);
            }
            if let Ok(v) = HeaderValue::from_str(&record.id) {
                response.headers_mut().insert(BATCH_ID_HEADER, v);
            }
            response
        }
        Err(e) => {
            tracing::error!("cannot start an async batch: {e}");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "toolhost could not record the batch; retry shortly",
            )
        }
    }
}

/// `GET /v1/tool-calls/{id}`.
pub(super) async fn status(
    State(shared): State<Arc<Shared>>,
    caller: Option<Extension<Arc<Caller>>>,
    Path(id): Path<String>,
) -> Response {
    let Some(tasks) = shared.tasks() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "toolhost's state store is not reachable yet; retry shortly",
        );
    };
    let owner = owner_of(caller.as_ref().map(|Extension(c)| c.as_ref()));
    match tasks.get(&id, &owner).await {
        Ok(record) if record.kind == TaskKind::Batch => Json(view(&record)).into_response(),
        Ok(_) | Err(TaskError::NotFound(_)) => error(
            StatusCode::NOT_FOUND,
            format!("no batch {id} (it does not exist, expired, or belongs to another caller)"),
        ),
        Err(e) => {
            tracing::error!("task store: {e}");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "toolhost's state store did not answer; retry",
            )
        }
    }
}

/// What a client reads about a batch.
fn view(record: &TaskRecord) -> Value {
    let time = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    let mut v = json!({
        "batch_id": record.id,
        "status": record.status.as_str(),
        "format": record.name,
        "created_at": time(record.created_ms),
        "updated_at": time(record.updated_ms),
        "expires_at": time(record.expires_ms),
    });
    if let Some(m) = &record.message {
        v["message"] = json!(m);
    }
    if record.status == TaskStatus::Completed
        && let Some(answer) = record.result.as_ref().and_then(|r| r.get("answer"))
    {
        v["answer"] = answer.clone();
    }
    v
}
