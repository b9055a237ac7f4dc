//! State shared by every MCP session, route and transport of one daemon: the pipeline, the calls
//! in flight, and the shutdown signals, built once ([`Server::new`]). It owns no sockets.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use axum::Router;
use toolhost_policy::config::ServerConfig;

use super::approval::RequestStates;
use super::handler::McpServer;
use crate::exec::Pipeline;
use crate::tasks::Tasks;

/// One daemon's server state over a pipeline, built once: [`serve`](super::serve) runs it, and
/// tests and embedders take its routes or an MCP handler from it. Cheap to clone.
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
    pub(crate) config: Arc<ServerConfig>,
}

impl Server {
    /// The server state for `pipeline`, limited and guarded as `config` says, without tasks.
    pub fn new(pipeline: Arc<Pipeline>, config: ServerConfig) -> Self {
        Self {
            shared: Arc::new(Shared::new(pipeline, &config)),
            config: Arc::new(config),
        }
    }

    /// Say that a state store is configured: `/ready` answers 503 until [`Self::attach_tasks`].
    pub fn expect_tasks(&self) {
        self.shared.wants_tasks.store(true, Ordering::SeqCst);
    }

    /// Tasks from now on (the daemon opens the state store after its first answer, so that
    /// `/ready` can say it is not reachable yet); at most once.
    pub fn attach_tasks(&self, tasks: Arc<Tasks>) {
        self.shared.states.use_store(tasks.store().clone());
        if self.shared.tasks.set(tasks).is_err() {
            tracing::warn!("tasks were attached twice; keeping the first store");
        }
    }

    /// Every HTTP route (`/mcp`, `/health`, `/metrics`, `/v1/`) behind the guard. Its MCP sessions
    /// end when the router is dropped, not on a signal.
    pub fn router(&self) -> Router {
        super::http::app(
            self.shared.clone(),
            &self.config,
            tokio_util::sync::CancellationToken::new(),
        )
    }

    /// The batch API routes alone, behind the same guard as `/mcp`.
    pub fn batch_router(&self) -> Router {
        super::batch::router(self.shared.clone(), &self.config)
    }

    /// An MCP handler for one in-process transport (a call has no deadline beyond the plugin's).
    pub fn mcp(&self) -> McpServer {
        McpServer::with_shared(self.shared.clone(), None)
    }
}

/// What every session of one daemon shares.
pub(crate) struct Shared {
    /// Runs the calls.
    pub(crate) pipeline: Arc<Pipeline>,
    /// Seals and opens the `requestState` of 2026-era approvals.
    pub(crate) states: RequestStates,
    /// Cancelled when shutdown starts: new calls are refused, subscriptions end.
    pub(crate) stopping: CancellationToken,
    /// Parent of every call's cancel token; cancelled when the shutdown grace period is over.
    pub(crate) calls: CancellationToken,
    /// Calls in flight (including those waiting for an approval).
    pub(crate) in_flight: InFlight,
    /// How long an approval question may stay unanswered.
    pub(crate) approval_timeout: Duration,
    /// Long calls as tasks, once the state store is open.
    pub(crate) tasks: OnceLock<Arc<Tasks>>,
    /// Whether durable state is configured at all (else tasks never come, and `/ready` does not
    /// wait for them).
    pub(crate) wants_tasks: AtomicBool,
}

impl Shared {
    /// State for a daemon serving `pipeline`.
    fn new(pipeline: Arc<Pipeline>, config: &ServerConfig) -> Self {
        Self {
            pipeline,
            states: RequestStates::new(config.state_key.as_ref()),
            stopping: CancellationToken::new(),
            calls: CancellationToken::new(),
            in_flight: InFlight::default(),
            approval_timeout: config.approval_timeout,
            tasks: OnceLock::new(),
            wants_tasks: AtomicBool::new(false),
        }
    }

    /// The tasks, once the store is open.
    pub(crate) fn tasks(&self) -> Option<&Arc<Tasks>> {
        self.tasks.get()
    }

    /// Count a call in flight until the guard drops; the guard may move to another task.
    pub(crate) fn enter_owned(self: &Arc<Self>) -> OwnedFlight {
        self.in_flight.count.fetch_add(1, Ordering::SeqCst);
        OwnedFlight(self.clone())
    }
}

/// A call in flight, counted until dropped (see [`Shared::enter_owned`]).
pub(crate) struct OwnedFlight(Arc<Shared>);

impl Drop for OwnedFlight {
    fn drop(&mut self) {
        self.0.in_flight.leave();
    }
}

/// Counts calls in flight and wakes whoever waits for none to be left.
#[derive(Default)]
pub(crate) struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

/// Held while a call is in flight.
pub(crate) struct InFlightGuard<'a>(&'a InFlight);

impl InFlight {
    /// Count one more call until the guard drops.
    pub(crate) fn enter(&self) -> InFlightGuard<'_> {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(self)
    }

    fn leave(&self) {
        if self.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }

    /// Calls in flight now.
    pub(crate) fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Resolves once no call is in flight.
    pub(crate) async fn idle(&self) {
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

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_resolves_when_the_last_call_ends() {
        let in_flight = Arc::new(InFlight::default());
        in_flight.idle().await; // none yet
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let counter = in_flight.clone();
        let call = tokio::spawn(async move {
            let _guard = counter.enter();
            let _ = rx.await;
        });
        while in_flight.count() == 0 {
            tokio::task::yield_now().await;
        }
        let waiter = tokio::spawn({
            let in_flight = in_flight.clone();
            async move { in_flight.idle().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        tx.send(()).unwrap();
        call.await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
    }
}
