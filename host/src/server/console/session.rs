//! Who is signed in to the console: sessions behind an `HttpOnly`, `SameSite=Strict` cookie, each
//! with its own anti-CSRF token, and the one-time sign-in link the daemon prints on loopback
//! without `[auth]` or mints for an operator's token. Alone, a daemon keeps them in memory: a
//! restart signs everyone out, which is what an operator expects of a daemon they restarted. In a
//! fleet (a PostgreSQL `[state]`) they live in the store, so every daemon behind the balancer
//! honours a session, signing out ends it on all, and a link is spent once fleet-wide.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};

use crate::state::{SignIns, StateError};

/// The cookie's name. `__Host-` would pin it to HTTPS, which a loopback console does not have.
pub(super) const COOKIE: &str = "toolhost_console";
/// How long a session lasts.
pub(super) const LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Sessions kept at most in memory; the oldest goes first.
const MAX_SESSIONS: usize = 256;

/// A signed-in operator.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Who, as the audit log names them.
    pub(crate) operator: String,
    /// What every action made with this session's cookie must echo in `X-CSRF-Token`.
    pub(crate) csrf: String,
}

/// Sessions, and the sign-in link's token.
pub(crate) struct Sessions {
    /// Finds the fleet's sessions: `Some` once a shared store is open.
    find_fleet: Box<dyn Fn() -> Option<Arc<dyn SignIns>> + Send + Sync>,
    /// The fleet's sessions, once found in the store.
    fleet: OnceLock<Arc<dyn SignIns>>,
    /// A daemon's own: by the SHA-256 of the cookie's value (a memory dump names no usable
    /// cookie), with who and until when.
    by_cookie: Mutex<HashMap<[u8; 32], (String, Instant)>>,
    /// The SHA-256 of the one-time sign-in token while it is unused, and who its session is for.
    link: Mutex<Option<([u8; 32], String)>>,
}

impl Sessions {
    /// Sessions kept in the fleet's store once `find_fleet` finds it, in memory until then.
    pub(crate) fn new(
        find_fleet: impl Fn() -> Option<Arc<dyn SignIns>> + Send + Sync + 'static,
    ) -> Self {
        Self {
            find_fleet: Box::new(find_fleet),
            fleet: OnceLock::new(),
            by_cookie: Mutex::default(),
            link: Mutex::default(),
        }
    }

    /// The fleet's sessions, when the store is shared and open.
    fn fleet(&self) -> Option<&Arc<dyn SignIns>> {
        if let Some(fleet) = self.fleet.get() {
            return Some(fleet);
        }
        let found = (self.find_fleet)()?;
        Some(self.fleet.get_or_init(|| found))
    }

    /// A new one-time sign-in token for `operator`, replacing this daemon's unused one.
    pub(crate) async fn new_link(&self, operator: &str) -> Result<String, StateError> {
        let token = random_hex();
        if let Some(fleet) = self.fleet() {
            fleet
                .put_link(&hex(&sha256(&token)), operator, lifetime_ms())
                .await?;
            self.link
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
        } else {
            *self.link.lock().unwrap_or_else(PoisonError::into_inner) =
                Some((sha256(&token), operator.to_owned()));
        }
        Ok(token)
    }

    /// Spend the sign-in token: a new session for the operator it was made for, as its cookie
    /// value.
    pub(crate) async fn sign_in_with_link(
        &self,
        token: &str,
    ) -> Result<Option<String>, StateError> {
        let local = {
            let mut link = self.link.lock().unwrap_or_else(PoisonError::into_inner);
            match link.as_ref() {
                Some((expected, _)) if constant_time_eq(&sha256(token), expected) => {
                    link.take().map(|(_, operator)| operator)
                }
                _ => None,
            }
        };
        let operator = match (local, self.fleet()) {
            (Some(operator), _) => Some(operator),
            (None, Some(fleet)) => fleet.spend_link(&hex(&sha256(token))).await?,
            (None, None) => None,
        };
        match operator {
            Some(operator) => self.open(operator).await.map(Some),
            None => Ok(None),
        }
    }

    /// A new session for `operator`, as its cookie value.
    pub(crate) async fn open(&self, operator: String) -> Result<String, StateError> {
        let cookie = random_hex();
        if let Some(fleet) = self.fleet() {
            fleet
                .open(&hex(&sha256(&cookie)), &operator, lifetime_ms())
                .await?;
            return Ok(cookie);
        }
        let mut sessions = self
            .by_cookie
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        sessions.retain(|_, (_, expires)| *expires > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, (_, expires))| *expires)
                .map(|(k, _)| *k)
        {
            sessions.remove(&oldest);
        }
        sessions.insert(sha256(&cookie), (operator, now + LIFETIME));
        Ok(cookie)
    }

    /// The session a request's cookie names, if it is valid.
    pub(crate) async fn find(&self, headers: &HeaderMap) -> Result<Option<Session>, StateError> {
        let Some(cookie) = cookie(headers) else {
            return Ok(None);
        };
        // Derived from the cookie, so that no store keeps it: unguessable without the cookie,
        // and the cookie cannot be recovered from it.
        let csrf: [u8; 32] = Sha256::digest(format!("toolhost console csrf\0{cookie}")).into();
        let csrf = hex(&csrf);
        let operator = self.operator(&sha256(&cookie)).await?;
        Ok(operator.map(|operator| Session { operator, csrf }))
    }

    /// Who the session `key` is, if it is signed in and unexpired. Once the fleet's store is
    /// there, only its sessions count: one kept in memory before could not be signed out on the
    /// other daemons.
    async fn operator(&self, key: &[u8; 32]) -> Result<Option<String>, StateError> {
        if let Some(fleet) = self.fleet() {
            return fleet.find(&hex(key)).await;
        }
        Ok(self
            .by_cookie
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .filter(|(_, expires)| *expires > Instant::now())
            .map(|(operator, _)| operator.clone()))
    }

    /// The key of the session a request's cookie names, if it is valid now: for a response that
    /// lasts (the event stream) to ask [`Self::is_live`] again.
    pub(crate) async fn key(&self, headers: &HeaderMap) -> Option<[u8; 32]> {
        let key = sha256(&cookie(headers)?);
        self.is_live(&key).await.then_some(key)
    }

    /// Whether the session `key` names is still signed in and unexpired (not, when the store
    /// does not answer).
    pub(crate) async fn is_live(&self, key: &[u8; 32]) -> bool {
        matches!(self.operator(key).await, Ok(Some(_)))
    }

    /// End the session a request's cookie names, on every daemon.
    pub(crate) async fn close(&self, headers: &HeaderMap) -> Result<(), StateError> {
        let Some(cookie) = cookie(headers) else {
            return Ok(());
        };
        let key = sha256(&cookie);
        self.by_cookie
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        match self.fleet() {
            Some(fleet) => fleet.close(&hex(&key)).await,
            None => Ok(()),
        }
    }
}

fn lifetime_ms() -> i64 {
    i64::try_from(LIFETIME.as_millis()).unwrap_or(i64::MAX)
}

fn hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
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
mod tests;
