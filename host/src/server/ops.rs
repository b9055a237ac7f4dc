//! The operator's routes: `GET /health` (liveness, and each tool's breakers for a caller with a
//! token), `GET /ready` (readiness for a load balancer) and `GET /metrics` (Prometheus text). They
//! read the pipeline through [`Shared`] and answer; they know no MCP and no batch API.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use serde_json::{Value, json};

use super::http::auth::Unauthenticated;
use super::shared::Shared;
use crate::registry::PluginStatus;
use crate::stats::Exposition;

fn plugin_counts(shared: &Shared) -> (usize, Vec<String>) {
    let catalog = shared.pipeline.catalog();
    let rejected: Vec<String> = catalog
        .plugins
        .iter()
        .filter(|(_, s)| matches!(s, PluginStatus::Rejected { .. }))
        .map(|(name, _)| name.clone())
        .collect();
    (catalog.plugins.len() - rejected.len(), rejected)
}

/// `GET /health`: liveness, with counts for a probe and breakers for a caller.
pub(crate) async fn health(
    State(shared): State<Arc<Shared>>,
    probe: Option<axum::Extension<Unauthenticated>>,
    caller: Option<axum::Extension<Arc<toolhost_policy::caller::Caller>>>,
) -> Response {
    // Liveness: 200 while the process serves, shutting down included (readiness is `/ready`).
    let stopping = shared.pipeline.stopping().is_cancelled();
    let (loaded, rejected) = plugin_counts(&shared);
    let mut body: Value = json!({
        "status": if stopping { "stopping" } else { "ok" },
        "version": env!("CARGO_PKG_VERSION"),
        "tools": shared.pipeline.catalog().tools.len(),
        "plugins": { "loaded": loaded, "rejected": rejected },
        "running_calls": shared.pipeline.running(),
        "calls_in_flight": shared.pipeline.in_flight(),
    });
    if probe.is_some() {
        // A probe without a token learns that the daemon lives, not which plugins failed.
        body["plugins"]["rejected"] = json!(rejected.len());
    } else {
        // Each called tool's circuit breaker and recent outcomes, as far as the caller sees tools.
        // The caller's own breakers beside the tools' (failures under its profile's lower limits).
        let caller = caller.as_ref().map(|axum::Extension(c)| c.as_ref());
        let pipeline = &shared.pipeline;
        let key = caller.map(|c| toolhost_policy::task::owner_of(Some(c)));
        body["breakers"] = json!(
            pipeline
                .health()
                .health(key.as_deref(), |t| pipeline.sees(caller, t))
        );
    }
    Json(body).into_response()
}

/// A gauge for `/metrics`: name, help text, and (labels, value) samples.
type Gauge = (
    &'static str,
    &'static str,
    Vec<(&'static [(&'static str, &'static str)], usize)>,
);

/// Readiness, for a load balancer: 503 while the state store is configured but not reachable,
/// and from the start of shutdown (so that the balancer drains this daemon); `/health` stays
/// liveness.
pub(crate) async fn ready(State(shared): State<Arc<Shared>>) -> Response {
    if shared.pipeline.stopping().is_cancelled() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "stopping"})),
        )
            .into_response();
    }
    let wants = shared.wants_tasks.load(std::sync::atomic::Ordering::SeqCst);
    let store = match shared.tasks() {
        Some(tasks) => match tasks.store().ping().await {
            Ok(()) => Ok(()),
            Err(e) => Err(e.to_string()),
        },
        None if wants => Err("the state store is not open yet".to_owned()),
        None => Ok(()),
    };
    match store {
        Ok(()) => Json(json!({"status": "ready"})).into_response(),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "unavailable", "state": why})),
        )
            .into_response(),
    }
}

/// `/metrics`, as far as the caller sees tools: a caller with a `[[callers]]` profile gets the
/// series of the tools its profile lets it see, as `/health` shows them, and never the calls of
/// names outside the catalogue (`tool="(unknown)"`), which only the operator's view (no profile)
/// shows. Daemon-wide gauges are for everyone who may read `/metrics`.
pub(crate) async fn metrics(
    State(shared): State<Arc<Shared>>,
    caller: Option<axum::Extension<Arc<toolhost_policy::caller::Caller>>>,
) -> Response {
    let caller = caller.as_ref().map(|axum::Extension(c)| c.as_ref());
    let pipeline = &shared.pipeline;
    let whole = pipeline.sees_everything(caller);
    let shows = |tool: &str| {
        if tool == crate::stats::UNKNOWN_TOOL {
            whole
        } else {
            pipeline.sees(caller, tool)
        }
    };
    let mut text = Exposition::new();
    pipeline.stats().write_prometheus_for(&mut text, shows);
    pipeline.health().write_prometheus_for(&mut text, shows);
    let (loaded, rejected) = plugin_counts(&shared);
    let gauges: [Gauge; 4] = [
        (
            "toolhost_calls_running",
            "Tool calls executing in the sandbox now.",
            vec![(&[], shared.pipeline.running())],
        ),
        (
            "toolhost_calls_in_flight",
            "MCP tool calls in flight, including those waiting for an approval.",
            vec![(&[], shared.pipeline.in_flight())],
        ),
        (
            "toolhost_tools",
            "Tools served.",
            vec![(&[], shared.pipeline.catalog().tools.len())],
        ),
        (
            "toolhost_plugins",
            "Plugin files, by load status.",
            vec![
                (&[("status", "loaded")], loaded),
                (&[("status", "rejected")], rejected.len()),
            ],
        ),
    ];
    for (name, help, samples) in gauges {
        text.family(name, "gauge", help);
        for (labels, value) in samples {
            text.sample(name, labels, value);
        }
    }
    let text = text.into_text();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}
