//! What a call gives back, as plain types: the guest's answer or why there is none, and what the
//! call cost; and the service a caller lends a call for the tool calls its plugin makes
//! ([`NestedCalls`]), whose answers are these same types. No wasmtime type appears here.

use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use toolhost_call::tool::Hints;

/// A tool spec as the guest declared it, before the registry checks it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GuestSpec {
    /// Declared name.
    pub name: String,
    /// Declared title.
    pub title: Option<String>,
    /// Declared description.
    pub description: String,
    /// Input schema, as JSON text.
    pub input_schema: String,
    /// Output schema, as JSON text.
    pub output_schema: Option<String>,
    /// Declared hints.
    pub hints: Hints,
    /// Declared permission subject.
    pub permission_subject: Option<String>,
}

/// A successful guest result.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestOutput {
    /// Text for the model.
    pub content: String,
    /// Structured JSON text.
    pub structured: Option<String>,
}

/// A failure the guest reported itself.
#[derive(Debug, Clone, PartialEq)]
pub enum GuestError {
    /// The input is wrong in a way the schema could not express.
    InvalidInput(String),
    /// The tool ran and failed.
    Failed(String),
}

/// Why the sandbox ended a call before the guest answered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The wall-clock deadline passed.
    #[error("timed out after {} ms", .0.as_millis())]
    Timeout(Duration),
    /// The fuel budget ran out.
    #[error("ran out of fuel after {0} units")]
    OutOfFuel(u64),
    /// The guest wanted more memory than it may have.
    #[error("hit its memory limit of {limit} bytes (it wanted {wanted})")]
    MemoryLimit {
        /// The limit.
        limit: usize,
        /// What it asked for.
        wanted: usize,
    },
    /// The guest trapped; the message includes what it printed to stderr last, e.g. a panic message.
    #[error("crashed: {0}")]
    Trap(String),
    /// The caller cancelled.
    #[error("was cancelled")]
    Cancelled,
    /// The host could not set up the call.
    #[error("could not start: {0}")]
    Setup(String),
}

/// What a call answered, or why it has no answer: a [`RunReport`]'s result for a tool call.
pub(crate) type CallResult = Result<Result<GuestOutput, GuestError>, RunError>;

/// Everything known about a finished call.
#[derive(Debug)]
pub struct RunReport<T> {
    /// The guest's answer, or why there is none.
    pub result: Result<T, RunError>,
    /// Fuel consumed.
    pub fuel_used: u64,
    /// Peak linear memory, in bytes.
    pub peak_memory: u64,
    /// Captured guest stdout (capped).
    pub stdout: String,
    /// Captured guest stderr (capped).
    pub stderr: String,
    /// Bytes of stdout/stderr dropped past the cap.
    pub stdio_dropped: u64,
    /// Wall-clock time, instantiation included.
    pub elapsed: Duration,
    /// The part of `elapsed` spent before the guest ran: the store, the WASI context, instantiation.
    pub instantiate: Duration,
    /// The part of `instantiate` that is wasmtime's instantiation alone (a pool slot, the instance).
    pub instance: Duration,
    /// Dropping the store after the call (not in `elapsed`): wasmtime's slot reset and the WASI
    /// context. With `instance`, what any fresh instance per call costs: the floor under toolhost's own work.
    pub store_drop: Duration,
    /// Why the host refused or failed the plugin's outgoing requests (the guest got only a
    /// `wasi:http` code), so that the model can be told; the first few, in order.
    pub network: Vec<String>,
    /// Paths the plugin reached that no directory grant covers, each with the grant that would
    /// cover it (the guest got only EACCES); the first few, in order.
    pub files: Vec<String>,
}

impl<T> RunReport<T> {
    /// A call that never reached the guest.
    pub(crate) fn refused(why: RunError) -> Self {
        Self::without_guest(Err(why))
    }

    /// A call answered before any guest ran.
    pub(crate) fn without_guest(result: Result<T, RunError>) -> Self {
        Self {
            result,
            fuel_used: 0,
            peak_memory: 0,
            stdout: String::new(),
            stderr: String::new(),
            stdio_dropped: 0,
            elapsed: Duration::ZERO,
            instantiate: Duration::ZERO,
            instance: Duration::ZERO,
            store_drop: Duration::ZERO,
            network: Vec::new(),
            files: Vec::new(),
        }
    }
}

/// `From` a contract's `tool-spec`, `tool-output` and `tool-error` (the same types in 0.1 and 0.2,
/// generated twice).
macro_rules! contract_from {
    ($($types:ident),+) => {$(
        impl From<$types::ToolOutput> for GuestOutput {
            fn from(o: $types::ToolOutput) -> Self {
                Self {
                    content: o.content,
                    structured: o.structured,
                }
            }
        }

        impl From<$types::ToolError> for GuestError {
            fn from(e: $types::ToolError) -> Self {
                match e {
                    $types::ToolError::InvalidInput(m) => Self::InvalidInput(m),
                    $types::ToolError::Failed(m) => Self::Failed(m),
                }
            }
        }

        impl From<$types::ToolSpec> for GuestSpec {
            fn from(s: $types::ToolSpec) -> Self {
                use $types::ToolHints as H;
                Self {
                    name: s.name,
                    title: s.title,
                    description: s.description,
                    input_schema: s.input_schema,
                    output_schema: s.output_schema,
                    hints: Hints {
                        read_only: s.hints.contains(H::READ_ONLY),
                        destructive: s.hints.contains(H::DESTRUCTIVE),
                        idempotent: s.hints.contains(H::IDEMPOTENT),
                        open_world: s.hints.contains(H::OPEN_WORLD),
                    },
                    permission_subject: s.permission_subject,
                }
            }
        }
    )+};
}

use super::bindings::toolhost::plugin::types as v1_types;
use super::bindings::v2::toolhost::plugin::types as v2_types;
contract_from!(v1_types, v2_types);

/// Why a nested call returned no output: the host's error kind and the message a model would get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NestedFailure {
    /// The error kind's wire name (`denied`, `unknown_tool`, `timeout`, ...).
    pub kind: String,
    /// What went wrong and what to try.
    pub message: String,
}

/// The host service that runs a plugin's nested calls, lent by the caller for one call.
pub trait NestedCalls: Send + Sync {
    /// The tools the calling call's caller may see, as they are listed to it.
    fn tools(&self) -> Vec<GuestSpec>;

    /// Run `tool` with `input` (JSON text) through every stage, stopped by `cancel` and ended by
    /// `by` (the calling call's deadline) at the latest. Runs to its record even when the future
    /// is dropped.
    fn call(
        &self,
        tool: String,
        input: String,
        cancel: CancellationToken,
        by: Instant,
    ) -> BoxFuture<'static, Result<GuestOutput, NestedFailure>>;
}
