//! The daemon's state store as the host holds it: ready, or pending while its server is
//! unreachable, with the loop that retries until it is. Every loop here ends when the host's
//! shutdown token is cancelled; the host awaits them at shutdown.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::exec::Services;
use crate::server::Server;
use crate::state::StateError;
use crate::tasks::Tasks;
use toolhost_config::config::Config;

/// How often an unreachable store is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// The host's background work, awaited at shutdown.
pub(super) type Background = Arc<Mutex<Vec<JoinHandle<()>>>>;

/// The tasks over the configured store: `Some` once it is open.
pub(super) struct TaskStore {
    ready: watch::Receiver<Option<Arc<Tasks>>>,
}

impl TaskStore {
    /// The store as the first attempt left it (`opened`). A store that cannot be opened is a
    /// configuration error for the embedded file, as is a schema newer than this build; a server
    /// that is down is waited for in the background.
    pub(super) fn new(
        opened: Result<Arc<Tasks>, StateError>,
        config: &Arc<Config>,
        stop: &CancellationToken,
        background: &Background,
    ) -> Result<Self, StateError> {
        match opened {
            Ok(tasks) => {
                let (_, ready) = watch::channel(Some(tasks));
                Ok(Self { ready })
            }
            Err(e @ (StateError::Sqlite { .. } | StateError::TooNew { .. })) => Err(e),
            Err(e) => {
                tracing::warn!("{e}; serving without tasks until the state store is reachable");
                let (found, ready) = watch::channel(None);
                let retry = retry(config.clone(), stop.clone(), background.clone(), found);
                spawn(background, retry);
                Ok(Self { ready })
            }
        }
    }

    /// The tasks, if the store is open.
    pub(super) fn ready(&self) -> Option<Arc<Tasks>> {
        self.ready.borrow().clone()
    }

    /// Give `server` the tasks: now if the store is open (`/ready` waits for them), else as soon as
    /// it is.
    pub(super) fn attach(
        &self,
        server: &Server,
        stop: &CancellationToken,
        background: &Background,
    ) {
        server.expect_tasks();
        let server = server.clone();
        self.when_ready(stop, background, move |tasks| server.attach_tasks(tasks));
    }

    /// Share the daemon's quotas, console and audit with the fleet through the store (a
    /// PostgreSQL store's ledger, board and audit index), now if the store is open, else as soon
    /// as it is.
    pub(super) fn share(
        &self,
        services: &Arc<Services>,
        stop: &CancellationToken,
        background: &Background,
    ) {
        let services = services.clone();
        let (shipping, shippers) = (stop.clone(), background.clone());
        // Where shipping starts is taken now: what the daemon writes before the store answers
        // is shipped too. Only a fleet's store has an index: a daemon alone reads nothing here.
        let fleet = matches!(
            services.config.state,
            toolhost_config::config::StateStore::Postgres { .. }
        );
        let tail = (services.config.audit_path.clone())
            .filter(|_| fleet)
            .map(crate::audit::index::Tail::from_now);
        self.when_ready(stop, background, move |tasks| {
            if let Some(ledger) = tasks.store().ledger(tasks.daemon()) {
                services.share_quotas(ledger);
            }
            if let Some((board, notices)) = tasks.store().board(tasks.daemon()) {
                services.share_console(board, notices);
            }
            if let (Some(index), Some(tail)) = (tasks.store().audit_index(tasks.daemon()), tail) {
                let ship = crate::audit::index::ship(tail, index, shipping.child_token());
                spawn(&shippers, ship);
            }
        });
    }

    /// Run `then` with the tasks: now if the store is open, else in the background as soon as it
    /// is (unless `stop` comes first).
    fn when_ready(
        &self,
        stop: &CancellationToken,
        background: &Background,
        then: impl FnOnce(Arc<Tasks>) + Send + 'static,
    ) {
        if let Some(tasks) = self.ready() {
            then(tasks);
            return;
        }
        let (stop, mut ready) = (stop.clone(), self.ready.clone());
        spawn(background, async move {
            tokio::select! {
                () = stop.cancelled() => {}
                found = ready.wait_for(Option::is_some) => {
                    if let Ok(tasks) = found
                        && let Some(tasks) = tasks.clone()
                    {
                        then(tasks);
                    }
                }
            }
        });
    }
}

/// The tasks over the store `config` names (opened and migrated), beating its heartbeat until
/// `stop`. What a previous run left unfinished in an embedded store this daemon has to itself is
/// failed now.
pub(super) async fn open_tasks(
    config: &Config,
    stop: &CancellationToken,
    background: &Background,
) -> Result<Arc<Tasks>, StateError> {
    let store = crate::state::open(&config.state).await?;
    let tasks = Tasks::start(store, config.tasks).await?;
    spawn(background, tasks.clone().keep(stop.child_token()));
    Ok(tasks)
}

/// Try the store every [`RETRY`] until it opens (then publish its tasks) or `stop`.
async fn retry(
    config: Arc<Config>,
    stop: CancellationToken,
    background: Background,
    found: watch::Sender<Option<Arc<Tasks>>>,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(RETRY) => {}
        }
        match open_tasks(&config, &stop, &background).await {
            Ok(tasks) => {
                tracing::info!("the state store is reachable: tasks are on");
                found.send_replace(Some(tasks));
                return;
            }
            Err(e) => tracing::debug!("state store still unreachable: {e}"),
        }
    }
}

/// Run `work` in the background, to be awaited at shutdown.
fn spawn(background: &Background, work: impl Future<Output = ()> + Send + 'static) {
    let handle = tokio::spawn(work);
    let mut handles = background.lock().unwrap_or_else(PoisonError::into_inner);
    // Finished work need not be kept (a waiter per server, a retry loop that found the store).
    handles.retain(|h| !h.is_finished());
    handles.push(handle);
}
