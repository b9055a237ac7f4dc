//! Durable state: what must outlive one request and be seen by every daemon behind a load
//! balancer. Task records and their results, daemons' heartbeats, and the approval states already
//! used. One [`Store`] trait; `sqlite` is the embedded default for one daemon, `postgres`
//! serves many. Both apply the same versioned migrations (`migrations`) at open.

mod audit;
mod backend;
mod board;
mod buckets;
mod calls;
mod migrations;
mod postgres;
mod signins;
mod sql;
mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use toolhost_config::config::StateStore;
use toolhost_gate::task::TaskStatus;

use self::backend::{Backend, Sql};
pub use self::signins::SignIns;
use crate::audit::index::AuditIndex;

/// Why the store could not answer.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The SQLite file.
    #[error("state database {path}: {message}")]
    Sqlite {
        /// The file.
        path: String,
        /// What SQLite said.
        message: String,
    },
    /// The PostgreSQL server.
    #[error("PostgreSQL state store: {0}")]
    Postgres(String),
    /// The database was migrated by a newer toolhost.
    #[error(
        "the state database is at schema version {found}, newer than this toolhost knows ({known}); \
         upgrade toolhost or point [state] elsewhere"
    )]
    TooNew {
        /// The version found.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// A stored value did not parse (the row was written by something else).
    #[error("a stored task record is corrupt: {0}")]
    Corrupt(String),
}

/// Which front end's work a task holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// One MCP `tools/call`.
    Tool,
    /// A batch from `POST /v1/tool-calls?async=true`.
    Batch,
}

impl TaskKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Batch => "batch",
        }
    }

    fn parse(s: &str) -> Result<Self, StateError> {
        match s {
            "tool" => Ok(Self::Tool),
            "batch" => Ok(Self::Batch),
            other => Err(StateError::Corrupt(format!("unknown task kind {other:?}"))),
        }
    }
}

/// One task as stored. Times are milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// Unguessable id (a UUID).
    pub id: String,
    /// What it runs.
    pub kind: TaskKind,
    /// Whose it is ([`toolhost_gate::task::owner_of`]).
    pub owner: String,
    /// The tool's name, or the batch's format.
    pub name: String,
    /// Where it is.
    pub status: TaskStatus,
    /// The latest progress or the reason it ended.
    pub message: Option<String>,
    /// The daemon running it.
    pub daemon: String,
    /// When it was created.
    pub created_ms: i64,
    /// When it last changed.
    pub updated_ms: i64,
    /// When it is deleted.
    pub expires_ms: i64,
    /// Its owner asked to cancel it (the daemon running it acts on that).
    pub cancel_requested: bool,
    /// The questions it waits on, while `input_required`.
    pub input_requests: Option<Value>,
    /// The result, once `completed` (an MCP `CallToolResult`, or a batch's answer).
    pub result: Option<Value>,
    /// The error, once `failed` (a JSON-RPC error object).
    pub error: Option<Value>,
}

/// A change to a task that has not ended.
#[derive(Debug, Clone)]
pub enum Change {
    /// Still working; the latest progress.
    Progress(String),
    /// Waiting for the client to answer `requests`.
    InputRequired {
        /// The questions, keyed as the client must answer them.
        requests: Value,
        /// Said alongside.
        message: String,
    },
    /// The client's answers (accepted only while `input_required`).
    Respond(Value),
    /// Answered: working again, the questions and answers cleared.
    Resume,
    /// Ended.
    Finish {
        /// `completed`, `failed` or `cancelled`.
        status: TaskStatus,
        /// Why, in a sentence.
        message: Option<String>,
        /// The result, when completed.
        result: Option<Value>,
        /// The error, when failed.
        error: Option<Value>,
    },
}

/// What one sweep did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Unfinished tasks of silent daemons, now failed.
    pub orphaned: u64,
    /// Expired tasks, now deleted.
    pub expired: u64,
}

/// The reason an orphaned task failed; the same on every backend.
pub const ORPHANED: &str = "the toolhost daemon running this task stopped before it finished \
(killed or restarted); call the tool again";

