//! Progress from a running plugin to `notifications/progress`, for requests that sent a progress token.
//!
//! The plugin reports on the executing task and must never wait for the client, so reports go into
//! a one-slot mailbox and a pump sends the newest one: a plugin that reports a million times costs
//! the client a handful of notifications, never a backlog. Values that do not increase are dropped
//! (the specification requires progress to increase), and the last report is always delivered
//! before the call's result.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::Notify;

use crate::exec::{Progress, ProgressSink};

/// Forwards one call's progress to one client.
pub(crate) struct ProgressRelay {
    token: ProgressToken,
    peer: Peer<RoleServer>,
    latest: Mutex<Option<Progress>>,
    wake: Notify,
    sent: tokio::sync::Mutex<Option<u64>>,
}

impl ProgressRelay {
    /// A relay to `peer` for the request that sent `token`.
    pub(crate) fn new(token: ProgressToken, peer: Peer<RoleServer>) -> Arc<Self> {
        Arc::new(Self {
            token,
            peer,
            latest: Mutex::new(None),
            wake: Notify::new(),
            sent: tokio::sync::Mutex::new(None),
        })
    }

    /// The sink the pipeline reports to.
    pub(crate) fn sink(self: &Arc<Self>) -> ProgressSink {
        let relay = self.clone();
        Arc::new(move |p: Progress| {
            *relay.latest.lock().unwrap_or_else(PoisonError::into_inner) = Some(p);
            relay.wake.notify_one();
        })
    }

    /// Send reports as they come; never returns (drop it when the call ends).
    pub(crate) async fn pump(&self) {
        loop {
            self.wake.notified().await;
            self.flush().await;
        }
    }

    /// Send the newest report, if any is waiting.
    pub(crate) async fn flush(&self) {
        let mut sent = self.sent.lock().await;
        let Some(p) = self
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        if sent.is_some_and(|last| p.done <= last) {
            return;
        }
        let mut param = ProgressNotificationParam::new(self.token.clone(), p.done as f64);
        if let Some(total) = p.total {
            param = param.with_total(total as f64);
        }
        if !p.message.is_empty() {
            param = param.with_message(p.message);
        }
        match self.peer.notify_progress(param).await {
            Ok(()) => *sent = Some(p.done),
            Err(e) => tracing::debug!("progress notification not delivered: {e}"),
        }
    }
}
