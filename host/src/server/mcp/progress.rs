//! Progress from a running plugin to `notifications/progress`, for requests that sent a progress token.
//!
//! The plugin reports on the executing task and must never wait for the client, so reports go into
//! a one-slot mailbox and a pump sends the newest one: a plugin that reports a million times costs
//! the client a handful of notifications, never a backlog. Values that do not increase are dropped
//! (the specification requires progress to increase), and the last report is always delivered
//! before the call's result. A report of nothing done yet (a call waiting for an approval says so
//! every few seconds) is sent while no unit is done as a fraction below one that grows with each
//! report, so that it still increases and a client that resets its timeout on progress keeps
//! waiting.

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
    sent: tokio::sync::Mutex<Sent>,
}

/// What the relay has sent so far.
#[derive(Default)]
struct Sent {
    /// The last value sent, if any.
    last: Option<f64>,
    /// Reports of nothing done yet sent so far.
    idle: u32,
}

impl Sent {
    /// The value to send for `done`, if it increases on the last.
    fn next(&mut self, done: u64) -> Option<f64> {
        let value = if done == 0 && self.last.is_none_or(|l| l < 1.0) {
            // 1/2, 2/3, 3/4, ...: below the first unit done, and still increasing.
            self.idle += 1;
            f64::from(self.idle) / f64::from(self.idle + 1)
        } else {
            done as f64
        };
        self.last.is_none_or(|l| value > l).then_some(value)
    }
}

impl ProgressRelay {
    /// A relay to `peer` for the request that sent `token`.
    pub(crate) fn new(token: ProgressToken, peer: Peer<RoleServer>) -> Arc<Self> {
        Arc::new(Self {
            token,
            peer,
            latest: Mutex::new(None),
            wake: Notify::new(),
            sent: tokio::sync::Mutex::new(Sent::default()),
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
        let Some(value) = sent.next(p.done) else {
            return;
        };
        let mut param = ProgressNotificationParam::new(self.token.clone(), value);
        if let Some(total) = p.total {
            param = param.with_total(total as f64);
        }
        if !p.message.is_empty() {
            param = param.with_message(p.message);
        }
        match self.peer.notify_progress(param).await {
            Ok(()) => sent.last = Some(value),
            Err(e) => tracing::debug!("progress notification not delivered: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Sent;

    #[test]
    fn reports_of_nothing_done_still_increase_and_stay_below_the_first_unit() {
        let mut sent = Sent::default();
        let mut values = Vec::new();
        for done in [0, 0, 0, 1, 0, 1, 3, 2, 0] {
            if let Some(v) = sent.next(done) {
                sent.last = Some(v);
                values.push(v);
            }
        }
        assert_eq!(values, [0.5, 2.0 / 3.0, 0.75, 1.0, 3.0]);
    }
}
