//! The audit browser's routes: a page of the log, newest first, under filters (read backwards
//! from a cursor within a scan budget, so the first page never waits on the log's size), the
//! same records as a JSONL download, and the per-tool series behind the health charts. The
//! reading is [`crate::audit::query`]'s, off the runtime's threads.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use futures_util::stream;
use serde_json::{Value, json};

use super::Console;
use axum::extract::rejection::QueryRejection;

use crate::audit::index::AuditIndex;
use crate::audit::query::{self, Export, Params, QueryError, Request};
use crate::server::http::reply::error;
use serde::Deserialize;
use std::str::FromStr;

/// A validated query of the log, and the log's path; or the answer that says why not.
type Asked = Result<(Request, std::path::PathBuf), Box<Response>>;

fn asked(console: &Console, params: Result<Query<Params>, QueryRejection>) -> Asked {
    let Ok(Query(params)) = params else {
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            "the query string does not parse",
        )));
    };
    let request = params
        .parse()
        .map_err(|e| error(StatusCode::BAD_REQUEST, e.to_string()))?;
    let path = console
        .services()
        .config
        .audit_path
        .clone()
        .ok_or_else(|| {
            error(
                StatusCode::NOT_FOUND,
                "the audit log is off ([audit] disabled)",
            )
        })?;
    Ok((request, path))
}

/// `?scope=local`: this daemon's own file, though the daemon is one of a fleet.
#[derive(Deserialize, Default)]
pub(super) struct Scope {
    scope: Option<String>,
}

impl Console {
    /// The fleet's audit index, unless the request asks for this daemon's file (or the daemon is
    /// alone).
    fn fleet_index(&self, scope: &Scope) -> Option<Arc<dyn AuditIndex>> {
        if scope.scope.as_deref() == Some("local") {
            return None;
        }
        let tasks = self.shared.tasks()?;
        tasks.store().audit_index(tasks.daemon())
    }
}

/// `GET audit?…`: one page, of the fleet's index in a fleet, else of this daemon's file.
pub(super) async fn page(
    State(console): State<Arc<Console>>,
    Query(scope): Query<Scope>,
    params: Result<Query<Params>, QueryRejection>,
) -> Response {
    if let Some(index) = console.fleet_index(&scope) {
        return fleet_page(index.as_ref(), params).await;
    }
    let (request, path) = match asked(&console, params) {
        Ok(asked) => asked,
        Err(answer) => return *answer,
    };
    let read = tokio::task::spawn_blocking(move || {
        query::query(&path, &request.filter, request.cursor, request.limit)
    })
    .await;
    match read {
        Ok(Ok(page)) => Json(page).into_response(),
        Ok(Err(QueryError::Open { source, .. }))
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Json(json!({ "records": [], "next": Value::Null, "scanned_bytes": 0 })).into_response()
        }
        Ok(Err(e @ QueryError::StaleCursor)) => error(StatusCode::BAD_REQUEST, e.to_string()),
        Ok(Err(e)) => {
            tracing::warn!("console: reading the audit log: {e}");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the audit log could not be read",
            )
        }
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "the audit reader failed"),
    }
}

/// A page of the fleet's index.
async fn fleet_page(
    index: &dyn AuditIndex,
    params: Result<Query<Params>, QueryRejection>,
) -> Response {
    let Ok(Query(params)) = params else {
        return error(StatusCode::BAD_REQUEST, "the query string does not parse");
    };
    let (filter, cursor, limit) = match query::fleet_request(&params) {
        Ok(request) => request,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    match query::fleet_page(index, &filter, cursor, limit).await {
        Ok(page) => Json(page).into_response(),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

/// Every record of the fleet's index the filters match, newest first, as JSONL, page by page.
fn fleet_export(index: Arc<dyn AuditIndex>, params: &Params) -> Response {
    let (filter, _, _) = match query::fleet_request(params) {
        Ok(request) => request,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    // `None` once done; else where the next page starts (`None` for the newest).
    let start: Option<Option<String>> = Some(None);
    let chunks = stream::unfold(start, move |state| {
        let (index, filter) = (index.clone(), filter.clone());
        async move {
            let cursor = match state? {
                Some(c) => Some(query::FleetCursor::from_str(&c).ok()?),
                None => None,
            };
            match query::fleet_page(index.as_ref(), &filter, cursor, query::MAX_LIMIT).await {
                Ok(page) => {
                    let mut bytes = Vec::new();
                    for record in &page.records {
                        bytes.extend_from_slice(record.to_string().as_bytes());
                        bytes.push(b'\n');
                    }
                    Some((Ok::<_, std::io::Error>(bytes), page.next.map(Some)))
                }
                Err(e) => Some((Err(std::io::Error::other(e.to_string())), None)),
            }
        }
    });
    jsonl(Body::from_stream(chunks))
}

fn jsonl(body: Body) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"toolhost-audit.jsonl\"",
            ),
        ],
        body,
    )
        .into_response()
}

/// `GET audit/export?…`: every record the filters match, newest first, as JSONL, streamed.
pub(super) async fn export(
    State(console): State<Arc<Console>>,
    Query(scope): Query<Scope>,
    params: Result<Query<Params>, QueryRejection>,
) -> Response {
    if let Some(index) = console.fleet_index(&scope) {
        let Ok(Query(params)) = params else {
            return error(StatusCode::BAD_REQUEST, "the query string does not parse");
        };
        return fleet_export(index, &params);
    }
    let (request, path) = match asked(&console, params) {
        Ok(asked) => asked,
        Err(answer) => return *answer,
    };
    // Each chunk is read off the runtime; the iterator comes back with it for the next one.
    let chunks = stream::unfold(
        Some(Export::new(path, request.filter)),
        |export| async move {
            let mut export = export?;
            let (export, chunk) = tokio::task::spawn_blocking(move || {
                let chunk = export.next();
                (export, chunk)
            })
            .await
            .ok()?;
            match chunk? {
                Ok(bytes) => Some((Ok::<_, std::io::Error>(bytes), Some(export))),
                Err(QueryError::Open { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    None
                }
                Err(e) => Some((Err(std::io::Error::other(e.to_string())), None)),
            }
        },
    );
    jsonl(Body::from_stream(chunks))
}

/// `GET stats`: each tool's calls, errors and latency per interval over the last hour.
pub(super) async fn stats(State(console): State<Arc<Console>>) -> Response {
    Json(json!({
        "interval_s": crate::stats::INTERVAL_SECS,
        "tools": console.services().stats.series(),
    }))
    .into_response()
}

impl Console {
    /// A call's end record from the audit log: a search for its id, newest first.
    pub(super) async fn audit_record(&self, call_id: &str) -> Option<Value> {
        let path = self.services().config.audit_path.clone()?;
        let params = Params {
            q: Some(call_id.to_owned()),
            limit: Some("1000".to_owned()),
            ..Params::default()
        };
        let request = params.parse().ok()?;
        let wanted = call_id.to_owned();
        tokio::task::spawn_blocking(move || {
            let page = query::query(&path, &request.filter, None, request.limit).ok()?;
            page.records
                .iter()
                .filter_map(|r| serde_json::from_str::<Value>(r.get()).ok())
                .find(|r| r["call_id"] == wanted.as_str())
        })
        .await
        .ok()
        .flatten()
    }
}
