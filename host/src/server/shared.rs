//! What every front end of one daemon shares: the pipeline, the services (admission and shutdown
//! among them), the approval timeout and tasks, built once by [`Server::new`](super::Server::new). It owns no
//! sockets, and imports nothing of the front ends (`mcp`, `batch`, `http`) or of the ops routes:
//! they all import it.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use toolhost_config::config::ServerConfig;

use crate::exec::{Pipeline, Services};
use crate::tasks::Tasks;

/// What every session and route of one daemon shares. Admission (shutdown, work in flight) is a
/// service, deadlines are the pipeline's; this holds what only the front ends need besides.
pub(crate) struct Shared {
    /// Runs the calls, and decides every outcome.
    pub(crate) pipeline: Arc<Pipeline>,
    /// What the daemon's calls share: admission, the audit log, stats, live calls, questions.
    pub(crate) services: Arc<Services>,
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
    pub(crate) fn new(pipeline: Arc<Pipeline>, config: &ServerConfig) -> Self {
        Self {
            services: pipeline.services().clone(),
            pipeline,
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
