//! What runs now and what just ended, for the console: every call the pipeline admitted is listed
//! here until its end record is written (with the token that stops it, so an operator can cancel
//! it), the last ended calls are kept, and each change is published to whoever follows. Publishing
//! costs nothing while nobody follows: events are built only for subscribers.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::board::Board;
use super::question::Question;
use crate::audit::AuditRecord;
use toolhost_gate::caller::Caller;

/// Ended calls kept for the console's first view.
pub const RECENT: usize = 200;
/// Events a slow follower may fall behind by before it is told to reload.
const BACKLOG: usize = 1024;

/// A change the console shows.
#[derive(Debug, Clone)]
pub enum LiveEvent {
    /// A question waits for an operator.
    Question(Arc<Question>),
    /// A question waits on another daemon of the fleet, as its console shows it.
    Posted(Arc<serde_json::Value>),
    /// A question ended: `approved`, `declined` or `unanswered`.
    Answered {
        /// The question's id.
        id: String,
        /// How it ended.
        answer: &'static str,
        /// Who answered, when someone did.
        operator: Option<String>,
    },
    /// A call was admitted.
    Started(RunningView),
    /// A call ended; its end record.
    Ended(Arc<AuditRecord>),
    /// Another daemon of the fleet started or ended calls: look at the lists again.
    Elsewhere,
}

/// A running call as the console lists it.
#[derive(Debug, Clone, Serialize)]
pub struct RunningView {
    /// Its audit id.
    pub call_id: String,
    /// The tool, as the caller named it.
    pub tool: String,
    /// Who called.
    pub caller: String,
    /// The front end.
    pub origin: &'static str,
    /// The call or batch it is part of: a script's nested calls name the script's call.
    pub parent_id: Option<String>,
    /// When it was admitted.
    pub started_at: DateTime<Utc>,
    /// Whether it waits for an approval.
    pub waiting: bool,
}

struct Running {
    tool: String,
    caller: Option<Arc<Caller>>,
    origin: &'static str,
    parent_id: Option<String>,
    started_at: DateTime<Utc>,
    waiting: bool,
    stop: CancellationToken,
    cancelled_by: Arc<OnceLock<String>>,
}

impl Running {
    fn view(&self, call_id: &str) -> RunningView {
        RunningView {
            call_id: call_id.to_owned(),
            tool: self.tool.clone(),
            caller: caller_name(self.caller.as_deref()),
            origin: self.origin,
            parent_id: self.parent_id.clone(),
            started_at: self.started_at,
            waiting: self.waiting,
        }
    }
}

/// How the console names a caller: the token's subject and issuer, or, for a call that came
/// without a token (stdio, the CLI, HTTP without authentication), that it had none.
pub fn caller_name(caller: Option<&Caller>) -> String {
    caller.map_or_else(|| "(no token)".to_owned(), ToString::to_string)
}

/// Calls running and recently ended, and their followers.
pub struct Live {
    running: Mutex<HashMap<String, Running>>,
    recent: Mutex<VecDeque<Arc<AuditRecord>>>,
    events: broadcast::Sender<LiveEvent>,
    /// Counts every change, so that the fleet is shown the lists only when they changed.
    changes: AtomicU64,
    /// The value of `changes` the fleet was last shown.
    shown: AtomicU64,
    /// The fleet's board, when the daemon is one of a fleet.
    board: OnceLock<Arc<dyn Board>>,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            running: Mutex::new(HashMap::new()),
            recent: Mutex::new(VecDeque::with_capacity(RECENT)),
            events: broadcast::channel(BACKLOG).0,
            changes: AtomicU64::new(0),
            shown: AtomicU64::new(u64::MAX),
            board: OnceLock::new(),
        }
    }
}

/// A call's end record as the console shows it: without the input unless the audit log keeps
/// inputs.
pub fn as_written(record: &AuditRecord, includes_input: bool) -> serde_json::Value {
    let mut value = serde_json::to_value(record).unwrap_or(serde_json::Value::Null);
    if !includes_input && let Some(o) = value.as_object_mut() {
        o.remove("input");
    }
    value
}

/// Why a call could not be cancelled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("call {0} is not running")]
pub struct NotRunning(pub String);

impl Live {
    /// Follow every change from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        self.events.subscribe()
    }

    /// Send the event `make` builds, if anyone follows.
    pub(super) fn publish(&self, make: impl FnOnce() -> LiveEvent) {
        if self.events.receiver_count() > 0 {
            let _ = self.events.send(make());
        }
    }

    /// The calls running now, oldest first.
    pub fn running(&self) -> Vec<RunningView> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let mut list: Vec<_> = running.iter().map(|(id, r)| r.view(id)).collect();
        list.sort_by_key(|r| r.started_at);
        list
    }

    /// The last ended calls, newest first.
    pub fn recent(&self) -> Vec<Arc<AuditRecord>> {
        let recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.iter().rev().cloned().collect()
    }

    /// The end record of a recent call.
    pub fn find(&self, call_id: &str) -> Option<Arc<AuditRecord>> {
        let recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.iter().find(|r| r.call_id == call_id).cloned()
    }

    /// Stop a running call, on `operator`'s behalf.
    pub fn cancel(&self, call_id: &str, operator: &str) -> Result<(), NotRunning> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let r = running
            .get(call_id)
            .ok_or_else(|| NotRunning(call_id.to_owned()))?;
        let _ = r.cancelled_by.set(operator.to_owned());
        r.stop.cancel();
        Ok(())
    }

    /// List a call admitted now; the entry goes when the returned guard drops.
    pub(super) fn start(
        &self,
        call_id: &str,
        (tool, caller, origin, parent_id): (&str, Option<&Arc<Caller>>, &'static str, Option<&str>),
        stop: CancellationToken,
    ) -> Listed<'_> {
        let cancelled_by = Arc::new(OnceLock::new());
        let running = Running {
            tool: tool.to_owned(),
            caller: caller.cloned(),
            origin,
            parent_id: parent_id.map(str::to_owned),
            started_at: Utc::now(),
            waiting: false,
            stop,
            cancelled_by: cancelled_by.clone(),
        };
        self.publish(|| LiveEvent::Started(running.view(call_id)));
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(call_id.to_owned(), running);
        // After the insert: a snapshot taken in between would mark this state shown without it.
        self.changed();
        Listed {
            live: self,
            call_id: call_id.to_owned(),
            cancelled_by,
        }
    }

    /// Mark a call as waiting for an approval, or no longer.
    pub(super) fn set_waiting(&self, call_id: &str, waiting: bool) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = running.get_mut(call_id) {
            r.waiting = waiting;
        }
        self.changed();
    }

    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::Relaxed);
    }

    /// Keep and publish a call's end record.
    pub(super) fn end(&self, record: &AuditRecord) {
        let record = Arc::new(record.clone());
        {
            let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
            if recent.len() == RECENT {
                recent.pop_front();
            }
            recent.push_back(record.clone());
        }
        self.changed();
        self.publish(|| LiveEvent::Ended(record));
    }
}

/// A listed call: unlisted when dropped.
pub(super) struct Listed<'a> {
    live: &'a Live,
    call_id: String,
    cancelled_by: Arc<OnceLock<String>>,
}

impl Listed<'_> {
    /// The operator who cancelled the call, if one did.
    pub(super) fn cancelled_by(&self) -> Option<&str> {
        self.cancelled_by.get().map(String::as_str)
    }
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        self.live
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.call_id);
        self.live.changed();
    }
}

pub(super) mod fleet;
#[cfg(test)]
mod tests;
