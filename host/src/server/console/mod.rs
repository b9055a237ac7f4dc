//! The operator's console at `/console/` (docs/console.md): a page embedded in the binary and the
//! JSON API it uses, for operators only ([`access`]). A front end like the others: it answers
//! questions, cancels calls and reads what ran through the pipeline, and decides nothing itself.

mod access;
mod api;
mod assets;
mod events;
mod session;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::Value;

use self::session::{Sessions, set_cookie};
use super::http::reply::error;
use super::shared::Shared;
use crate::exec::Pipeline;
use toolhost_policy::caller::Caller;

/// The console's state: the daemon's shared part and who is signed in.
pub(crate) struct Console {
    shared: Arc<Shared>,
    sessions: Sessions,
}

impl Console {
    /// The console of the daemon that `shared` belongs to.
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            sessions: Sessions::default(),
        }
    }

    fn pipeline(&self) -> &Arc<Pipeline> {
        &self.shared.pipeline
    }

    fn is_operator(&self, caller: &Caller) -> bool {
        self.pipeline().config().callers.is_operator(caller)
    }

    /// A new one-time sign-in link's path and query, for the daemon to print.
    pub(crate) fn sign_in_path(&self) -> String {
        format!("/console/signin?token={}", self.sessions.new_link())
    }

    /// A call's end record from the audit log, for one no longer among the recent.
    async fn audit_record(&self, _call_id: &str) -> Option<Value> {
        None
    }
}

/// Every console route: the page and its assets to anyone but a caller without the role (they
/// hold no data), the API to operators.
pub(crate) fn routes(console: Arc<Console>) -> Router {
    console.pipeline().questions().open();
    let api = Router::new()
        .route("/session", get(api::session))
        .route("/signout", post(api::sign_out))
        .route("/approvals", get(api::approvals))
        .route("/approvals/{id}", post(api::answer))
        .route("/calls", get(api::calls))
        .route("/calls/{call_id}", get(api::call))
        .route("/calls/{call_id}/cancel", post(api::cancel))
        .route("/events", get(events::events))
        .route("/health", get(api::health))
        .route_layer(middleware::from_fn_with_state(
            console.clone(),
            access::signed_in,
        ))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such console API route") });
    Router::new()
        .route(
            "/console",
            get(|| async { Redirect::permanent("/console/") }),
        )
        .route("/console/", get(assets::index))
        .route("/console/assets/app.js", get(assets::app_js))
        .route("/console/assets/app.css", get(assets::app_css))
        .route("/console/signin", get(sign_in))
        .nest("/console/api", api)
        .with_state(console.clone())
        .layer(middleware::from_fn_with_state(
            console,
            access::operators_only,
        ))
        .layer(middleware::from_fn(hardened))
}

async fn hardened(request: Request, next: Next) -> Response {
    assets::harden(next.run(request).await)
}

#[derive(Deserialize)]
struct SignIn {
    token: String,
}

/// `GET /console/signin?token=…`: spends the one-time link; a new one is printed for the next
/// browser.
async fn sign_in(
    State(console): State<Arc<Console>>,
    query: Result<Query<SignIn>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let cookie = query
        .ok()
        .and_then(|Query(q)| console.sessions.sign_in_with_link(&q.token));
    let Some(cookie) = cookie else {
        return error(
            StatusCode::FORBIDDEN,
            "this sign-in link is not valid or was used already; toolhost prints a new one on \
             stderr each time one is used",
        );
    };
    eprintln!(
        "toolhost: console signed in; the next sign-in link is {}",
        console.sign_in_path()
    );
    let mut response = Redirect::to("/console/").into_response();
    if let Ok(v) = HeaderValue::from_str(&set_cookie(Some(&cookie))) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}
