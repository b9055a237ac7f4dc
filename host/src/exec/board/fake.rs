//! A fleet's board in memory, with the store's semantics: the first answer for the input's digest
//! wins, every change is announced to every daemon, a daemon's calls are shown to the others and a
//! cancel reaches the daemon that shows the call; the store can be taken down.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{AnswerError, Board, BoardError, Notice, Question, Verdict};

pub(crate) struct Row {
    daemon: String,
    shown: Value,
    digest: String,
    answer: Option<Option<Verdict>>,
}

/// The store's table and channel.
#[derive(Default)]
pub(crate) struct Store {
    pub(crate) rows: Mutex<HashMap<String, Row>>,
    pub(crate) listeners: Mutex<Vec<mpsc::UnboundedSender<Notice>>>,
    pub(crate) down: AtomicBool,
    /// Until when someone is at each daemon's console.
    presence: Mutex<HashMap<String, std::time::Instant>>,
    /// What each daemon said of its health.
    pub(crate) health: Mutex<HashMap<String, Value>>,
    /// What each daemon shows of its calls.
    calls: Mutex<HashMap<String, Value>>,
}

impl Store {
    pub(crate) fn announce(&self, notice: &Notice) {
        for l in self.listeners.lock().unwrap().iter() {
            let _ = l.send(notice.clone());
        }
    }
}

/// One daemon's view of the store.
pub(crate) struct Fake {
    pub(crate) store: Arc<Store>,
    pub(crate) daemon: String,
}

impl Fake {
    fn up(&self) -> Result<(), BoardError> {
        if self.store.down.load(Ordering::Acquire) {
            return Err(BoardError("the store is down".into()));
        }
        Ok(())
    }

    pub(crate) fn end(&self, id: &str, answer: Option<Verdict>) -> bool {
        let mut rows = self.store.rows.lock().unwrap();
        let Some(row) = rows.get_mut(id).filter(|r| r.answer.is_none()) else {
            return false;
        };
        row.answer = Some(answer);
        let notice = Notice::Ended {
            daemon: row.daemon.clone(),
            id: id.to_owned(),
        };
        drop(rows);
        self.store.announce(&notice);
        true
    }
}

#[async_trait]
impl Board for Fake {
    async fn post(&self, question: &Question) -> Result<(), BoardError> {
        self.up()?;
        let mut shown = serde_json::to_value(question).unwrap();
        shown["daemon"] = json!(self.daemon);
        self.store.rows.lock().unwrap().insert(
            question.id.clone(),
            Row {
                daemon: self.daemon.clone(),
                shown,
                digest: question.input_sha256.clone(),
                answer: None,
            },
        );
        self.store.announce(&Notice::Asked {
            daemon: self.daemon.clone(),
            id: question.id.clone(),
        });
        Ok(())
    }

    async fn withdraw(&self, id: &str) -> Result<(), BoardError> {
        self.up()?;
        self.end(id, None);
        Ok(())
    }

    async fn elsewhere(&self) -> Result<Vec<Value>, BoardError> {
        self.up()?;
        let rows = self.store.rows.lock().unwrap();
        Ok(rows
            .values()
            .filter(|r| r.answer.is_none() && r.daemon != self.daemon)
            .map(|r| r.shown.clone())
            .collect())
    }

    async fn find(&self, id: &str) -> Result<Option<Value>, BoardError> {
        self.up()?;
        let rows = self.store.rows.lock().unwrap();
        Ok(rows
            .get(id)
            .filter(|r| r.answer.is_none())
            .map(|r| r.shown.clone()))
    }

    async fn answer(
        &self,
        id: &str,
        input_sha256: &str,
        verdict: &Verdict,
    ) -> Result<Result<(), AnswerError>, BoardError> {
        self.up()?;
        let open = {
            let rows = self.store.rows.lock().unwrap();
            match rows.get(id) {
                None => return Ok(Err(AnswerError::Unknown(id.to_owned()))),
                Some(r) if r.answer.is_some() => {
                    return Ok(Err(AnswerError::Ended(id.to_owned())));
                }
                Some(r) => r.digest == input_sha256,
            }
        };
        if !open {
            return Ok(Err(AnswerError::Mismatched));
        }
        Ok(if self.end(id, Some(verdict.clone())) {
            Ok(())
        } else {
            Err(AnswerError::Ended(id.to_owned()))
        })
    }

    async fn verdict(&self, id: &str) -> Result<Option<Option<Verdict>>, BoardError> {
        self.up()?;
        let rows = self.store.rows.lock().unwrap();
        Ok(rows.get(id).and_then(|r| r.answer.clone()))
    }

    async fn attend(&self, here_ms: i64, health: &Value) -> Result<i64, BoardError> {
        self.up()?;
        let now = std::time::Instant::now();
        let mut presence = self.store.presence.lock().unwrap();
        let here = Duration::from_millis(u64::try_from(here_ms).unwrap());
        presence.insert(self.daemon.clone(), now + here);
        let mut said = self.store.health.lock().unwrap();
        said.insert(self.daemon.clone(), health.clone());
        let longest = presence
            .iter()
            .filter(|(d, _)| **d != self.daemon)
            .map(|(_, until)| until.saturating_duration_since(now))
            .max()
            .unwrap_or_default();
        Ok(i64::try_from(longest.as_millis()).unwrap())
    }

    async fn daemons(&self) -> Result<Vec<Value>, BoardError> {
        self.up()?;
        let said = self.store.health.lock().unwrap();
        let mut all: Vec<_> = said
            .iter()
            .map(|(d, h)| json!({"daemon": d, "health": h, "said_ms_ago": 0}))
            .collect();
        all.sort_by(|a, b| a["daemon"].as_str().cmp(&b["daemon"].as_str()));
        Ok(all)
    }

    fn daemon(&self) -> &str {
        &self.daemon
    }

    async fn show_calls(&self, calls: &Value) -> Result<(), BoardError> {
        self.up()?;
        let mut shown = self.store.calls.lock().unwrap();
        shown.insert(self.daemon.clone(), calls.clone());
        drop(shown);
        self.store.announce(&Notice::Calls {
            daemon: self.daemon.clone(),
        });
        Ok(())
    }

    async fn calls_elsewhere(&self) -> Result<Vec<(String, Value)>, BoardError> {
        self.up()?;
        let shown = self.store.calls.lock().unwrap();
        let others = shown.iter().filter(|(d, _)| **d != self.daemon);
        Ok(others.map(|(d, c)| (d.clone(), c.clone())).collect())
    }

    async fn cancel_elsewhere(
        &self,
        id: &str,
        operator: &str,
    ) -> Result<Option<String>, BoardError> {
        self.up()?;
        let shown = self.store.calls.lock().unwrap();
        let owner = shown.iter().find(|(d, c)| {
            **d != self.daemon
                && c["running"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|call| call["call_id"] == id))
        });
        let Some((daemon, _)) = owner else {
            return Ok(None);
        };
        self.store.announce(&Notice::Cancel {
            daemon: daemon.clone(),
            id: id.to_owned(),
            operator: operator.to_owned(),
        });
        Ok(Some(daemon.clone()))
    }
}
