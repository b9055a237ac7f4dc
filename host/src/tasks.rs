//! Long-running work as tasks: started now, run in the background under the same pipeline, limits
//! and audit as any call, and read later by id, from any daemon that shares the [`Store`].
//!
//! The daemon that runs a task owns its live parts (the cancel token, the approval waiting for an
//! answer); the record in the store is what everyone reads. Each daemon beats a heartbeat into the
//! store; a task whose daemon fell silent for longer than the lease is failed by whichever daemon
//! sweeps next, with a reason, so no task silently stays `working` forever. A cancel or an answer
//! that reaches another daemon is written to the store and picked up by the owner's next beat.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolhost_config::config::TaskOptions;
use toolhost_gate::task::TaskStatus;

use crate::state::{Change, StateError, Store, TaskKind, TaskRecord, now_ms};

/// How often a daemon beats, sweeps and looks for cancels addressed to it.
const BEAT: Duration = Duration::from_millis(500);

/// Progress is written at most this often per task (the latest message wins).
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// How a task ended, as its work reports it.
#[derive(Debug, Clone)]
pub enum Finish {
    /// With a result (for a tool: its `CallToolResult`, also when the tool failed).
    Completed(Value),
    /// Without a result: a JSON-RPC error object.
    Failed(Value),
    /// Cancelled, with why.
    Cancelled(String),
}

/// A task about to start.
pub struct NewTask {
    /// What it runs.
    pub kind: TaskKind,
    /// Whose it is.
    pub owner: String,
    /// The tool's name, or the batch's format.
    pub name: String,
    /// How long the record lives; capped by the configured TTL.
    pub ttl: Option<Duration>,
}

/// Why a task operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// No such task for this owner (another owner's task is reported the same way).
    #[error("no task {0} (it does not exist, expired, or belongs to another caller)")]
    NotFound(String),
    /// The task does not wait for input.
    #[error("task {0} is not waiting for input")]
    NotWaiting(String),
    /// The store failed.
    #[error(transparent)]
    State(#[from] StateError),
}

/// What the running work of one task can do: report progress, ask for input.
#[derive(Clone)]
pub struct TaskHandle {
    tasks: Arc<Tasks>,
    id: String,
    last_progress: Arc<Mutex<Option<std::time::Instant>>>,
}

struct Live {
    cancel: CancellationToken,
    answered: Arc<tokio::sync::Notify>,
}

/// The tasks of one daemon, over the shared store.
pub struct Tasks {
    store: Arc<dyn Store>,
    daemon: String,
    options: TaskOptions,
    live: Mutex<HashMap<String, Live>>,
}

impl Tasks {
    /// Tasks over `store`, run by a daemon with a fresh id. When the store is this daemon's alone,
    /// whatever a previous run left unfinished failed with it: say so now, not after the lease.
    pub async fn start(
        store: Arc<dyn Store>,
        options: TaskOptions,
    ) -> Result<Arc<Self>, StateError> {
        let daemon = uuid::Uuid::now_v7().to_string();
        let now = now_ms();
        store.heartbeat(&daemon, now).await?;
        if store.sole_user() {
            let swept = store.sweep(now, now + 1, &daemon).await?;
            if swept.orphaned > 0 {
                tracing::warn!(
                    tasks = swept.orphaned,
                    "tasks left unfinished by the previous run are now failed"
                );
            }
        }
        Ok(Arc::new(Self {
            store,
            daemon,
            options,
            live: Mutex::new(HashMap::new()),
        }))
    }

    /// This daemon's id in the store.
    pub fn daemon(&self) -> &str {
        &self.daemon
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The configured options.
    pub fn options(&self) -> &TaskOptions {
        &self.options
    }

    /// Beat, sweep and act on cancels until `stop`. One loop per daemon.
    pub async fn keep(self: Arc<Self>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(BEAT);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            if let Err(e) = self.beat().await {
                tracing::warn!("task store: {e}");
            }
        }
    }

