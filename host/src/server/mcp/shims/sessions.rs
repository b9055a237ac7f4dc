//! The running calls of each HTTP MCP session, by `mcp-session-id`, so that `DELETE /mcp` stops
//! them at once. rmcp ends a deleted session's service only after draining its handlers (for up to
//! 5 s) and cancels them last, so without this a call runs on for nothing: nobody is left to read
//! its answer. Only a session's own calls stop; the pipeline records each as cancelled.
//!
//! An entry lives while a call of its session runs. It decides nothing about who may delete a
//! session: the ids it is given have passed [`super::super::owners`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionHandle;
use tokio_util::sync::CancellationToken;

/// How long a deleted session's worker may take to end before its calls are stopped anyway.
const WORKER_END_WAIT: Duration = Duration::from_millis(500);
/// How many deleted session ids are remembered for calls that start as their session is deleted.
const ENDED_KEPT: usize = 256;

/// The calls running in each HTTP session, and the sessions deleted last.
#[derive(Default)]
pub(crate) struct SessionCalls {
    book: Mutex<Book>,
}

#[derive(Default)]
struct Book {
    running: HashMap<Arc<str>, Entry>,
    /// Sessions deleted last, oldest first: a call rmcp spawned before the session was closed may
    /// enter only after its session's calls were cancelled, and must not run on either.
    ended: VecDeque<Arc<str>>,
}

/// One session's calls: cancelled together when the session is deleted.
struct Entry {
    token: CancellationToken,
    calls: usize,
}

impl SessionCalls {
    fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A call of session `id` starts: its token (a child of `parent`) is cancelled when the
    /// session is deleted, or at once if it already was.
    pub(crate) fn enter(self: &Arc<Self>, id: &str, parent: &CancellationToken) -> SessionCall {
        let mut book = self.book();
        let ended = book.ended.iter().any(|e| **e == *id);
        // The key already held, if any: one copy of the id per session, not per call.
        let id = match book.running.get_key_value(id) {
            Some((held, _)) => held.clone(),
            None => Arc::from(id),
        };
        let entry = book.running.entry(id.clone()).or_insert_with(|| Entry {
            token: parent.child_token(),
            calls: 0,
        });
        entry.calls += 1;
        if ended {
            entry.token.cancel();
        }
        SessionCall {
            token: entry.token.clone(),
            calls: self.clone(),
            id,
        }
    }

    /// Session `id` was closed through `handle`: once its worker has ended (rmcp's close only
    /// queues the end, and the worker would still deliver the answer of a call stopped before),
    /// stop its calls, and any that start late.
    pub(crate) async fn end(&self, id: &str, handle: &LocalSessionHandle) {
        // Queued behind the close, this is never handled: it fails once the worker has ended.
        let ended = handle.close_standalone_sse_stream(None);
        if tokio::time::timeout(WORKER_END_WAIT, ended).await.is_err() {
            tracing::warn!("a deleted session's worker did not end in time; stopping its calls");
        }
        self.cancel(id);
    }

    /// Stop the calls of session `id`, and any that start later.
    fn cancel(&self, id: &str) {
        let mut book = self.book();
        if let Some(entry) = book.running.get(id) {
            entry.token.cancel();
        }
        if book.ended.len() == ENDED_KEPT {
            book.ended.pop_front();
        }
        book.ended.push_back(Arc::from(id));
    }

    fn leave(&self, id: &str) {
        let mut book = self.book();
        if let Some(entry) = book.running.get_mut(id) {
            entry.calls -= 1;
            if entry.calls == 0 {
                book.running.remove(id);
            }
        }
    }
}

/// One running call of a session; leaves its session's entry when dropped.
pub(crate) struct SessionCall {
    token: CancellationToken,
    calls: Arc<SessionCalls>,
    id: Arc<str>,
}

impl SessionCall {
    /// Cancelled when the call's session is deleted (or its parent is).
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for SessionCall {
    fn drop(&mut self) {
        self.calls.leave(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleting_a_session_cancels_its_calls_only() {
        let (calls, parent) = (Arc::new(SessionCalls::default()), CancellationToken::new());
        let a1 = calls.enter("a", &parent);
        let a2 = calls.enter("a", &parent);
        let b = calls.enter("b", &parent);
        calls.cancel("a");
        assert!(a1.token().is_cancelled() && a2.token().is_cancelled());
        assert!(!b.token().is_cancelled());
        drop((a1, a2));
        assert!(!calls.book().running.contains_key("a"));
        // A call that enters after its session was deleted is cancelled from the start.
        assert!(calls.enter("a", &parent).token().is_cancelled());
        drop(b);
        assert!(calls.book().running.is_empty());
    }

    #[test]
    fn the_daemon_stopping_cancels_every_session_call() {
        let (calls, parent) = (Arc::new(SessionCalls::default()), CancellationToken::new());
        let a = calls.enter("a", &parent);
        parent.cancel();
        assert!(a.token().is_cancelled());
    }

    #[test]
    fn only_the_last_deleted_sessions_are_remembered() {
        let calls = SessionCalls::default();
        for i in 0..ENDED_KEPT * 2 {
            calls.cancel(&i.to_string());
        }
        assert_eq!(calls.book().ended.len(), ENDED_KEPT);
    }
}
