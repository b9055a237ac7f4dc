//! The console's JSON API (docs/console.md): the page uses nothing else, so `curl` and scripts
//! can do all it does. Approvals and cancellations go to the pipeline, which decides and records
//! them; these routes only translate.

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Console;
use super::access::Operator;
use super::session::set_cookie;
use crate::audit::AuditRecord;
use crate::exec::{AnswerError, Cancelled, Verdict};
use crate::registry::PluginStatus;
use crate::server::http::reply::error;

/// `GET session`: who is signed in, and the token the page's actions carry.
pub(super) async fn session(Extension(op): Extension<Operator>) -> Response {
    Json(json!({ "operator": op.name, "csrf": op.csrf })).into_response()
}

/// `POST signout`.
pub(super) async fn sign_out(State(console): State<Arc<Console>>, headers: HeaderMap) -> Response {
    if let Err(e) = console.sessions.close(&headers).await {
        return super::unavailable(&e);
    }
    console.services().questions.left();
    let mut response = Json(json!({ "signed_out": true })).into_response();
    if let Ok(v) = HeaderValue::from_str(&set_cookie(None)) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// `POST links`: a one-time sign-in link for a browser, minted by an operator's bearer token
/// where no identity provider signs browsers in (a shared daemon with the static token:
/// `toolhost console-link`). The link's session is that operator's; a session cannot mint one.
pub(super) async fn new_link(
    State(console): State<Arc<Console>>,
    Extension(operator): Extension<Operator>,
) -> Response {
    if operator.csrf.is_some() {
        return error(
            StatusCode::FORBIDDEN,
            "sign-in links are minted with an operator's bearer token, not from a session",
        );
    }
    tracing::info!(
        operator = %toolhost_call::text::OneLine(&operator.name),
        "console sign-in link minted"
    );
    match console.sign_in_path_for(&operator.name).await {
        Ok(path) => Json(json!({ "path": path })).into_response(),
        Err(e) => super::unavailable(&e),
    }
}

/// `GET approvals`.
pub(super) async fn approvals(State(console): State<Arc<Console>>) -> Response {
    let waiting = console.services().questions.listed().await;
    Json(json!({ "approvals": waiting })).into_response()
}

/// The body of `POST approvals/{id}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AnswerBody {
    answer: AnswerWord,
    input_sha256: String,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum AnswerWord {
    Approve,
    Deny,
}

/// `POST approvals/{id}`: an operator's answer, for the input they were shown.
pub(super) async fn answer(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    body: Result<Json<AnswerBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(body) = match body {
        Ok(body) => body,
        Err(e) => {
            let why = format!(
                "{}; send {{\"answer\": \"approve\" | \"deny\", \"input_sha256\": \"…\"}}",
                e.body_text()
            );
            return error(StatusCode::BAD_REQUEST, why);
        }
    };
    let verdict = Verdict {
        approve: matches!(body.answer, AnswerWord::Approve),
        operator: op.name,
    };
    match console
        .services()
        .questions
        .answer(&id, &body.input_sha256, verdict)
        .await
    {
        Ok(()) => Json(json!({ "answered": true })).into_response(),
        Err(e @ AnswerError::Unknown(_)) => error(StatusCode::NOT_FOUND, e.to_string()),
        Err(e @ (AnswerError::Ended(_) | AnswerError::Mismatched)) => {
            error(StatusCode::CONFLICT, e.to_string())
        }
    }
}

/// `GET calls`: calls in flight and the last ended ones, of every daemon in a fleet.
pub(super) async fn calls(State(console): State<Arc<Console>>) -> Response {
    let services = console.services();
    let listed = services.live.listed(services.audit.includes_input()).await;
    Json(json!({ "running": listed.running, "recent": listed.recent })).into_response()
}

/// `GET calls/{call_id}`: the call's end record, else what runs.
pub(super) async fn call(
    State(console): State<Arc<Console>>,
    Path(call_id): Path<String>,
) -> Response {
    let live = &console.services().live;
    if let Some(record) = live.find(&call_id) {
        return Json(console.as_written(&record)).into_response();
    }
    if let Some(running) = live.running().into_iter().find(|r| r.call_id == call_id) {
        return Json(json!({ "running": running })).into_response();
    }
    if let Some(record) = console.audit_record(&call_id).await {
        return Json(record).into_response();
    }
    // Another daemon's call, while that daemon shows it.
    let services = console.services();
    if services.live.daemon().is_some() {
        let listed = services.live.listed(services.audit.includes_input()).await;
        if let Some(record) = listed.recent.into_iter().find(|r| r["call_id"] == call_id) {
            return Json(record).into_response();
        }
        if let Some(running) = listed.running.into_iter().find(|r| r["call_id"] == call_id) {
            return Json(json!({ "running": running })).into_response();
        }
    }
    error(StatusCode::NOT_FOUND, format!("no call {call_id} is known"))
}

/// `POST calls/{call_id}/cancel`.
pub(super) async fn cancel(
    State(console): State<Arc<Console>>,
    Extension(op): Extension<Operator>,
    Path(call_id): Path<String>,
) -> Response {
    let live = &console.services().live;
    match live.cancel_anywhere(&call_id, &op.name).await {
        Ok(Cancelled::Here) => (
            StatusCode::ACCEPTED,
            Json(json!({ "cancelled": true, "daemon": live.daemon() })),
        )
            .into_response(),
        Ok(Cancelled::Elsewhere(daemon)) => (
            StatusCode::ACCEPTED,
            Json(json!({ "cancelled": true, "daemon": daemon })),
        )
            .into_response(),
        Err(e) => error(StatusCode::NOT_FOUND, e.to_string()),
    }
}

/// `GET health`: tools with their stats and breakers, plugins with provenance, grants and limits,
/// rejected plugins with why.
pub(super) async fn health(State(console): State<Arc<Console>>) -> Response {
    let services = console.services();
    let catalog = services.registry.catalog();
    let stats = services.stats.snapshot();
    let breakers = services.health.health(None, |_| true);
    let tools: Vec<Value> = catalog
        .tools
        .values()
        .map(|t| {
            let name = &t.spec.name;
            let s = stats.iter().find(|s| &s.tool == name);
            json!({
                "name": name,
                "plugin": t.plugin.name,
                "description": t.spec.description,
                "calls": s.map_or(0, |s| s.calls),
                "errors": s.map_or(0, |s| s.calls - s.successes),
                "p50_ms": s.map(|s| s.p50.as_secs_f64() * 1000.0),
                "p99_ms": s.map(|s| s.p99.as_secs_f64() * 1000.0),
                "breaker": breakers.get(name.as_str()).map(|h| breaker(&h.breaker)),
            })
        })
        .collect();
    let mut plugins = Vec::new();
    let mut rejected = Vec::new();
    for (name, status) in &catalog.plugins {
        match status {
            PluginStatus::Loaded {
                provenance, tools, ..
            } => {
                let loaded = catalog
                    .tools
                    .values()
                    .find(|t| &t.plugin.name == name)
                    .map(|t| t.plugin.as_ref());
                plugins.push(json!({
                    "name": name,
                    "source": provenance.source,
                    "digest": provenance.digest.as_str(),
                    "signature": provenance.signature,
                    "tools": tools,
                    "grants": loaded.map(grants),
                    "limits": loaded.map(limits),
                }));
            }
            PluginStatus::Rejected {
                file,
                reason,
                kept_previous,
            } => rejected.push(json!({
                "name": name, "why": reason, "file": file, "kept_previous": kept_previous,
            })),
        }
    }
    let tasks = match console.shared.tasks() {
        Some(tasks) => match tasks.newest(TASKS_SHOWN).await {
            Ok(list) => list.iter().map(task).collect(),
            Err(e) => vec![json!({ "error": e.to_string() })],
        },
        None => Vec::new(),
    };
    Json(json!({
        "daemon": services.live.daemon(),
        "tools": tools,
        "plugins": plugins,
        "rejected": rejected,
        "tasks": tasks,
        "running": services.running(),
        "in_flight": services.admission.in_flight(),
        "fleet": services.live.fleet_health().await,
    }))
    .into_response()
}

/// A breaker as the console shows it: its state, why, and when a trial call may run; the
/// state's own fields beside them.
fn breaker(state: &toolhost_gate::breaker::BreakerState) -> Value {
    use toolhost_gate::breaker::BreakerState as B;
    let mut value = json!(state);
    let (reason, retry_in) = match state {
        B::Open {
            kind,
            failures,
            retry_at_in_s,
            ..
        } => (
            Some(format!("{failures} consecutive {} failures", kind.as_str())),
            Some(*retry_at_in_s),
        ),
        B::HalfOpen { kind, failures, .. } => (
            Some(format!(
                "{failures} consecutive {} failures; a trial call decides",
                kind.as_str()
            )),
            None,
        ),
        _ => (None, None),
    };
    value["reason"] = json!(reason);
    value["reopens_at"] = json!(
        retry_in
            .map(|s| { (chrono::Utc::now() + chrono::Duration::seconds(s as i64)).to_rfc3339() })
    );
    value
}

/// Tasks shown on the health page, newest first.
const TASKS_SHOWN: usize = 100;

/// A task as the console lists it: never its result or its questions' answers.
fn task(t: &crate::state::TaskRecord) -> Value {
    let at = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).map(|t| t.to_rfc3339());
    json!({
        "id": t.id,
        "tool": t.name,
        "state": t.status,
        "message": t.message,
        "owner": t.owner,
        "daemon": t.daemon,
        "created_at": at(t.created_ms),
        "updated_at": at(t.updated_ms),
    })
}

