//! Admission: whether the pipeline takes new work, what is in flight, and how shutdown drains it.
//!
//! Every front end's work (one call, a batch, a task) is admitted here as a [`Ticket`], counted in
//! flight until the ticket drops. Once shutdown starts ([`Admission::stop`]) new work is refused,
//! and the pipeline records each refused call like any other outcome; work already admitted runs
//! on (a batch's later calls, a task) for the grace period, after which every call is cancelled.
//! Front ends never decide this themselves: they ask for a ticket, or let the pipeline ask.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How long cancelled calls get to stop and be recorded after the grace period.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// The daemon is shutting down and admits no new work.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("toolhost is shutting down and accepts no new calls; retry once it is back")]
pub struct Stopping;

/// When a front end's limit on a whole request passes (`server.request-timeout-ms`): the
/// pipeline then ends the call as `timeout`, for the caller, the audit log and the stats alike.
/// Calls of one batch share one deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    limit: Duration,
}

impl Deadline {
    /// `limit` from now.
    pub fn after(limit: Duration) -> Self {
        Self {
            at: Instant::now() + limit,
            limit,
        }
    }

    /// At `at`: the limit it names is what is left of it now.
    pub fn until(at: Instant) -> Self {
        Self {
            at,
            limit: at.saturating_duration_since(Instant::now()),
        }
    }

    /// The instant it passes.
    pub fn at(&self) -> Instant {
        self.at
    }

    /// The limit it was set with, for the message that names it.
    pub fn limit(&self) -> Duration {
        self.limit
    }
}

/// Whether a daemon takes new work, shared by the pipeline and every front end: a ticket per
/// piece of work, counted in flight, and the shutdown's two cancellations.
pub struct Admission {
    /// Cancelled when shutdown starts: new work is refused, subscriptions end.
    stopping: CancellationToken,
    /// Parent of every call's stop; cancelled when the shutdown grace period is over.
    calls: CancellationToken,
    in_flight: Arc<InFlight>,
}

impl Admission {
    pub(super) fn new() -> Self {
        Self {
            stopping: CancellationToken::new(),
            calls: CancellationToken::new(),
            in_flight: Arc::new(InFlight::default()),
        }
    }

    /// A ticket for new work, unless shutdown has started: a front end's work that spans several
    /// calls or outlives its request (a batch, a task) is counted in flight until the ticket
    /// drops, and its calls (given a clone in [`CallRequest::admitted`]) run even once shutdown
    /// has started.
    ///
    /// [`CallRequest::admitted`]: super::CallRequest::admitted
    pub fn admit(&self) -> Result<Ticket, Stopping> {
        // Counted before the check: a drain that starts in between still waits for it.
        let ticket = Ticket::enter(&self.in_flight);
        if self.stopping.is_cancelled() {
            return Err(Stopping);
        }
        Ok(ticket)
    }

    /// Cancelled once shutdown starts: for front ends to end what only waits (subscriptions,
    /// long polls).
    pub fn stopping(&self) -> &CancellationToken {
        &self.stopping
    }

    /// Cancelled once the grace period is over: every call still running stops.
    pub(super) fn calls(&self) -> &CancellationToken {
        &self.calls
    }

    /// A token that is cancelled when the shutdown's grace period ends, for a front end that
    /// derives its own cancellation from it (a transport whose client went away).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.calls.child_token()
    }

    /// Work in flight: calls, batches and tasks admitted and not yet ended (calls waiting for an
    /// approval included).
    pub fn in_flight(&self) -> usize {
        self.in_flight.count()
    }

    /// Shut down: refuse new work from now on (each refused call recorded as `busy`), give the
    /// work in flight `grace` to finish, then stop every call (recorded as cancelled by the
    /// shutdown) and wait a little for it to be recorded. Returns whether anything was in flight.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.stopping.cancel();
        let running = self.in_flight.count();
        if running == 0 {
            return false;
        }
        tracing::info!(
            running,
            "waiting up to {} ms for calls in flight",
            grace.as_millis()
        );
        if tokio::time::timeout(grace, self.in_flight.idle())
            .await
            .is_ok()
        {
            return true;
        }
        tracing::warn!(
            running = self.in_flight.count(),
            "calls still running after the shutdown grace period; cancelling them"
        );
        self.calls.cancel();
        if tokio::time::timeout(CANCEL_WAIT, self.in_flight.idle())
            .await
            .is_err()
        {
            tracing::error!(
                running = self.in_flight.count(),
                "calls did not stop after cancellation; their audit records may be missing"
            );
        }
        true
    }
}

/// Admitted work, counted in flight until the last clone drops. A batch or a task holds one for
/// its whole life and hands a clone to each of its calls, which then run even if shutdown starts
/// meanwhile (for the grace period).
#[derive(Clone)]
pub struct Ticket(#[expect(dead_code, reason = "held for its Drop")] Arc<Counted>);

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ticket")
    }
}

impl Ticket {
    fn enter(in_flight: &Arc<InFlight>) -> Self {
        in_flight.count.fetch_add(1, Ordering::SeqCst);
        Self(Arc::new(Counted(in_flight.clone())))
    }
}

/// One count in flight, given back on drop.
struct Counted(Arc<InFlight>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// Counts work in flight and wakes whoever waits for none to be left.
#[derive(Default)]
struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

impl InFlight {
    fn leave(&self) {
        if self.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }

    fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Resolves once nothing is in flight.
    async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count() == 0 {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drain_waits_for_the_last_ticket_and_refuses_new_work() {
        let admission = Arc::new(Admission::new());
        assert!(!admission.drain(Duration::ZERO).await, "nothing in flight");
        let admission = Arc::new(Admission::new());
        let ticket = admission.admit().unwrap();
        let held = ticket.clone();
        drop(ticket);
        assert_eq!(admission.in_flight(), 1, "clones count once");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let work = tokio::spawn(async move {
            let _held = held;
            let _ = rx.await;
        });
        let draining = tokio::spawn({
            let admission = admission.clone();
            async move { admission.drain(Duration::from_secs(30)).await }
        });
        while !admission.stopping().is_cancelled() {
            tokio::task::yield_now().await;
        }
        assert!(admission.admit().is_err(), "no new work once stopping");
        assert_eq!(admission.in_flight(), 1, "a refusal is not left counted");
        assert!(!draining.is_finished());
        tx.send(()).unwrap();
        work.await.unwrap();
        assert!(draining.await.unwrap());
        assert!(!admission.calls().is_cancelled(), "ended within the grace");
    }

    #[tokio::test]
    async fn drain_cancels_what_outlives_the_grace() {
        let admission = Arc::new(Admission::new());
        let ticket = admission.admit().unwrap();
        let calls = admission.calls().clone();
        let work = tokio::spawn(async move {
            calls.cancelled().await;
            drop(ticket);
        });
        assert!(admission.drain(Duration::from_millis(10)).await);
        assert!(admission.calls().is_cancelled());
        work.await.unwrap();
        assert_eq!(admission.in_flight(), 0);
    }
}
