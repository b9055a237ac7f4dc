//! `GET /console/api/events`: the pipeline's live changes as server-sent events, so that the page
//! never polls. A follower that falls too far behind is sent `reload` and fetches the lists again;
//! the stream ends when the daemon starts shutting down.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use super::Console;
use crate::exec::LiveEvent;

/// `GET events`.
pub(super) async fn events(State(console): State<Arc<Console>>) -> Response {
    let receiver = console.pipeline().live().subscribe();
    let stopping = console.pipeline().stopping().clone();
    let events = stream::unfold(
        (receiver, console, stopping),
        |(mut receiver, console, stopping)| async move {
            let event = tokio::select! {
                () = stopping.cancelled() => return None,
                e = receiver.recv() => e,
            };
            let event = match event {
                Ok(e) => encode(&console, e),
                Err(RecvError::Lagged(_)) => Event::default().event("reload").data("{}"),
                Err(RecvError::Closed) => return None,
            };
            Some((Ok::<_, Infallible>(event), (receiver, console, stopping)))
        },
    );
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

fn encode(console: &Console, event: LiveEvent) -> Event {
    let (name, data) = match event {
        LiveEvent::Question(q) => ("question", json!(q)),
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
    };
    // JSON has no raw newlines, so each event is one `data:` line.
    Event::default().event(name).data(data.to_string())
}
