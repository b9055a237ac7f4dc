//! [`Server`], the one value that owns a daemon's server state, and the top that assembles it:
//! the HTTP app ([`super::app`]), the batch routes alone, and MCP handlers over the [`Shared`]
//! state and MCP's own `requestState` sealing. May import every front end; none imports it
//! but [`super::run`].

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use toolhost_config::config::ServerConfig;

use super::app;
use super::batch;
use super::console::Console;
use super::http::guard::Guard;
use super::mcp::{McpServer, RequestStates};
use super::shared::Shared;
use crate::tasks::Tasks;

/// One daemon's server state over a pipeline, built once: [`serve`](super::serve) runs it, and
/// tests and embedders take its routes or an MCP handler from it. Cheap to clone.
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
    /// Seals and opens the `requestState` of 2026-era approvals: MCP's alone, so held here and
    /// handed to every [`McpServer`] rather than kept in [`Shared`].
    pub(crate) states: Arc<RequestStates>,
    pub(crate) config: Arc<ServerConfig>,
    /// The operator's console and who is signed in to it; `None` when `[console]` turns it off.
    pub(crate) console: Option<Arc<Console>>,
}

impl Server {
    /// The server state for `pipeline`, limited and guarded as `config` says, without tasks.
    pub fn new(pipeline: Arc<crate::exec::Pipeline>, config: ServerConfig) -> Self {
        let console_on = pipeline.services().config.console.enabled;
        let shared = Arc::new(Shared::new(pipeline, &config));
        Self {
            console: console_on.then(|| Arc::new(Console::new(shared.clone(), &config))),
            shared,
            states: Arc::new(RequestStates::new(config.state_key.as_ref())),
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
        self.states.use_store(tasks.store().clone());
        if self.shared.tasks.set(tasks).is_err() {
            tracing::warn!("tasks were attached twice; keeping the first store");
        }
    }

    /// Every HTTP route (`/mcp`, `/health`, `/metrics`, `/v1/`) behind the guard. Its MCP sessions
    /// end when the router is dropped, not on a signal.
    pub fn router(&self) -> Router {
        app::app(
            self.shared.clone(),
            self.states.clone(),
            self.console.clone(),
            &self.config,
            tokio_util::sync::CancellationToken::new(),
        )
    }

    /// The batch API routes alone, behind the same guard as `/mcp`.
    pub fn batch_router(&self) -> Router {
        app::guarded(
            batch::routes(self.shared.clone(), &self.config),
            Arc::new(Guard::new(&self.config)),
            &self.shared,
            &self.config,
        )
    }

    /// A one-time console sign-in link's path and query (`/console/signin?token=…`), when the
    /// console is on.
    pub async fn console_sign_in_path(&self) -> Option<String> {
        self.console.as_ref()?.sign_in_path().await.ok()
    }

    /// An MCP handler for one in-process transport (a call has no deadline beyond the plugin's).
    pub fn mcp(&self) -> McpServer {
        McpServer::with_shared(self.shared.clone(), self.states.clone(), None)
    }
}