/// Durable state, shared by every daemon that opens the same store. Every method is one short
/// statement or transaction; nothing holds a lock across calls.
#[async_trait]
pub trait Store: Send + Sync {
    /// Whether this daemon is the only one using the store, so that what is unfinished in it was
    /// left by a previous run (the embedded file, when its lock was free).
    fn sole_user(&self) -> bool {
        false
    }
    /// Whether the store answers now (for `/ready`).
    async fn ping(&self) -> Result<(), StateError>;
    /// Keep a new task.
    async fn insert(&self, task: &TaskRecord) -> Result<(), StateError>;
    /// The task `id`, unless it expired (`now` is the reader's clock).
    async fn get(&self, id: &str, now: i64) -> Result<Option<TaskRecord>, StateError>;
    /// `owner`'s live tasks, oldest first, after the task `after` (a cursor), at most `limit`.
    async fn list(
        &self,
        owner: &str,
        after: Option<&str>,
        limit: usize,
        now: i64,
    ) -> Result<Vec<TaskRecord>, StateError>;
    /// Every owner's live tasks, newest first, at most `limit` (for the operator's console).
    async fn newest(&self, limit: usize, now: i64) -> Result<Vec<TaskRecord>, StateError>;
    /// Apply `change` to `id` unless it has ended; whether it applied.
    async fn update(&self, id: &str, change: &Change, now: i64) -> Result<bool, StateError>;
    /// Ask the daemon running `id` to cancel it.
    async fn request_cancel(&self, id: &str, now: i64) -> Result<(), StateError>;
    /// The answers delivered to `id` while it waits for them.
    async fn responses(&self, id: &str) -> Result<Option<Value>, StateError>;
    /// Unfinished tasks of `daemon` whose owner asked to cancel them.
    async fn cancel_requests(&self, daemon: &str) -> Result<Vec<String>, StateError>;
    /// `daemon` is alive at `now`.
    async fn heartbeat(&self, daemon: &str, now: i64) -> Result<(), StateError>;
    /// Fail the unfinished tasks of daemons silent since `silent_since` (or gone), other than
    /// `except`; delete tasks expired at `now`, and used states past their time.
    async fn sweep(&self, now: i64, silent_since: i64, except: &str) -> Result<Swept, StateError>;
    /// Record the single-use `nonce` (valid until `expires`); `false` if it was used before.
    async fn use_once(&self, nonce: &str, expires: i64) -> Result<bool, StateError>;
    /// The buckets every daemon of a fleet shares, kept by `daemon`; `None` where the store
    /// serves one daemon (the embedded file), whose buckets stay in its memory.
    fn ledger(&self, daemon: &str) -> Option<Arc<dyn crate::exec::Ledger>> {
        let _ = daemon;
        None
    }
    /// The questions every daemon of a fleet shares, as `daemon` puts and hears them (call it
    /// once: it starts listening); `None` where the store serves one daemon.
    fn board(&self, daemon: &str) -> Option<Shared> {
        let _ = daemon;
        None
    }
    /// The console sessions and sign-in links every daemon of a fleet honours, as `daemon` keeps
    /// them; `None` where the store serves one daemon, whose console keeps them in memory.
    fn sign_ins(&self, daemon: &str) -> Option<Arc<dyn SignIns>> {
        let _ = daemon;
        None
    }
    /// The fleet's audit index, as `daemon` ships to it; `None` where the store serves one
    /// daemon, whose console reads its own file.
    fn audit_index(&self, daemon: &str) -> Option<Arc<dyn AuditIndex>> {
        let _ = daemon;
        None
    }
}

/// A fleet's [`Board`](crate::exec::Board) and what the other daemons say on it.
pub type Shared = (
    Arc<dyn crate::exec::Board>,
    tokio::sync::mpsc::UnboundedReceiver<crate::exec::Notice>,
);

/// Open (creating and migrating) the store `config` names.
pub async fn open(config: &StateStore) -> Result<Arc<dyn Store>, StateError> {
    Ok(match config {
        StateStore::Embedded(path) => Arc::new(Sql(sqlite::Sqlite::open(path).await?)),
        StateStore::Postgres { url, ca_file } => {
            Arc::new(Sql(postgres::Postgres::open(url, ca_file.as_deref()).await?))
        }
    })
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `text` as JSON, or a [`StateError::Corrupt`].
fn json(text: Option<String>) -> Result<Option<Value>, StateError> {
    text.map(|t| serde_json::from_str(&t).map_err(|e| StateError::Corrupt(e.to_string())))
        .transpose()
}

/// The columns every `SELECT` of a task reads, in [`TaskRecord`] order.
const COLUMNS: &str = "id, kind, owner, name, status, message, daemon, created_ms, updated_ms, \
expires_ms, cancel_requested, input_requests, result, error";

/// A row's text columns, as both backends hand them over.
struct Row {
    id: String,
    kind: String,
    owner: String,
    name: String,
    status: String,
    message: Option<String>,
    daemon: String,
    created_ms: i64,
    updated_ms: i64,
    expires_ms: i64,
    cancel_requested: bool,
    input_requests: Option<String>,
    result: Option<String>,
    error: Option<String>,
}

impl Row {
    fn into_record(self) -> Result<TaskRecord, StateError> {
        Ok(TaskRecord {
            kind: TaskKind::parse(&self.kind)?,
            status: self
                .status
                .parse()
                .map_err(|e: toolhost_gate::task::UnknownStatus| {
                    StateError::Corrupt(e.to_string())
                })?,
            input_requests: json(self.input_requests)?,
            result: json(self.result)?,
            error: json(self.error)?,
            id: self.id,
            owner: self.owner,
            name: self.name,
            message: self.message,
            daemon: self.daemon,
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
            expires_ms: self.expires_ms,
            cancel_requested: self.cancel_requested,
        })
    }
}

/// A statement's parameter, whichever backend binds it.
#[derive(Debug, Clone)]
enum Param {
    Int(i64),
    Text(Option<String>),
    Bool(bool),
}

fn text(s: &str) -> Param {
    Param::Text(Some(s.to_owned()))
}

fn opt_json(v: Option<&Value>) -> Param {
    Param::Text(v.map(Value::to_string))
}

/// One statement in SQLite's `?N` spelling (PostgreSQL's `$N` is derived), with its parameters.
struct Statement {
    sql: String,
    params: Vec<Param>,
}
