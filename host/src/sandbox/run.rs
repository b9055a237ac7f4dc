//! One call in a fresh store: instantiate from the cached `InstancePre`, apply fuel, memory and epoch
//! limits, race the call against its deadline and the caller's cancellation, then throw the store away.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::component::{Instance, InstancePre, ResourceTable, ResourceTableError};
use wasmtime::{Store, Trap, UpdateDeadline};

use super::bindings::exports::toolhost::plugin::tool::ToolError;
use super::bindings::{Plugin as PluginWorld, PluginPre};
use super::budget::BudgetExhausted;
use super::engine::Sandbox;
use super::files::{self, OpenFiles};
use super::network;
use super::output::CappedOutput;
use super::plugin::{Kind, Plugin};
use super::prepared::{CallIo, Prepared};
use super::state::{MemoryLimitHit, MemoryLimiter, State};
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
        input: &str,
        io: CallIo<'_>,
    ) -> RunReport<Result<GuestOutput, GuestError>> {
        let kind = match self.code(&prepared.plugin).await {
            Ok(kind) => kind,
            Err(e) => return RunReport::refused(RunError::Setup(e.to_string())),
        };
        let report = match kind {
            Kind::Contract(pre) => {
                self.run(prepared, io, pre, async |store, p| {
                    let r = p
                        .toolhost_plugin_tool()
                        .call_call(store, tool, input)
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
            Kind::Generic(generic) => self.call_generic(prepared, generic, tool, input, io).await,
        };
        super::network::redact_report(report, prepared.network.redactor())
    }

    /// One store for `prepared`: each capability prepared for the call, the limits applied, `body`
    /// raced against the deadline and the caller's cancellation.
    pub(super) async fn run<P: Instantiate, T>(
        &self,
        prepared: &Prepared,
        io: CallIo<'_>,
        pre: &P,
        body: impl AsyncFnOnce(&mut Store<State>, P::Instance) -> wasmtime::Result<T>,
    ) -> RunReport<T> {
        let started = Instant::now();
        // Deadlines and yielding need the epoch to move while this store lives.
        let _ticking = self.ticker.running();
        let capped = prepared.limits.capped(io.caps);
        let (limits, cancel) = (&capped, io.cancel);
        let stdout = CappedOutput::new(limits.stdio_bytes);
        let stderr = CappedOutput::new(limits.stdio_bytes);
        let open = OpenFiles::new(self.files.clone());
        let wasi = files::prepare(&prepared.grants, io.files, open, &stdout, &stderr);
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
            table: {
                let mut table = ResourceTable::new();
                table.set_max_capacity(MAX_HANDLES);
                table
            },
            limiter: MemoryLimiter::new(limits.memory_bytes),
            progress: io.progress,
            plugin: prepared.name.clone(),
            log_lines: 0,
            progress_reports: Default::default(),
            http,
            net,
            files,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.set_hostcall_fuel(MAX_TRANSFER);
        let fuel = limits.fuel;
        let setup = store.set_fuel(fuel);
        let deadline = started + limits.timeout;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });

        let (mut instantiate, mut instance) = (Duration::ZERO, Duration::ZERO);
        let result = match setup {
            Err(e) => Err(RunError::Setup(format!("{e:#}"))),
            Ok(()) => {
                let work = async {
                    let before = Instant::now();
                    let made = pre.instantiate(&mut store).await?;
                    instance = before.elapsed();
                    instantiate = started.elapsed();
                    body(&mut store, made).await
                };
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => Err(RunError::Cancelled),
                    r = tokio::time::timeout(limits.timeout, work) => match r {
                        Err(_) => Err(RunError::Timeout(limits.timeout)),
                        Ok(Ok(v)) => Ok(v),
                        Ok(Err(e)) => Err(classify(&e, limits, fuel)),
                    },
                }
            }
        };
        let fuel_used = fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let peak_memory = store.data().limiter.peak as u64;
        let network = store.data().net.take_notes();
        let (out, out_dropped) = stdout.take();
        let (err, err_dropped) = stderr.take();
        let result = result.map_err(|e| match e {
            RunError::Trap(msg) => RunError::Trap(with_stderr_tail(msg, &err)),
            other => other,
        });
        let elapsed = started.elapsed();
        let dropping = Instant::now();
        drop(store);
        RunReport {
            result,
            fuel_used,
            peak_memory,
            stdout: out,
            stderr: err,
            stdio_dropped: out_dropped + err_dropped,
            elapsed,
            instantiate,
            instance,
            store_drop: dropping.elapsed(),
            network,
        }
    }
}

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

/// The most the host copies out of a guest in one value (a result, or an argument to a host call):
/// the host allocates what it copies, so a guest must not be able to make it allocate without bound.
/// Results under it are cut to the output cap afterwards; above it the call fails.
const MAX_TRANSFER: usize = 128 << 20;

/// The most handles (open files, streams, pollables, HTTP requests) one call may hold at once. Open
/// files are the daemon's own descriptors, shared by every call: one call must not exhaust them.
const MAX_HANDLES: usize = 1024;

/// Map a wasmtime error to the reason a model and an operator can act on.
fn classify(e: &wasmtime::Error, limits: &Limits, fuel: u64) -> RunError {
    if let Some(hit) = e.downcast_ref::<MemoryLimitHit>() {
        return RunError::MemoryLimit {
            limit: hit.limit,
            wanted: hit.wanted,
        };
    }
    if let Some(wasmtime_wasi::I32Exit(code)) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return RunError::Trap(format!(
            "the plugin called exit with exit status {code} instead of returning a result"
        ));
    }
    if let Some(spent) = e.downcast_ref::<BudgetExhausted>() {
        return RunError::Trap(spent.to_string());
    }
    if let Some(ResourceTableError::Full) = e.downcast_ref::<ResourceTableError>() {
        return RunError::Trap(format!(
            "the plugin held more than {MAX_HANDLES} handles (open files, streams, pollables) at once"
        ));
    }
    // The root cause, not the whole chain: wasmtime wraps it in a multi-line wasm backtrace.
    let cause = e.root_cause().to_string();
    // wasmtime's error for this is private: its message is all there is to know it by.
    if cause.contains("fuel allocated for hostcalls has been exhausted") {
        return RunError::Trap(format!(
            "the plugin tried to hand the host more than {} MiB in one value (a result or an argument \
             to a host call); the host refuses transfers that large",
            MAX_TRANSFER >> 20
        ));
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => RunError::OutOfFuel(fuel),
        Some(Trap::Interrupt) => RunError::Timeout(limits.timeout),
        Some(Trap::StackOverflow) => RunError::Trap("stack overflow (unbounded recursion?)".into()),
        // Rust and C guests keep a shadow stack in linear memory: deep recursion runs it off the bottom.
        Some(Trap::MemoryOutOfBounds) => RunError::Trap(
            "out of bounds memory access (in Rust or C plugins, usually a stack overflow from deep recursion)".into(),
        ),
        Some(t) => RunError::Trap(t.to_string()),
        None => RunError::Trap(first_line(&cause)),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

/// A Rust guest's panic message goes to stderr before the trap: put its last lines next to the trap.
fn with_stderr_tail(msg: String, stderr: &str) -> String {
    let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
    if tail.is_empty() {
        return msg;
    }
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    format!("{msg}; guest stderr: {}", tail.join(" | "))
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
