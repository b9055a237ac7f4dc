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
use crate::registry::{Catalog, PluginStatus, Start};
use crate::stats::Exposition;

fn plugin_counts(shared: &Shared) -> (usize, Vec<String>) {
    let catalog = shared.services.registry.catalog();
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
    caller: Option<axum::Extension<Arc<toolhost_gate::caller::Caller>>>,
) -> Response {
    // Liveness: 200 while the process serves, shutting down included (readiness is `/ready`).
    let stopping = shared.services.admission.stopping().is_cancelled();
    let (loaded, rejected) = plugin_counts(&shared);
    let mut body: Value = json!({
        "status": if stopping { "stopping" } else { "ok" },
        "version": env!("CARGO_PKG_VERSION"),
        "tools": shared.services.registry.catalog().tools.len(),
        "plugins": { "loaded": loaded, "rejected": rejected },
        "running_calls": shared.services.running(),
        "calls_in_flight": shared.services.admission.in_flight(),
    });
    if probe.is_some() {
        // A probe without a token learns that the daemon lives, not which plugins failed.
        body["plugins"]["rejected"] = json!(rejected.len());
    } else {
        // Each called tool's circuit breaker and recent outcomes, as far as the caller sees tools.
        // The caller's own breakers beside the tools' (failures under its profile's lower limits).
        let caller = caller.as_ref().map(|axum::Extension(c)| c.as_ref());
        let services = &shared.services;
        let key = caller.map(|c| toolhost_gate::task::owner_of(Some(c)));
        body["breakers"] = json!(
            services
                .health
                .health(key.as_deref(), |t| services.sees(caller, t))
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

/// Readiness, for a load balancer: 503 while the plugins' first load runs (the body says which
/// are still loading, and which of them compile), while the state store is configured but not
/// reachable, and from the start of shutdown (so that the balancer drains this daemon); `/health`
/// stays liveness. A probe without a token learns counts, not plugin names.
pub(crate) async fn ready(
    State(shared): State<Arc<Shared>>,
    probe: Option<axum::Extension<Unauthenticated>>,
) -> Response {
    let unavailable = |body: Value| (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
    if shared.services.admission.stopping().is_cancelled() {
        return unavailable(json!({"status": "stopping"}));
    }
    let catalog = shared.services.registry.catalog();
    let loading = loading(&catalog, probe.is_some());
    if catalog.start != Start::Done {
        return unavailable(json!({
            "status": "loading",
            "tools": catalog.tools.len(),
            "loading": loading,
        }));
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
        Ok(()) if catalog.loading.is_empty() => Json(json!({"status": "ready"})).into_response(),
        // A reload of changed plugins: the daemon serves (their earlier versions meanwhile).
        Ok(()) => Json(json!({"status": "ready", "loading": loading})).into_response(),
        Err(why) => unavailable(json!({"status": "unavailable", "state": why})),
    }
}

/// What is loading: for an operator, each plugin with how long it has loaded and, when it
/// compiles, its size; for a probe, how many.
fn loading(catalog: &Catalog, probe: bool) -> Value {
    if probe {
        return json!(catalog.loading.len());
    }
    let plugins: Vec<Value> = catalog
        .loading
        .iter()
        .map(|(name, l)| {
            json!({
                "plugin": name,
                "compiling": l.compiling.is_some(),
                "bytes": l.compiling,
                "seconds": (l.since.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            })
        })
        .collect();
    json!(plugins)
}

/// `/metrics`, as far as the caller sees tools: a caller with a `[[callers]]` profile gets the
/// series of the tools its profile lets it see, as `/health` shows them, and never the calls of
/// names outside the catalogue (`tool="(unknown)"`), which only the operator's view (no profile)
/// shows. Daemon-wide gauges are for everyone who may read `/metrics`.
pub(crate) async fn metrics(
    State(shared): State<Arc<Shared>>,
    caller: Option<axum::Extension<Arc<toolhost_gate::caller::Caller>>>,
) -> Response {
    let caller = caller.as_ref().map(|axum::Extension(c)| c.as_ref());
    let services = &shared.services;
    let whole = services.sees_everything(caller);
    let shows = |tool: &str| {
        if tool == crate::stats::UNKNOWN_TOOL {
            whole
        } else {
            services.sees(caller, tool)
        }
    };
    let mut text = Exposition::new();
    services.stats.write_prometheus_for(&mut text, shows);
    services.health.write_prometheus_for(&mut text, shows);
    let (loaded, rejected) = plugin_counts(&shared);
    let gauges: [Gauge; 4] = [
        (
            "toolhost_calls_running",
            "Tool calls executing in the sandbox now.",
            vec![(&[], shared.services.running())],
        ),
        (
            "toolhost_calls_in_flight",
            "MCP tool calls in flight, including those waiting for an approval.",
            vec![(&[], shared.services.admission.in_flight())],
        ),
        (
            "toolhost_tools",
            "Tools served.",
            vec![(&[], shared.services.registry.catalog().tools.len())],
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
    let dropped = "toolhost_log_lines_dropped_total";
    text.family(
        dropped,
        "counter",
        "Diagnostic log lines dropped because stderr was full or closed (the daemon never waits for it).",
    );
    text.sample(dropped, &[], crate::diagnostics::dropped());
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
