//! Which caller each HTTP MCP session belongs to. A session opened by an identified caller (an
//! OAuth token: its issuer and subject) answers that caller only. Anyone else who names it, by any
//! method (POST, GET, DELETE), is served as if they had named a session that never existed: the
//! request goes on to rmcp with an id no session can have, so the answer is exactly the one for an
//! unknown session and an id cannot be probed. Sessions opened without an identity (HTTP without
//! auth, the static token) belong to nobody and stay open to every caller, as before.
//!
//! It decides nothing else: the sessions themselves are rmcp's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use toolhost_gate::caller::Caller;

/// The session header.
const SESSION: &str = "mcp-session-id";
/// The id a request naming another caller's session goes on with. rmcp's ids are UUIDs, so no
/// session ever has this one.
const FOREIGN: &str = "-";
/// Owners kept before the first sweep of ended sessions; later sweeps wait for twice as many as the
/// last one kept.
const FIRST_SWEEP: usize = 64;

/// Who opened a session: the token's issuer and subject.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    issuer: String,
    subject: String,
}

impl Identity {
    /// The identity a session is bound to; `None` for the static token, which names no person.
    fn of(caller: &Caller) -> Option<Self> {
        (*caller != Caller::static_token()).then(|| Self {
            issuer: caller.issuer.clone(),
            subject: caller.subject.clone(),
        })
    }
}

/// The owners of the live sessions that have one.
pub(crate) struct Owners {
    sessions: Arc<LocalSessionManager>,
    owners: Mutex<Book>,
}

/// The owners by session id, and when to sweep next.
#[derive(Default)]
struct Book {
    by_session: HashMap<String, Identity>,
    sweep_at: usize,
}

impl Owners {
    /// The owners of `sessions`' sessions.
    pub(crate) fn new(sessions: Arc<LocalSessionManager>) -> Self {
        Self {
            sessions,
            owners: Mutex::new(Book {
                by_session: HashMap::new(),
                sweep_at: FIRST_SWEEP,
            }),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `caller` may use session `id`: anyone for a session without an owner, else its owner.
    fn admits(&self, id: &str, caller: Option<&Identity>) -> bool {
        match self.book().by_session.get(id) {
            None => true,
            Some(owner) => caller == Some(owner),
        }
    }

    /// Bind the new session `id` to `owner`, sweeping out sessions that have ended now and then.
    async fn bind(&self, id: String, owner: Identity) {
        let sweep = {
            let mut book = self.book();
            book.by_session.insert(id, owner);
            book.by_session.len() >= book.sweep_at
        };
        if sweep {
            let live = self.sessions.sessions.read().await;
            let mut book = self.book();
            book.by_session
                .retain(|id, _| live.contains_key(id.as_str()));
            book.sweep_at = (book.by_session.len() * 2).max(FIRST_SWEEP);
        }
    }

    fn forget(&self, id: &str) {
        self.book().by_session.remove(id);
    }
}

/// The session id a request names, if it names one; several `Mcp-Session-Id` headers count as a
/// foreign session (`Err`), whoever sends them. A value that is not text names none, for rmcp too.
fn named_session(headers: &HeaderMap) -> Result<Option<String>, ()> {
    let mut values = headers.get_all(SESSION).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(());
    }
    Ok(first.and_then(|v| v.to_str().ok()).map(str::to_owned))
}

/// Middleware around `/mcp`: see the module documentation.
pub(crate) async fn owned(
    State(owners): State<Arc<Owners>>,
    mut request: Request,
    next: Next,
) -> Response {
    let caller = request
        .extensions()
        .get::<Arc<Caller>>()
        .and_then(|c| Identity::of(c));
    match named_session(request.headers()) {
        Ok(Some(id)) if owners.admits(&id, caller.as_ref()) => {
            let delete = request.method() == Method::DELETE;
            let response = next.run(request).await;
            if delete && response.status().is_success() {
                owners.forget(&id);
            }
            response
        }
        Ok(Some(_)) | Err(()) => {
            request
                .headers_mut()
                .insert(SESSION, HeaderValue::from_static(FOREIGN));
            next.run(request).await
        }
        Ok(None) => {
            let response = next.run(request).await;
            let opened = response
                .headers()
                .get(SESSION)
                .and_then(|v| v.to_str().ok());
            if let (Some(owner), Some(id)) = (caller, opened) {
                owners.bind(id.to_owned(), owner).await;
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(issuer: &str, subject: &str) -> Caller {
        Caller {
            issuer: issuer.into(),
            subject: subject.into(),
            ..Caller::default()
        }
    }

    #[tokio::test]
    async fn a_bound_session_admits_its_owner_only() {
        let owners = Owners::new(Arc::new(LocalSessionManager::default()));
        let alice = Identity::of(&caller("https://idp", "alice")).unwrap();
        owners.bind("s1".into(), alice.clone()).await;
        assert!(owners.admits("s1", Some(&alice)));
        let same_name_elsewhere = Identity::of(&caller("https://other", "alice")).unwrap();
        assert!(!owners.admits("s1", Some(&same_name_elsewhere)));
        assert!(!owners.admits(
            "s1",
            Some(&Identity::of(&caller("https://idp", "bob")).unwrap())
        ));
        assert!(!owners.admits("s1", None));
        // A session nobody owns admits everyone.
        assert!(owners.admits("s2", None));
        owners.forget("s1");
        assert!(owners.admits("s1", None));
    }

    #[test]
    fn the_static_token_binds_no_session() {
        assert_eq!(Identity::of(&Caller::static_token()), None);
    }

    #[tokio::test]
    async fn ended_sessions_are_swept_out() {
        let owners = Owners::new(Arc::new(LocalSessionManager::default()));
        let alice = Identity::of(&caller("https://idp", "alice")).unwrap();
        for i in 0..FIRST_SWEEP * 3 {
            owners.bind(format!("s{i}"), alice.clone()).await;
        }
        // None of these sessions lives in rmcp's manager: each sweep drops them all.
        assert!(owners.book().by_session.len() < FIRST_SWEEP);
    }

    #[test]
    fn two_session_headers_name_a_foreign_session() {
        let mut headers = HeaderMap::new();
        headers.append(SESSION, HeaderValue::from_static("a"));
        assert_eq!(named_session(&headers), Ok(Some("a".into())));
        headers.append(SESSION, HeaderValue::from_static("b"));
        assert_eq!(named_session(&headers), Err(()));
    }
}
