//! State shared by every MCP session, route and transport of one daemon: the pipeline (which owns
//! admission and shutdown), approval states and tasks, built once ([`Server::new`]). It owns no
//! sockets.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

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

/// What every session of one daemon shares. Admission (shutdown, work in flight) and deadlines
/// are the pipeline's; this holds what only the MCP and HTTP front ends need.
pub(crate) struct Shared {
    /// Runs the calls, and decides admission and every outcome.
    pub(crate) pipeline: Arc<Pipeline>,
    /// Seals and opens the `requestState` of 2026-era approvals.
    pub(crate) states: RequestStates,
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
            approval_timeout: config.approval_timeout,
            tasks: OnceLock::new(),
            wants_tasks: AtomicBool::new(false),
        }
    }

    /// The tasks, once the store is open.
    pub(crate) fn tasks(&self) -> Option<&Arc<Tasks>> {
        self.tasks.get()
    }
}
