//! The queue's side in a fleet: questions listed from every daemon, answers that wake a call
//! waiting here, and what the other daemons say on the [`Board`].

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::super::board::{Board, Notice};
use super::super::live::{Live, LiveEvent};
use super::{Questions, Verdict};

impl Questions {
    /// From now on, put every question on the fleet's `board` too.
    pub fn share(&self, board: Arc<dyn Board>) {
        let _ = self.board.set(board);
    }

    /// The questions waiting now, this daemon's and (in a fleet) the other daemons', oldest first
    /// on each, as the console shows them.
    pub async fn listed(&self) -> Vec<Value> {
        let mut listed: Vec<Value> = self
            .waiting()
            .iter()
            .filter_map(|q| serde_json::to_value(q).ok())
            .collect();
        if let Some(board) = self.board.get() {
            match board.elsewhere().await {
                Ok(more) => listed.extend(more),
                Err(e) => tracing::warn!("the fleet's questions could not be read: {e}"),
            }
        }
        listed
    }

    /// Tell the fleet whether someone at this daemon's console can answer (and how the daemon
    /// is, `health`), and hear whether someone at another's can: a question asked here may then
    /// wait for them.
    pub async fn attend_fleet(&self, health: &Value) {
        let Some(board) = self.board.get() else {
            return;
        };
        let here = if self.is_open() {
            i64::try_from(self.here_for().as_millis()).unwrap_or(i64::MAX)
        } else {
            0
        };
        match board.attend(here, health).await {
            Ok(ms) => {
                let until = (ms > 0).then(|| {
                    Instant::now() + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
                });
                *self
                    .elsewhere
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = until;
            }
            Err(e) => tracing::debug!("the fleet's console attendance could not be shared: {e}"),
        }
    }

    /// Wake the call waiting here on question `id` with the fleet's `verdict`, if one still does.
    pub(super) fn deliver(&self, id: &str, verdict: Verdict) {
        let found = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        if let Some(w) = found {
            self.remember(id);
            let _ = w.reply.send(verdict);
        }
    }

    fn is_here(&self, id: &str) -> bool {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(id)
    }

    /// What another daemon said about a question: a call waiting here on it wakes with its
    /// answer, and this daemon's console hears of questions put and ended elsewhere.
    pub async fn heard(&self, notice: Notice, live: &Live) {
        let Some(board) = self.board.get() else {
            return;
        };
        match notice {
            Notice::Asked { id, .. } if !self.is_here(&id) => match board.find(&id).await {
                Ok(Some(question)) => live.publish(|| LiveEvent::Posted(Arc::new(question))),
                Ok(None) => {}
                Err(e) => tracing::warn!("the fleet's question {id} could not be read: {e}"),
            },
            Notice::Asked { .. } => {}
            Notice::Ended { id, .. } => match board.verdict(&id).await {
                Ok(Some(Some(verdict))) if self.is_here(&id) => self.deliver(&id, verdict),
                Ok(Some(ended)) if !self.is_here(&id) => live.publish(|| LiveEvent::Answered {
                    id,
                    answer: match &ended {
                        Some(v) if v.approve => "approved",
                        Some(_) => "declined",
                        None => "unanswered",
                    },
                    operator: ended.map(|v| v.operator),
                }),
                Ok(_) => {}
                Err(e) => tracing::warn!("the fleet's answer to {id} could not be read: {e}"),
            },
            Notice::Missed => {
                for question in self.waiting() {
                    if let Ok(Some(Some(verdict))) = board.verdict(&question.id).await {
                        self.deliver(&question.id, verdict);
                    }
                }
            }
            // The live calls' notices: see `Live::heard`.
            Notice::Cancel { .. } | Notice::Calls { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests;