    async fn beat(&self) -> Result<(), StateError> {
        let now = now_ms();
        self.store.heartbeat(&self.daemon, now).await?;
        let lease = i64::try_from(self.options.lease.as_millis()).unwrap_or(i64::MAX);
        let swept = self
            .store
            .sweep(now, now.saturating_sub(lease), &self.daemon)
            .await?;
        if swept.orphaned > 0 {
            tracing::warn!(
                tasks = swept.orphaned,
                "failed the unfinished tasks of a daemon that stopped"
            );
        }
        for id in self.store.cancel_requests(&self.daemon).await? {
            self.cancel_live(&id);
        }
        let waiting: Vec<Arc<tokio::sync::Notify>> =
            self.lock().values().map(|l| l.answered.clone()).collect();
        // Answers may have reached another daemon: wake the waiters to look.
        for w in waiting {
            w.notify_one();
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn cancel_live(&self, id: &str) -> bool {
        match self.lock().get(id) {
            Some(live) => {
                live.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Create a task and run `work` for it in the background; the record as created. `cancel` is
    /// the work's token (a child of the daemon's, so shutdown reaches it); `work` gets a handle for
    /// progress and input, and must end once the token is cancelled.
    pub async fn spawn<F, Fut>(
        self: &Arc<Self>,
        new: NewTask,
        cancel: CancellationToken,
        work: F,
    ) -> Result<TaskRecord, StateError>
    where
        F: FnOnce(TaskHandle) -> Fut + Send + 'static,
        Fut: Future<Output = Finish> + Send + 'static,
    {
        let now = now_ms();
        let ttl = new
            .ttl
            .map_or(self.options.ttl, |t| t.min(self.options.ttl));
        let record = TaskRecord {
            id: uuid::Uuid::new_v4().to_string(),
            kind: new.kind,
            owner: new.owner,
            name: new.name,
            status: TaskStatus::Working,
            message: None,
            daemon: self.daemon.clone(),
            created_ms: now,
            updated_ms: now,
            expires_ms: now.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)),
            cancel_requested: false,
            input_requests: None,
            result: None,
            error: None,
        };
        self.store.insert(&record).await?;
        let id = record.id.clone();
        self.lock().insert(
            id.clone(),
            Live {
                cancel,
                answered: Arc::new(tokio::sync::Notify::new()),
            },
        );
        let handle = TaskHandle {
            tasks: self.clone(),
            id: id.clone(),
            last_progress: Arc::new(Mutex::new(None)),
        };
        let tasks = self.clone();
        tokio::spawn(async move {
            let finish = work(handle).await;
            tasks.finish(&id, finish).await;
        });
        Ok(record)
    }

    /// Write how `id` ended; retried while the store is unreachable, so that a result is not lost
    /// to a short outage (a daemon that dies meanwhile leaves the task to the sweep).
    async fn finish(&self, id: &str, finish: Finish) {
        let change = match finish {
            Finish::Completed(result) => Change::Finish {
                status: TaskStatus::Completed,
                message: None,
                result: Some(result),
                error: None,
            },
            Finish::Failed(error) => Change::Finish {
                status: TaskStatus::Failed,
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                result: None,
                error: Some(error),
            },
            Finish::Cancelled(why) => Change::Finish {
                status: TaskStatus::Cancelled,
                message: Some(why),
                result: None,
                error: None,
            },
        };
        let mut wait = Duration::from_millis(100);
        for _ in 0..20 {
            match self.store.update(id, &change, now_ms()).await {
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(task = id, "cannot record how the task ended yet: {e}");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
            }
        }
        self.lock().remove(id);
    }

    /// `owner`'s task `id`.
    pub async fn get(&self, id: &str, owner: &str) -> Result<TaskRecord, TaskError> {
        match self.store.get(id, now_ms()).await? {
            Some(t) if t.owner == owner => Ok(t),
            _ => Err(TaskError::NotFound(id.to_owned())),
        }
    }

    /// Every owner's live tasks, newest first, at most `limit`: for the operator's console.
    pub async fn newest(&self, limit: usize) -> Result<Vec<TaskRecord>, TaskError> {
        Ok(self.store.newest(limit, now_ms()).await?)
    }

    /// `owner`'s tasks, a page after `cursor`; the next cursor when there may be more.
    pub async fn list(
        &self,
        owner: &str,
        cursor: Option<&str>,
        page: usize,
    ) -> Result<(Vec<TaskRecord>, Option<String>), TaskError> {
        let tasks = self.store.list(owner, cursor, page, now_ms()).await?;
        let next = (tasks.len() == page)
            .then(|| tasks.last().map(|t| format!("{}.{}", t.created_ms, t.id)))
            .flatten();
        Ok((tasks, next))
    }

    /// Cancel `owner`'s task `id`: at once when this daemon runs it, else through the store. The
    /// record after a short wait for the work to stop (it may still say `working` if the daemon
    /// running it is slow to notice).
    pub async fn cancel(&self, id: &str, owner: &str) -> Result<TaskRecord, TaskError> {
        let task = self.get(id, owner).await?;
        if task.status.is_terminal() {
            return Ok(task);
        }
        if !self.cancel_live(id) {
            self.store.request_cancel(id, now_ms()).await?;
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        loop {
            let now = self.get(id, owner).await?;
            if now.status.is_terminal() || tokio::time::Instant::now() >= deadline {
                return Ok(now);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Deliver `owner`'s answers to task `id`, which must be waiting for them.
    pub async fn respond(&self, id: &str, owner: &str, answers: Value) -> Result<(), TaskError> {
        let task = self.get(id, owner).await?;
        if task.status != TaskStatus::InputRequired
            || !self
                .store
                .update(id, &Change::Respond(answers), now_ms())
                .await?
        {
            return Err(TaskError::NotWaiting(id.to_owned()));
        }
        if let Some(live) = self.lock().get(id) {
            live.answered.notify_one();
        }
        Ok(())
    }
}

impl TaskHandle {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Report progress from synchronous code (a pipeline progress sink): written in the
    /// background, at most every 250 ms; reports in between are dropped.
    pub fn report(&self, message: String) {
        {
            let mut last = self
                .last_progress
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let now = std::time::Instant::now();
            if last.is_some_and(|t| now.duration_since(t) < PROGRESS_EVERY) {
                return;
            }
            *last = Some(now);
        }
        let store = self.tasks.store.clone();
        let id = self.id.clone();
        tokio::spawn(async move {
            let change = Change::Progress(message);
            if let Err(e) = store.update(&id, &change, now_ms()).await {
                tracing::debug!(task = id, "progress not recorded: {e}");
            }
        });
    }

    /// Show the task as waiting for the client (`input_required`, with `requests`), while the
    /// question goes to the client another way (an `initialize`-era session's elicitation).
    pub async fn show_waiting(&self, requests: Value, message: String) {
        let change = Change::InputRequired { requests, message };
        if let Err(e) = self.tasks.store.update(&self.id, &change, now_ms()).await {
            tracing::warn!(task = self.id, "cannot show the task waiting: {e}");
        }
    }

    /// Show the task as working again after [`Self::show_waiting`].
    pub async fn show_working(&self) {
        if let Err(e) = self
            .tasks
            .store
            .update(&self.id, &Change::Resume, now_ms())
            .await
        {
            tracing::warn!(task = self.id, "cannot show the task working: {e}");
        }
    }

    /// Ask the client `requests` (the task shows `input_required` meanwhile) and wait for its
    /// answers, until `timeout` or the task's cancellation; `None` without an answer.
    pub async fn ask(&self, requests: Value, message: String, timeout: Duration) -> Option<Value> {
        let (cancel, answered) = {
            let live = self.tasks.lock();
            let l = live.get(&self.id)?;
            (l.cancel.clone(), l.answered.clone())
        };
        let change = Change::InputRequired { requests, message };
        if let Err(e) = self.tasks.store.update(&self.id, &change, now_ms()).await {
            tracing::warn!(task = self.id, "cannot ask for input: {e}");
            return None;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let answer = loop {
            match self.tasks.store.responses(&self.id).await {
                Ok(Some(answer)) => break Some(answer),
                Ok(None) => {}
                Err(e) => tracing::debug!(task = self.id, "answers not readable yet: {e}"),
            }
            tokio::select! {
                () = answered.notified() => {}
                () = cancel.cancelled() => break None,
                () = tokio::time::sleep_until(deadline) => break None,
            }
        };
        if let Err(e) = self
            .tasks
            .store
            .update(&self.id, &Change::Resume, now_ms())
            .await
        {
            tracing::warn!(task = self.id, "cannot resume after input: {e}");
        }
        answer
    }
}
