//! The wasmtime engine shared by all plugins (its configuration and instance pool), and the checks
//! and names used when a component is loaded or inspected.

use wasmtime::component::Component;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, WasmBacktraceDetails};

use super::error::SandboxError;
use super::pool::pooling_config;
use toolhost_call::wit::{GenericTool, Skipped};
use toolhost_config::config::{EngineOptions, PoolOptions};

/// The export every contract plugin provides: `toolhost:plugin@0.1.0` (WASI 0.2).
pub(super) const TOOL_EXPORT: &str = "toolhost:plugin/tool@0.1.0";
/// Or `toolhost:plugin@0.2.0`'s, whose `call` is async (WASI 0.3).
pub(super) const TOOL_EXPORT_V2: &str = "toolhost:plugin/tool@0.2.0";

/// What a component imports and exports, and whether it fits the contract.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Inspection {
    /// Imported interfaces and functions.
    pub imports: Vec<String>,
    /// Exported interfaces and functions.
    pub exports: Vec<String>,
    /// Why it does not load, if it does not.
    pub problem: Option<String>,
    /// The contract it implements (`toolhost:plugin@0.1.0`, or `@0.2.0` for WASI 0.3), if any.
    pub contract: Option<&'static str>,
    /// For a generic component, the tools its exports become.
    pub tools: Vec<GenericTool>,
    /// For a generic component, the exported functions that cannot be tools, and why.
    pub skipped: Vec<Skipped>,
}

/// The two engines: every plugin runs on one of them, chosen when it is compiled.
pub(super) struct Engines {
    /// For WASI 0.2 plugins (most): no concurrency support, so no call pays for it. About 8% of a
    /// served echo call's instructions went to wasmtime's concurrent call path when it was on.
    pub(super) sync: Engine,
    /// For components the first will not take: `async func`, `stream`, `future` (WASI 0.3 and
    /// `toolhost:plugin@0.2.0`, issue 44). A pool of the same size as the first's, reserved apart
    /// (address space, not memory, until instances use it).
    pub(super) concurrent: Engine,
    /// The pool in use by `sync`; `None` when allocating on demand.
    pub(super) pool: Option<PoolOptions>,
}

/// Configure the engines (component model on; GC and stack switching off; exceptions and threads
/// not even compiled in; fuel and epochs on; the component model's async ABI on in the concurrent
/// one only), with the instance pool if one is configured and can be reserved.
pub(super) fn build(options: &EngineOptions) -> Result<Engines, SandboxError> {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .wasm_gc(false)
        .wasm_stack_switching(false)
        .consume_fuel(true)
        .epoch_interruption(true)
        // No wasm backtrace on a trap: a failed call reports only the trap's root cause, and
        // walking and symbolising up to 20 frames cost more than the rest of the call (a trapping
        // echo took 2.2x a normal call's instructions). Nor does `WASMTIME_BACKTRACE_DETAILS` in
        // the daemon's environment get to change how modules compile.
        .wasm_backtrace_max_frames(None)
        .wasm_backtrace_details(WasmBacktraceDetails::Disable)
        .parallel_compilation(true)
        // Map each module's initial memory from an image, copy-on-write, instead of copying its data
        // segments in on every instantiation (wasmtime's default; stated because calls rely on it).
        .memory_init_cow(true);
    let mut concurrent = config.clone();
    concurrent
        .concurrency_support(true)
        .wasm_component_model_async(true);
    config
        .wasm_component_model_async(false)
        .concurrency_support(false);
    let (sync, pool) = pooled(&config, options.pool)?;
    // A pool of its own: one instance of a 0.3 plugin costs what a 0.2 one does to set up.
    let (concurrent, _) = pooled(&concurrent, pool)?;
    Ok(Engines {
        sync,
        concurrent,
        pool,
    })
}

/// An engine of `config` with the instance pool `pool`, or, when the pool cannot be reserved, one
/// that allocates on demand; returns the pool in use.
fn pooled(
    config: &Config,
    pool: Option<PoolOptions>,
) -> Result<(Engine, Option<PoolOptions>), SandboxError> {
    let engine_error = |e: wasmtime::Error| SandboxError::Engine(format!("{e:#}"));
    let Some(p) = pool else {
        return Ok((Engine::new(config).map_err(engine_error)?, None));
    };
    let mut with_pool = config.clone();
    with_pool.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config(&p)));
    match Engine::new(&with_pool) {
        Ok(engine) => Ok((engine, Some(p))),
        Err(e) => {
            // Address space can be capped (ulimit -v, some containers): run, slower, rather than not.
            tracing::warn!(
                instances = p.instances,
                memory_mb = p.memory_bytes >> 20,
                "cannot reserve the instance pool ({e:#}); allocating instances on demand instead, \
                 which makes every call slower (lower `[engine] instances` or `memory-mb`)"
            );
            Ok((Engine::new(config).map_err(engine_error)?, None))
        }
    }
}

pub(super) fn check_header(bytes: &[u8]) -> Result<(), SandboxError> {
    match bytes.get(..8) {
        Some([0, b'a', b's', b'm', 1, 0, 0, 0]) => Err(SandboxError::CoreModule),
        Some([0, b'a', b's', b'm', _, _, 1, 0]) => Ok(()),
        Some([0, b'a', b's', b'm', ..]) => Err(SandboxError::Invalid(
            "unsupported WebAssembly binary version".into(),
        )),
        _ => Err(SandboxError::Invalid(format!(
            "the file does not start with the WebAssembly magic bytes ({} bytes long)",
            bytes.len()
        ))),
    }
}

pub(super) fn names(component: &Component, imports: bool) -> Vec<String> {
    let (ty, engine) = (component.component_type(), component.engine());
    if imports {
        ty.imports(engine).map(|(n, _)| n.to_string()).collect()
    } else {
        ty.exports(engine).map(|(n, _)| n.to_string()).collect()
    }
}

pub(super) fn list_or_none(v: Vec<String>) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Turn wasmtime's link error into a sentence naming the import the host does not provide.
pub(super) fn describe_link_error(e: &wasmtime::Error) -> String {
    let text = format!("{e:#}");
    if text.contains("wasi:sockets") {
        format!(
            "{text} (raw sockets are not available to plugins; use wasi:http with a network grant)"
        )
    } else {
        format!("it imports something the host does not provide: {text}")
    }
}
