//! One call: what the guest may do prepared from its grants, then a fresh store
//! ([`FreshStore`](super::store::FreshStore)) on the calling task, or on a thread of its own when the
//! guest may block in file operations ([`super::thread`]); and what the caller gets back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre, ResourceTable};

use super::bindings::exports::toolhost::plugin::tool::ToolError;
use super::bindings::{Plugin as PluginWorld, PluginPre};
use super::engine::Sandbox;
use super::files::{self, OpenFiles};
use super::network;
use super::output::CappedOutput;
use super::plugin::{Kind, Plugin};
use super::prepared::{CallIo, Prepared};
use super::state::{MemoryLimiter, State};
use super::store::FreshStore;
use super::thread::{self, Abandoned};
use toolhost_policy::grants::{Grants, Limits};
use toolhost_policy::tool::Hints;

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
}

impl Sandbox {
    /// Ask a contract plugin which tools it provides, with no grants at all.
    pub async fn describe(
        &self,
        plugin: Plugin,
        name: &str,
        limits: &Limits,
    ) -> RunReport<Vec<GuestSpec>> {
        let never = CancellationToken::new();
        let bare = self.prepare(plugin, name, Grants::default(), *limits);
        let io = CallIo {
            files: Arc::default(),
            progress: None,
            cancel: &never,
            caps: Default::default(),
        };
        let Ok(Kind::Contract(pre)) = self.code(&bare.plugin).await else {
            return RunReport::refused(RunError::Setup(
                "a generic plugin has no describe export".into(),
            ));
        };
        self.run(&bare, io, pre, async |store, p| {
            let specs = p.toolhost_plugin_tool().call_describe(store).await?;
            Ok(specs.into_iter().map(GuestSpec::from).collect())
        })
        .await
    }

    /// Run `tool` with `input` (JSON text) in a fresh store with the plugin's grants and limits.
    /// For a generic plugin, `tool` is the function's [`Export::path`](toolhost_policy::wit::Export::path) and `input` is read into
    /// its arguments exactly.
    pub async fn call(
        &self,
        prepared: &Prepared,
        tool: &str,
        input: String,
        io: CallIo<'_>,
    ) -> RunReport<Result<GuestOutput, GuestError>> {
        let kind = match self.code(&prepared.plugin).await {
            Ok(kind) => kind,
            Err(e) => return RunReport::refused(RunError::Setup(e.to_string())),
        };
        let report = match kind {
            Kind::Contract(pre) => {
                let tool = tool.to_owned();
                self.run(prepared, io, pre, async move |store, p| {
                    let r = p
                        .toolhost_plugin_tool()
                        .call_call(store, &tool, &input)
                        .await?;
                    Ok(r.map(|o| GuestOutput {
                        content: o.content,
                        structured: o.structured,
                    })
                    .map_err(|e| match e {
                        ToolError::InvalidInput(m) => GuestError::InvalidInput(m),
                        ToolError::Failed(m) => GuestError::Failed(m),
                    }))
                })
                .await
            }
            Kind::Generic(generic) => self.call_generic(prepared, generic, tool, &input, io).await,
        };
        super::network::redact_report(report, prepared.network.redactor())
    }

    /// One call of `prepared`: each capability prepared for it, then its store ([`FreshStore`]) on
    /// this task, or on a thread of its own when the guest may block in file operations.
    pub(super) async fn run<P, T, B>(
        &self,
        prepared: &Prepared,
        io: CallIo<'_>,
        pre: &P,
        body: B,
    ) -> RunReport<T>
    where
        P: Instantiate + Clone + Send + 'static,
        T: Send + 'static,
        B: AsyncFnOnce(&mut Store<State>, P::Instance) -> wasmtime::Result<T> + Send + 'static,
    {
        let started = Instant::now();
        // Deadlines and yielding need the epoch to move while this store lives.
        let ticking = self.ticker.running();
        let limits = prepared.limits.capped(io.caps);
        let stdout = CappedOutput::new(limits.stdio_bytes);
        let stderr = CappedOutput::new(limits.stdio_bytes);
        // Only granted directories give a guest anything to block on.
        let apart = !prepared.grants.dirs.is_empty();
        let open = OpenFiles::new(self.files.clone());
        let wasi = files::prepare(&prepared.grants, io.files, open, apart, &stdout, &stderr);
        let (wasi, files) = match wasi {
            Ok(w) => w,
            Err(e) => {
                return RunReport {
                    elapsed: started.elapsed(),
                    instantiate: started.elapsed(),
                    ..RunReport::refused(RunError::Setup(e))
                };
            }
        };
        let (http, net) = network::prepare(&prepared.network, &self.files);
        let state = State {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(limits.memory_bytes),
            progress: io.progress,
            plugin: prepared.name.clone(),
            log_lines: 0,
            progress_reports: Default::default(),
            http,
            net,
            files,
        };
        let fresh = FreshStore {
            store: Store::new(&self.engine, state),
            limits,
            cancel: io.cancel.clone(),
            started,
            stdout,
            stderr,
            ticking,
        };
        if !apart {
            return fresh.run(pre, body).await;
        }
        let (pre, runtime) = (pre.clone(), tokio::runtime::Handle::current());
        let work = move || runtime.block_on(fresh.run(&pre, body));
        let cancel = io.cancel.clone();
        let deadline = tokio::time::Instant::from_std(started + limits.timeout);
        let give_up = async move {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                () = cancel.cancelled() => {}
            }
            // The store stops the guest at either; only a thread stuck in the kernel is still busy.
            tokio::time::sleep(GRACE).await;
        };
        match thread::apart(work, give_up).await {
            Ok(report) => report,
            Err(Abandoned) => {
                let why = if io.cancel.is_cancelled() {
                    RunError::Cancelled
                } else {
                    RunError::Timeout(limits.timeout)
                };
                tracing::warn!(plugin = %prepared.name, "the call's thread is stuck in a file operation; answered without it");
                RunReport {
                    elapsed: started.elapsed(),
                    ..RunReport::refused(why)
                }
            }
        }
    }
}

/// How long after its deadline (or its cancellation) a call on its own thread is waited for.
const GRACE: Duration = Duration::from_secs(1);

impl<T> RunReport<T> {
    /// A call that never reached the guest.
    pub(super) fn refused(why: RunError) -> Self {
        Self::without_guest(Err(why))
    }

    /// A call answered before any guest ran.
    pub(super) fn without_guest(result: Result<T, RunError>) -> Self {
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
        }
    }
}

/// A pre-linked component that makes a fresh instance in a store: the contract's bindings, or a
/// plain instance for a generic plugin.
pub(super) trait Instantiate {
    type Instance;
    async fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<Self::Instance>;
}

impl Instantiate for PluginPre<State> {
    type Instance = PluginWorld;
    async fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<PluginWorld> {
        self.instantiate_async(store).await
    }
}

impl Instantiate for InstancePre<State> {
    type Instance = Instance;
    async fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<Instance> {
        self.instantiate_async(store).await
    }
}

impl From<super::bindings::toolhost::plugin::types::ToolSpec> for GuestSpec {
    fn from(s: super::bindings::toolhost::plugin::types::ToolSpec) -> Self {
        use super::bindings::toolhost::plugin::types::ToolHints as H;
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
