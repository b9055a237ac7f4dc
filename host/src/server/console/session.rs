//! Who is signed in to the console: sessions behind an `HttpOnly`, `SameSite=Strict` cookie, each
//! with its own anti-CSRF token, and the one-time sign-in link the daemon prints on loopback
//! without `[auth]`. Sessions live in memory: a restart signs everyone out, which is what an
//! operator expects of a daemon they restarted.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};

/// The cookie's name. `__Host-` would pin it to HTTPS, which a loopback console does not have.
pub(super) const COOKIE: &str = "toolhost_console";
/// How long a session lasts.
pub(super) const LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Sessions kept at most; the oldest goes first.
const MAX_SESSIONS: usize = 256;

/// A signed-in operator.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Who, as the audit log names them.
    pub(crate) operator: String,
    /// What every action made with this session's cookie must echo in `X-CSRF-Token`.
    pub(crate) csrf: String,
    expires: Instant,
}

/// Sessions, and the sign-in link's token.
#[derive(Default)]
pub(crate) struct Sessions {
    /// By the SHA-256 of the cookie's value: a memory dump names no usable cookie.
    by_cookie: Mutex<HashMap<[u8; 32], Session>>,
    /// The SHA-256 of the one-time sign-in token while it is unused, and who its session is for.
    link: Mutex<Option<([u8; 32], String)>>,
}

impl Sessions {
    /// A new one-time sign-in token for `operator`, replacing any unused one.
    pub(crate) fn new_link(&self, operator: &str) -> String {
        let token = random_hex();
        *self.link.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((sha256(&token), operator.to_owned()));
        token
    }

    /// Spend the sign-in token: a new session for the operator it was made for, as its cookie
    /// value.
    pub(crate) fn sign_in_with_link(&self, token: &str) -> Option<String> {
        let mut link = self.link.lock().unwrap_or_else(PoisonError::into_inner);
        let (expected, _) = link.as_ref()?;
        if !constant_time_eq(&sha256(token), expected) {
            return None;
        }
        let (_, operator) = link.take()?;
        drop(link);
        Some(self.open(operator))
    }

    /// A new session for `operator`, as its cookie value.
    pub(crate) fn open(&self, operator: String) -> String {
        let cookie = random_hex();
        let session = Session {
            operator,
            csrf: random_hex(),
            expires: Instant::now() + LIFETIME,
        };
        let mut sessions = self
            .by_cookie
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        sessions.retain(|_, s| s.expires > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| *k)
        {
            sessions.remove(&oldest);
        }
        sessions.insert(sha256(&cookie), session);
        cookie
    }

    /// The session a request's cookie names, if it is valid.
    pub(crate) fn find(&self, headers: &HeaderMap) -> Option<Session> {
        let cookie = cookie(headers)?;
        let sessions = self
            .by_cookie
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        sessions
            .get(&sha256(&cookie))
            .filter(|s| s.expires > Instant::now())
            .cloned()
    }

    /// The key of the session a request's cookie names, if it is valid now: for a response that
    /// lasts (the event stream) to ask [`Self::is_live`] again.
    pub(crate) fn key(&self, headers: &HeaderMap) -> Option<[u8; 32]> {
        let key = sha256(&cookie(headers)?);
        self.is_live(&key).then_some(key)
    }

    /// Whether the session `key` names is still signed in and unexpired.
    pub(crate) fn is_live(&self, key: &[u8; 32]) -> bool {
        self.by_cookie
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .is_some_and(|s| s.expires > Instant::now())
    }

    /// End the session a request's cookie names.
    pub(crate) fn close(&self, headers: &HeaderMap) {
        if let Some(cookie) = cookie(headers) {
            self.by_cookie
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&sha256(&cookie));
        }
    }
}

/// The `Set-Cookie` value that holds `value`, or clears the cookie when `None`.
pub(super) fn set_cookie(value: Option<&str>) -> String {
    match value {
        Some(v) => format!(
            "{COOKIE}={v}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}",
            LIFETIME.as_secs()
        ),
        None => format!("{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0"),
    }
}

/// The console cookie's value in a request, if it carries exactly one.
fn cookie(headers: &HeaderMap) -> Option<String> {
    let mut found = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned());
    let first = found.next()?;
    // Two cookies of our name: one may have been planted by a sibling site; trust neither.
    found.next().is_none().then_some(first)
}

/// Whether `given` is `expected`, without an early exit.
pub(super) fn same_secret(given: &str, expected: &str) -> bool {
    constant_time_eq(&sha256(given), &sha256(expected))
}

fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 256 random bits, hex.
fn random_hex() -> String {
    crate::random::hex::<32>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_cookie(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn the_link_signs_in_once() {
        let sessions = Sessions::default();
        let token = sessions.new_link("local operator");
        assert!(sessions.sign_in_with_link("wrong").is_none());
        let cookie = sessions.sign_in_with_link(&token).expect("first use");
        assert!(sessions.sign_in_with_link(&token).is_none(), "replayed");
        let found = sessions
            .find(&with_cookie(&format!("a=b; {COOKIE}={cookie}")))
            .unwrap();
        assert_eq!(found.operator, "local operator");
        assert_eq!(found.csrf.len(), 64);
    }

    #[test]
    fn two_cookies_of_the_name_or_a_closed_session_find_nothing() {
        let sessions = Sessions::default();
        let cookie = sessions.open("op".into());
        let doubled = format!("{COOKIE}={cookie}; {COOKIE}=planted");
        assert!(sessions.find(&with_cookie(&doubled)).is_none());
        let one = with_cookie(&format!("{COOKIE}={cookie}"));
        assert!(sessions.find(&one).is_some());
        sessions.close(&one);
        assert!(sessions.find(&one).is_none());
    }
}
