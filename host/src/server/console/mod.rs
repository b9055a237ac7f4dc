//! The operator's console at `/console/` (docs/console.md): a page embedded in the binary and the
//! JSON API it uses, for operators only ([`access`]). A front end like the others: it answers
//! questions, cancels calls and reads what ran through the pipeline, and decides nothing itself.

mod access;
mod api;
mod assets;
mod audit;
mod events;
mod login;
mod session;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use self::login::{Login, LoginError};
use self::session::{Sessions, set_cookie};
use super::http::reply::error;
use super::shared::Shared;
use crate::exec::Services;
use crate::state::StateError;
use toolhost_config::config::ServerConfig;
use toolhost_gate::caller::Caller;

/// The console's state: the daemon's shared part and who is signed in.
pub(crate) struct Console {
    shared: Arc<Shared>,
    sessions: Sessions,
    /// Signing in through the identity provider, when `[auth]` and a client id are configured.
    login: Option<Login>,
    /// Whether the daemon prints sign-in links on stderr (loopback without `[auth]`): then each
    /// link used is followed by the next one there.
    prints_links: std::sync::atomic::AtomicBool,
}

impl Console {
    /// The console of the daemon that `shared` belongs to.
    pub(crate) fn new(shared: Arc<Shared>, server: &ServerConfig) -> Self {
        let config = shared.services.config.clone();
        let login = Login::new(
            &config.console,
            config.auth.as_ref(),
            server,
            &config.callers,
        );
        let store = shared.clone();
        let sessions = Sessions::new(move || {
            let tasks = store.tasks()?;
            tasks.store().sign_ins(tasks.daemon())
        });
        Self {
            shared,
            sessions,
            login,
            prints_links: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn services(&self) -> &Arc<Services> {
        &self.shared.services
    }

    fn is_operator(&self, caller: &Caller) -> bool {
        self.services().config.callers.is_operator(caller)
    }

    /// A new one-time sign-in link's path and query, for the daemon to print on stderr (from
    /// now on, after each use too).
    pub(crate) async fn sign_in_path(&self) -> Result<String, StateError> {
        self.prints_links
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.sign_in_path_for("local operator").await
    }

    /// A new one-time sign-in link's path and query, whose session is `operator`'s.
    async fn sign_in_path_for(&self, operator: &str) -> Result<String, StateError> {
        let token = self.sessions.new_link(operator).await?;
        Ok(format!("/console/signin?token={token}"))
    }
}

/// Every console route: the page and its assets to anyone but a caller without the role (they
/// hold no data), the API to operators.
pub(crate) fn routes(console: Arc<Console>) -> Router {
    console.services().questions.open();
    let api = Router::new()
        .route("/session", get(api::session))
        .route("/signout", post(api::sign_out))
        .route("/links", post(api::new_link))
        .route("/approvals", get(api::approvals))
        .route("/approvals/{id}", post(api::answer))
        .route("/calls", get(api::calls))
        .route("/calls/{call_id}", get(api::call))
        .route("/calls/{call_id}/cancel", post(api::cancel))
        .route("/events", get(events::events))
        .route("/health", get(api::health))
        .route("/audit", get(audit::page))
        .route("/audit/export", get(audit::export))
        .route("/stats", get(audit::stats))
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
        .route("/console/login", get(log_in))
        .route("/console/callback", get(callback))
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
    let cookie = match query {
        Ok(Query(q)) => console.sessions.sign_in_with_link(&q.token).await,
        Err(_) => Ok(None),
    };
    let cookie = match cookie {
        Ok(cookie) => cookie,
        Err(e) => return unavailable(&e),
    };
    let Some(cookie) = cookie else {
        return error(
            StatusCode::FORBIDDEN,
            "this sign-in link is not valid or was used already; on loopback toolhost prints a \
             new one on stderr each time one is used, and `toolhost console-link` mints one with \
             an operator's token",
        );
    };
    if console
        .prints_links
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        match console.sign_in_path().await {
            Ok(path) => crate::diagnostics::say(&format!(
                "toolhost: console signed in; the next sign-in link is {path}"
            )),
            Err(e) => tracing::warn!("no next console sign-in link: {e}"),
        }
    }
    let mut response = Redirect::to("/console/").into_response();
    if let Ok(v) = HeaderValue::from_str(&set_cookie(Some(&cookie))) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// `GET /console/login`: off to the identity provider.
async fn log_in(State(console): State<Arc<Console>>, headers: HeaderMap) -> Response {
    let Some(login) = &console.login else {
        return refused(&LoginError::NotConfigured);
    };
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    match login.start(host).await {
        Ok(url) => Redirect::to(&url).into_response(),
        Err(e) => refused(&e),
    }
}

#[derive(Deserialize)]
struct Callback {
    code: String,
    state: String,
}

/// `GET /console/callback?code=…&state=…`: back from the identity provider.
async fn callback(
    State(console): State<Arc<Console>>,
    query: Result<Query<Callback>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Some(login) = &console.login else {
        return refused(&LoginError::NotConfigured);
    };
    let Ok(Query(back)) = query else {
        return refused(&LoginError::State);
    };
    match login.finish(&back.state, &back.code).await {
        Ok(operator) => {
            let cookie = match console.sessions.open(operator).await {
                Ok(cookie) => cookie,
                Err(e) => return unavailable(&e),
            };
            let mut response = Redirect::to("/console/").into_response();
            if let Ok(v) = HeaderValue::from_str(&set_cookie(Some(&cookie))) {
                response.headers_mut().insert(header::SET_COOKIE, v);
            }
            response
        }
        Err(e) => refused(&e),
    }
}

/// The store that keeps the fleet's sessions did not answer.
fn unavailable(e: &StateError) -> Response {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the console's sessions are kept in the state store, which did not answer: {e}"),
    )
}

fn refused(e: &LoginError) -> Response {
    let status = match e {
        LoginError::NotConfigured => StatusCode::NOT_FOUND,
        LoginError::Provider(_) => StatusCode::BAD_GATEWAY,
        LoginError::State => StatusCode::BAD_REQUEST,
        LoginError::Token(_) | LoginError::NotOperator => StatusCode::FORBIDDEN,
    };
    error(status, e.to_string())
}
