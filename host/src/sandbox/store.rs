//! The store of one call, from its creation to its drop: fuel, memory and epoch limits applied, the
//! guest raced against its deadline and the caller's cancellation, the report read off the store.
//! Everything in it is owned, so that a call can take it to a thread of its own ([`super::thread`]).

use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::component::{Instance, InstancePre, ResourceTableError};
use wasmtime::{Engine, Store, Trap, UpdateDeadline};

use super::bindings::{Plugin as PluginWorld, PluginPre, v2};
use super::budget::BudgetExhausted;
use super::limiter::MemoryLimitHit;
use super::output::CappedOutput;
use super::report::{RunError, RunReport};
use super::state::State;
use super::ticker::Running;
use toolhost_gate::grants::Limits;

/// The most the host copies out of a guest in one value (a result, or an argument to a host call):
/// the host allocates what it copies, so a guest must not be able to make it allocate without bound.
/// Results under it are cut to the output cap afterwards; above it the call fails.
const MAX_TRANSFER: usize = 128 << 20;

/// The most handles (open files, streams, pollables, HTTP requests) one call may hold at once. Open
/// files are the daemon's own descriptors, shared by every call: one call must not exhaust them.
const MAX_HANDLES: usize = 1024;

/// A pre-linked component that makes a fresh instance in a store: the contract's bindings, or a
/// plain instance for a generic plugin.
pub(super) trait Instantiate {
    type Instance;
    async fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<Self::Instance>;
    /// The engine it was compiled for, which the store must be made on.
    fn engine(&self) -> &Engine;
}

impl Instantiate for PluginPre<State> {
    type Instance = PluginWorld;
    async fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<PluginWorld> {
        self.instantiate_async(store).await
    }
    fn engine(&self) -> &Engine {
        self.engine()
    }
}

impl Instantiate for v2::PluginPre<State> {
    type Instance = v2::Plugin;
    async fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<v2::Plugin> {
        self.instantiate_async(store).await
    }
    fn engine(&self) -> &Engine {
        self.engine()
    }
}

impl Instantiate for InstancePre<State> {
    type Instance = Instance;
    async fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<Instance> {
        self.instantiate_async(store).await
    }
    fn engine(&self) -> &Engine {
        self.engine()
    }
}

/// A call's fresh store (its state holds each capability, prepared), its limits and stop signals.
/// Made before a call goes to its own thread, so that what travels there is the store's pointer.
pub(super) struct FreshStore {
    pub(super) store: Store<State>,
    /// The call's limits, already lowered to the caller's caps.
    pub(super) limits: Limits,
    pub(super) cancel: CancellationToken,
    /// When the call began (its deadline counts from here).
    pub(super) started: Instant,
    pub(super) stdout: CappedOutput,
    pub(super) stderr: CappedOutput,
    /// Keeps the epoch moving while the store lives.
    pub(super) ticking: Running,
}

impl FreshStore {
    /// Apply the limits, instantiate `pre` in the store, run `body`, and throw the store away.
    pub(super) async fn run<P: Instantiate, T>(
        self,
        pre: &P,
        body: impl AsyncFnOnce(&mut Store<State>, P::Instance) -> wasmtime::Result<T>,
    ) -> RunReport<T> {
        let Self {
            mut store,
            limits,
            cancel,
            started,
            stdout,
            stderr,
            ticking,
        } = self;
        store.limiter(|s| &mut s.limiter);
        store.data_mut().table.set_max_capacity(MAX_HANDLES);
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

        let (mut instantiate, mut instance) = Default::default();
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
                        Ok(Err(e)) => Err(classify(&e, &limits, fuel)),
                    },
                }
            }
        };
        let fuel_used = fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let peak_memory = store.data().limiter.peak as u64;
        let network = store.data().net.take_notes();
        let files = store.data_mut().take_file_notes();
        let (out, out_dropped) = stdout.take();
        let (err, err_dropped) = stderr.take();
        let result = result.map_err(|e| match e {
            RunError::Trap(msg) => RunError::Trap(with_stderr_tail(msg, &err)),
            other => other,
        });
        let elapsed = started.elapsed();
        let dropping = Instant::now();
        drop(store);
        drop(ticking);
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
            files,
        }
    }
}

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
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => return RunError::OutOfFuel(fuel),
        Some(Trap::Interrupt) => return RunError::Timeout(limits.timeout),
        Some(Trap::StackOverflow) => {
            return RunError::Trap("stack overflow (unbounded recursion?)".into());
        }
        // Rust and C guests keep a shadow stack in linear memory: deep recursion runs it off the bottom.
        Some(Trap::MemoryOutOfBounds) => return RunError::Trap(
            "out of bounds memory access (in Rust or C plugins, usually a stack overflow from deep recursion)".into(),
        ),
        Some(t) => return RunError::Trap(t.to_string()),
        None => {}
    }
    // The root cause, not the whole chain (a host call's error may carry its context).
    let cause = e.root_cause().to_string();
    // wasmtime's error for this is private (and no trap): its message is all there is to know it by.
    if cause.contains("fuel allocated for hostcalls has been exhausted") {
        return RunError::Trap(format!(
            "the plugin tried to hand the host more than {} MiB in one value (a result or an argument \
             to a host call); the host refuses transfers that large",
            MAX_TRANSFER >> 20
        ));
    }
    RunError::Trap(first_line(&cause))
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
