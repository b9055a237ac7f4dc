use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use axum::http::HeaderValue;

use super::*;

fn with_cookie(value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::COOKIE, HeaderValue::from_str(value).unwrap());
    h
}

fn named(cookie: &str) -> HeaderMap {
    with_cookie(&format!("a=b; {COOKIE}={cookie}"))
}

fn alone() -> Sessions {
    Sessions::new(|| None)
}

#[tokio::test]
async fn the_link_signs_in_once() {
    let sessions = alone();
    let token = sessions.new_link("local operator").await.unwrap();
    assert!(sessions.sign_in_with_link("wrong").await.unwrap().is_none());
    let cookie = sessions.sign_in_with_link(&token).await.unwrap().unwrap();
    assert!(
        sessions.sign_in_with_link(&token).await.unwrap().is_none(),
        "replayed"
    );
    let found = sessions.find(&named(&cookie)).await.unwrap().unwrap();
    assert_eq!(found.operator, "local operator");
    assert_eq!(found.csrf.len(), 64);
    assert_ne!(found.csrf, cookie);
}

#[tokio::test]
async fn two_cookies_of_the_name_or_a_closed_session_find_nothing() {
    let sessions = alone();
    let cookie = sessions.open("op".into()).await.unwrap();
    let doubled = format!("{COOKIE}={cookie}; {COOKIE}=planted");
    assert!(
        sessions
            .find(&with_cookie(&doubled))
            .await
            .unwrap()
            .is_none()
    );
    let one = named(&cookie);
    assert!(sessions.find(&one).await.unwrap().is_some());
    sessions.close(&one).await.unwrap();
    assert!(sessions.find(&one).await.unwrap().is_none());
}

/// The store's semantics in memory: rows by key, a link per daemon, spent by one caller.
#[derive(Default)]
struct Table {
    sessions: Mutex<HashMap<String, String>>,
    links: Mutex<HashMap<String, (String, String)>>,
    down: AtomicBool,
}

struct Daemon(Arc<Table>, &'static str);

impl Daemon {
    fn up(&self) -> Result<(), StateError> {
        if self.0.down.load(Ordering::Relaxed) {
            return Err(StateError::Postgres("connection refused".into()));
        }
        Ok(())
    }
}

#[async_trait]
impl SignIns for Daemon {
    async fn open(&self, key: &str, operator: &str, _: i64) -> Result<(), StateError> {
        self.up()?;
        let mut rows = self.0.sessions.lock().unwrap();
        rows.insert(key.into(), operator.into());
        Ok(())
    }
    async fn find(&self, key: &str) -> Result<Option<String>, StateError> {
        self.up()?;
        Ok(self.0.sessions.lock().unwrap().get(key).cloned())
    }
    async fn close(&self, key: &str) -> Result<(), StateError> {
        self.up()?;
        self.0.sessions.lock().unwrap().remove(key);
        Ok(())
    }
    async fn put_link(&self, key: &str, operator: &str, _: i64) -> Result<(), StateError> {
        self.up()?;
        let mut links = self.0.links.lock().unwrap();
        links.retain(|_, (_, daemon)| daemon != self.1);
        links.insert(key.into(), (operator.into(), self.1.into()));
        Ok(())
    }
    async fn spend_link(&self, key: &str) -> Result<Option<String>, StateError> {
        self.up()?;
        Ok(self.0.links.lock().unwrap().remove(key).map(|(op, _)| op))
    }
}

fn fleet_of(table: &Arc<Table>, name: &'static str) -> Sessions {
    let table = table.clone();
    Sessions::new(move || Some(Arc::new(Daemon(table.clone(), name)) as Arc<dyn SignIns>))
}

#[tokio::test]
async fn in_a_fleet_a_link_and_a_session_hold_on_every_daemon() {
    let table = Arc::new(Table::default());
    let (a, b, c) = (
        fleet_of(&table, "a"),
        fleet_of(&table, "b"),
        fleet_of(&table, "c"),
    );
    let token = a.new_link("ops@example.com").await.unwrap();
    // The link is spent once, on whichever daemon the balancer chose.
    let cookie = b.sign_in_with_link(&token).await.unwrap().unwrap();
    assert!(a.sign_in_with_link(&token).await.unwrap().is_none());
    assert!(c.sign_in_with_link(&token).await.unwrap().is_none());
    // The session and its CSRF token are the same on every daemon; no store row holds either.
    let on_a = a.find(&named(&cookie)).await.unwrap().unwrap();
    let on_c = c.find(&named(&cookie)).await.unwrap().unwrap();
    assert_eq!(
        (on_a.operator.as_str(), &on_a.csrf),
        ("ops@example.com", &on_c.csrf)
    );
    let rows = format!("{:?}", table.sessions.lock().unwrap());
    assert!(
        !rows.contains(&cookie) && !rows.contains(&on_a.csrf),
        "{rows}"
    );
    // Signing out on one ends it on all, and what lasts on another daemon notices.
    let key = a.key(&named(&cookie)).await.unwrap();
    c.close(&named(&cookie)).await.unwrap();
    assert!(a.find(&named(&cookie)).await.unwrap().is_none());
    assert!(!a.is_live(&key).await);
}

#[tokio::test]
async fn a_new_link_replaces_the_daemons_unused_one_only() {
    let table = Arc::new(Table::default());
    let (a, b) = (fleet_of(&table, "a"), fleet_of(&table, "b"));
    let first = a.new_link("one").await.unwrap();
    let on_b = b.new_link("two").await.unwrap();
    let second = a.new_link("three").await.unwrap();
    assert!(
        b.sign_in_with_link(&first).await.unwrap().is_none(),
        "replaced"
    );
    assert!(a.sign_in_with_link(&on_b).await.unwrap().is_some());
    assert!(b.sign_in_with_link(&second).await.unwrap().is_some());
}

#[tokio::test]
async fn a_store_that_does_not_answer_signs_nobody_in() {
    let table = Arc::new(Table::default());
    let a = fleet_of(&table, "a");
    let cookie = a.open("op".into()).await.unwrap();
    let key = a.key(&named(&cookie)).await.unwrap();
    table.down.store(true, Ordering::Relaxed);
    assert!(a.find(&named(&cookie)).await.is_err());
    assert!(!a.is_live(&key).await);
    assert!(a.new_link("op").await.is_err());
    assert!(a.close(&named(&cookie)).await.is_err());
}
