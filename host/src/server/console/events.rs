//! `GET /console/api/events`: the pipeline's live changes as server-sent events, so that the page
//! never polls. A follower that falls too far behind is sent `reload` and fetches the lists again.
//! The stream carries questions with their full inputs, so it lasts only as long as the right to
//! see them: it ends when the daemon starts shutting down, when its session signs out or expires,
//! and when its bearer token expires, is revoked or loses the operator role (checked every
//! [`RECHECK`]). While it is open, someone can answer in the console ([`Questions::attend`]).
//!
//! [`Questions::attend`]: crate::exec::Questions::attend

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use super::Console;
use crate::exec::LiveEvent;
use crate::server::http::auth::Presented;
use crate::server::http::reply::error;

/// How often a stream checks that its viewer may still see it.
const RECHECK: Duration = Duration::from_secs(1);

/// Whose right to see the stream is checked again while it lasts.
enum Viewer {
    /// A signed-in browser, by its session's key.
    Session([u8; 32]),
    /// A bearer token's operator.
    Bearer(Presented),
}

impl Viewer {
    async fn may_see(&self, console: &Console) -> bool {
        match self {
            Self::Session(key) => console.sessions.is_live(key).await,
            Self::Bearer(presented) => presented
                .caller()
                .await
                .is_some_and(|caller| console.is_operator(&caller)),
        }
    }
}

/// `GET events`.
pub(super) async fn events(State(console): State<Arc<Console>>, request: Request) -> Response {
    let viewer = if let Some(presented) = request.extensions().get::<Presented>() {
        Viewer::Bearer(presented.clone())
    } else if let Some(key) = console.sessions.key(request.headers()).await {
        Viewer::Session(key)
    } else {
        // The API's gate let in neither a token nor a session: the session just ended.
        return error(StatusCode::UNAUTHORIZED, "not signed in");
    };
    let receiver = console.services().live.subscribe();
    let stopping = console.services().admission.stopping().clone();
    let attending = console.services().questions.attend();
    let mut recheck = tokio::time::interval(RECHECK);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let state = (receiver, console, stopping, viewer, recheck, attending);
    let events = stream::unfold(state, |mut state| async move {
        let (receiver, console, stopping, viewer, recheck, _) = &mut state;
        let event = loop {
            tokio::select! {
                () = stopping.cancelled() => return None,
                _ = recheck.tick() => {
                    if !viewer.may_see(console).await {
                        return None;
                    }
                }
                e = receiver.recv() => break e,
            }
        };
        let event = match event {
            // A session is checked again before each event (a look-up); a token on the tick.
            Ok(_) if matches!(viewer, Viewer::Session(_)) && !viewer.may_see(console).await => {
                return None;
            }
            Ok(e) => encode(console, e),
            Err(RecvError::Lagged(_)) => Event::default().event("reload").data("{}"),
            Err(RecvError::Closed) => return None,
        };
        Some((Ok::<_, Infallible>(event), state))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

fn encode(console: &Console, event: LiveEvent) -> Event {
    let (name, data) = match event {
        LiveEvent::Question(q) => ("question", json!(q)),
        LiveEvent::Posted(q) => ("question", (*q).clone()),
        LiveEvent::Answered {
            id,
            answer,
            operator,
        } => (
            "answered",
            json!({ "id": id, "answer": answer, "operator": operator }),
        ),
        LiveEvent::Started(r) => ("started", json!(r)),
        LiveEvent::Ended(record) => ("ended", console.as_written(&record)),
        LiveEvent::Elsewhere => ("calls", json!({})),
    };
    // JSON has no raw newlines, so each event is one `data:` line.
    Event::default().event(name).data(data.to_string())
}