/// A plugin's grants as an operator reads them: names of env variables and secrets, never
/// their values.
fn grants(plugin: &crate::registry::LoadedPlugin) -> Value {
    let g = &plugin.policy.grants;
    json!({
        "dirs": g.dirs.iter().map(|d| json!({
            "host": d.host, "guest": d.guest, "read_only": d.read_only, "exclude": d.exclude,
        })).collect::<Vec<_>>(),
        "env": g.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        "secrets": g.secrets.iter().map(|s| &s.name).collect::<Vec<_>>(),
        "network": g.network.as_ref().map(|n| json!({
            "allow": n.allow.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "allow_private": n.allow_private,
        })),
    })
}

/// A plugin's per-call limits.
fn limits(plugin: &crate::registry::LoadedPlugin) -> Value {
    let p = &plugin.policy;
    json!({
        "timeout_ms": u64::try_from(p.limits.timeout.as_millis()).unwrap_or(u64::MAX),
        "fuel": p.limits.fuel,
        "memory_bytes": p.limits.memory_bytes,
        "output_bytes": p.output_bytes,
    })
}

impl Console {
    /// A record as the audit log has it: without the input unless the log keeps inputs.
    pub(super) fn as_written(&self, record: &AuditRecord) -> Value {
        crate::exec::as_written(record, self.services().audit.includes_input())
    }
}
