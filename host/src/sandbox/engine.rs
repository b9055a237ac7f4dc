//! The wasmtime engine shared by all plugins (its configuration and instance pool), and the checks
//! and names used when a component is loaded or inspected.

use wasmtime::component::Component;
use wasmtime::{Config, Engine, InstanceAllocationStrategy};

use super::error::SandboxError;
use super::pool::pooling_config;
use toolhost_policy::config::{EngineOptions, PoolOptions};
use toolhost_policy::wit::{GenericTool, Skipped};

/// The export every plugin must provide.
pub(super) const TOOL_EXPORT: &str = "toolhost:plugin/tool@0.1.0";

/// What a component imports and exports, and whether it fits the contract.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Inspection {
    /// Imported interfaces and functions.
    pub imports: Vec<String>,
    /// Exported interfaces and functions.
    pub exports: Vec<String>,
    /// Why it does not load, if it does not.
    pub problem: Option<String>,
    /// For a generic component, the tools its exports become.
    pub tools: Vec<GenericTool>,
    /// For a generic component, the exported functions that cannot be tools, and why.
    pub skipped: Vec<Skipped>,
}

/// Configure the engine (component model on; GC and stack switching off; exceptions, threads and
/// component-model-async not even compiled in; fuel and epochs on), with the instance pool if one
/// is configured and can be reserved; returns the pool in use.
pub(super) fn build(
    options: &EngineOptions,
) -> Result<(Engine, Option<PoolOptions>), SandboxError> {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .wasm_gc(false)
        .wasm_stack_switching(false)
        .consume_fuel(true)
        .epoch_interruption(true)
        .parallel_compilation(true)
        // Map each module's initial memory from an image, copy-on-write, instead of copying its data
        // segments in on every instantiation (wasmtime's default; stated because calls rely on it).
        .memory_init_cow(true);
    let mut pool = options.pool;
    let engine = match &options.pool {
        None => Engine::new(&config),
        Some(p) => {
            let mut pooled = config.clone();
            pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config(p)));
            Engine::new(&pooled).or_else(|e| {
                // Address space can be capped (ulimit -v, some containers): run, slower, rather than not.
                tracing::warn!(
                    instances = p.instances,
                    memory_mb = p.memory_bytes >> 20,
                    "cannot reserve the instance pool ({e:#}); allocating instances on demand instead, \
                     which makes every call slower (lower `[engine] instances` or `memory-mb`)"
                );
                pool = None;
                Engine::new(&config)
            })
        }
    }
    .map_err(|e| SandboxError::Engine(format!("{e:#}")))?;
    Ok((engine, pool))
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

pub(super) fn names(component: &Component, engine: &Engine, imports: bool) -> Vec<String> {
    let ty = component.component_type();
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
