//! The live calls of a fleet: each daemon shows its running and recent calls on the [`Board`]
//! when they changed (at most four times a second, off the calls' path), and every console lists
//! them all, each naming its daemon. A cancel for a call another daemon runs goes to that daemon
//! as a notice; the owner stops the call and its own audit record names the operator.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::{Live, LiveEvent, NotRunning, as_written};
use crate::exec::board::{Board, Notice};

/// Recent calls a daemon shows the fleet (the newest).
const SHOWN_RECENT: usize = 50;

/// A daemon that said nothing for this long is shown silent (each says how it is every second).
const SILENT_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// Where a cancelled call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancelled {
    /// Here: it is stopping.
    Here,
    /// On another daemon of the fleet, which was asked to stop it.
    Elsewhere(String),
}

/// Every daemon's calls, as the console lists them.
#[derive(Debug, Default)]
pub struct Listed {
    /// Calls running now, oldest first on each daemon.
    pub running: Vec<Value>,
    /// Calls ended lately, newest first on each daemon.
    pub recent: Vec<Value>,
}

impl Live {
    /// From now on, show this daemon's calls to the fleet's `board`.
    pub fn share(&self, board: Arc<dyn Board>) {
        let _ = self.board.set(board);
    }

    /// This daemon's name in its fleet, if it is in one.
    pub fn daemon(&self) -> Option<&str> {
        self.board.get().map(|b| b.daemon())
    }

    /// Show the fleet this daemon's calls, if they changed since they were last shown.
    pub async fn show_fleet(&self, includes_input: bool) {
        let Some(board) = self.board.get() else {
            return;
        };
        let changes = self.changes.load(Ordering::Relaxed);
        if self.shown.load(Ordering::Relaxed) == changes {
            return;
        }
        let recent: Vec<Value> = self
            .recent()
            .iter()
            .take(SHOWN_RECENT)
            .map(|r| as_written(r, includes_input))
            .collect();
        let calls = json!({ "running": self.running(), "recent": recent });
        match board.show_calls(&calls).await {
            Ok(()) => self.shown.store(changes, Ordering::Relaxed),
            Err(e) => tracing::debug!("the fleet could not be shown this daemon's calls: {e}"),
        }
    }

    /// Every daemon of the fleet with its last word on its health (`None` alone), and its state:
    /// `ready`, `loading` or `stopping` while it spoke within the last 5 s; then `stopped` if its
    /// last word was that it was stopping, else `silent` (killed, hung or cut off). The fleet is
    /// `ok` while no daemon is silent or loading; a silent one is forgotten after a minute.
    pub async fn fleet_health(&self) -> Option<Value> {
        let board = self.board.get()?;
        let mut daemons = match board.daemons().await {
            Ok(daemons) => daemons,
            Err(e) => return Some(json!({ "status": "unknown", "error": e.to_string() })),
        };
        let silent = i64::try_from(SILENT_AFTER.as_millis()).unwrap_or(i64::MAX);
        for d in &mut daemons {
            let alive = d["said_ms_ago"].as_i64().is_some_and(|ago| ago < silent);
            let stopping = d["health"]["stopping"] == true;
            let state = match (alive, stopping) {
                (true, true) => "stopping",
                (true, false) if d["health"]["ready"] == true => "ready",
                (true, false) => "loading",
                (false, true) => "stopped",
                (false, false) => "silent",
            };
            d["alive"] = json!(alive);
            d["state"] = json!(state);
        }
        let count = |state: &str| daemons.iter().filter(|d| d["state"] == state).count();
        let alive = daemons.iter().filter(|d| d["alive"] == true).count();
        let ready = count("ready");
        let status = if count("silent") + count("loading") == 0 {
            "ok"
        } else {
            "degraded"
        };
        Some(json!({
            "status": status,
            "alive": alive,
            "ready": ready,
            "daemons": daemons,
        }))
    }

    /// This daemon's calls and (in a fleet) every other live daemon's, each naming its daemon.
    pub async fn listed(&self, includes_input: bool) -> Listed {
        let mut running: Vec<Value> = self.running().iter().map(|r| json!(r)).collect();
        let mut recent: Vec<Value> = self
            .recent()
            .iter()
            .map(|r| as_written(r, includes_input))
            .collect();
        let Some(board) = self.board.get() else {
            return Listed { running, recent };
        };
        for item in running.iter_mut().chain(recent.iter_mut()) {
            item["daemon"] = json!(board.daemon());
        }
        match board.calls_elsewhere().await {
            Ok(others) => {
                for (daemon, calls) in others {
                    for (key, list) in [("running", &mut running), ("recent", &mut recent)] {
                        let shown = calls[key].as_array().into_iter().flatten();
                        list.extend(shown.cloned().map(|mut item| {
                            item["daemon"] = json!(daemon);
                            item
                        }));
                    }
                }
            }
            Err(e) => tracing::warn!("the fleet's calls could not be read: {e}"),
        }
        Listed { running, recent }
    }

    /// Cancel call `id` for `operator`, here or on the daemon of the fleet that runs it.
    pub async fn cancel_anywhere(&self, id: &str, operator: &str) -> Result<Cancelled, NotRunning> {
        let here = self.cancel(id, operator);
        let Some(board) = self.board.get() else {
            return here.map(|()| Cancelled::Here);
        };
        if here.is_ok() {
            return Ok(Cancelled::Here);
        }
        match board.cancel_elsewhere(id, operator).await {
            Ok(Some(daemon)) => Ok(Cancelled::Elsewhere(daemon)),
            Ok(None) => Err(NotRunning(id.to_owned())),
            Err(e) => {
                tracing::warn!("the fleet could not be asked to cancel call {id}: {e}");
                Err(NotRunning(id.to_owned()))
            }
        }
    }

    /// What another daemon said about calls: a cancel for a call running here stops it; a change
    /// elsewhere (or notices missed) tells this daemon's consoles to look again.
    pub fn heard(&self, notice: &Notice) {
        let here = self.daemon();
        match notice {
            Notice::Cancel {
                daemon,
                id,
                operator,
            } if Some(daemon.as_str()) == here => {
                if let Err(e) = self.cancel(id, operator) {
                    tracing::debug!("a fleet cancel came too late: {e}");
                }
            }
            Notice::Calls { daemon } if Some(daemon.as_str()) != here => {
                self.publish(|| LiveEvent::Elsewhere);
            }
            Notice::Missed => self.publish(|| LiveEvent::Elsewhere),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
