//! The engine and linker shared by all plugins, the epoch ticker, and loading components.

use std::fs::Metadata;
use std::sync::Arc;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::p2::bindings::{cli, clocks, random};
use wasmtime_wasi::random::{WasiRandom, WasiRandomView};

use super::SandboxError;
use super::bindings::Plugin as PluginWorld;
use super::budget::FileBudget;
use super::cache::CompileCache;
use super::digests::FileDigests;
use super::plugin::{Compiler, Kind};
use super::pool::pooling_config;
use super::state::State;
use super::ticker::Ticker;
use toolhost_policy::config::{EngineOptions, PoolOptions};
use toolhost_policy::wit::{GenericTool, Skipped};

/// The export every plugin must provide.
pub(super) const TOOL_EXPORT: &str = "toolhost:plugin/tool@0.1.0";

/// The engine, the linker with exactly the host interfaces plugins may import, and the epoch ticker.
pub struct Sandbox {
    pub(crate) engine: Engine,
    /// The linker and the compile cache, shared with the threads that load plugins.
    pub(crate) compiler: Compiler,
    /// Plugin files' hashes, by what `stat` says of them.
    digests: FileDigests,
    /// Advances the epoch while guests run.
    pub(crate) ticker: Ticker,
    /// The pool in use; `None` when allocating on demand (configured so, or the pool could not be reserved).
    pool: Option<PoolOptions>,
    /// Descriptors all calls together may hold.
    pub(crate) files: Arc<FileBudget>,
}

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

impl Sandbox {
    /// Configure the engine (component model on; GC and stack switching off; exceptions, threads and
    /// component-model-async not even compiled in; fuel and epochs on), link the host interfaces, start
    /// the ticker.
    pub fn new(options: &EngineOptions) -> Result<Self, SandboxError> {
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
        let linker = link(&engine).map_err(|e| SandboxError::Engine(format!("{e:#}")))?;
        let cache = match &options.cache_dir {
            Some(dir) => match CompileCache::open(dir, &engine) {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "compile cache disabled");
                    None
                }
            },
            None => None,
        };
        let ticking = engine.clone();
        let ticker = Ticker::start(move || ticking.increment_epoch())
            .map_err(|e| SandboxError::Engine(format!("cannot start the epoch ticker: {e}")))?;
        let digests = FileDigests::open(cache.as_ref());
        Ok(Self {
            engine: engine.clone(),
            digests,
            compiler: Compiler {
                engine,
                linker: Arc::new(linker),
                cache: cache.map(Arc::new),
            },
            ticker,
            pool,
            files: FileBudget::for_process(options.open_files),
        })
    }

    /// The instance pool in use, if any.
    pub fn pool(&self) -> Option<PoolOptions> {
        self.pool
    }

    /// The descriptor budget of all calls together: (held now, limit).
    pub fn open_files(&self) -> (usize, usize) {
        (self.files.used(), self.files.limit())
    }

    /// The digest (`sha256:<hex>`) of the plugin file `meta` describes, without reading it, if it
    /// is unchanged since it was last hashed.
    pub fn known_digest(&self, meta: &Metadata) -> Option<String> {
        self.digests.get(meta)
    }

    /// Remember the digest (`sha256:<hex>`) of a plugin file read between `before` and `after` (its
    /// metadata then; a file that changed meanwhile is not remembered).
    pub fn remember_digest(&self, before: &Metadata, after: &Metadata, sha256: &str) {
        self.digests.remember(before, after, sha256);
    }

    /// Forget the files no reload asked about since the last save, and keep the memo of hashes
    /// for a restart.
    pub fn save_digests(&self) {
        self.digests.save(self.compiler.cache.as_deref());
    }

    /// How instances are allocated, in a few words (for logs and benchmarks).
    pub fn describe_engine(&self) -> String {
        match self.pool {
            Some(p) => format!(
                "pooling allocator ({} instances, {} MiB memory slots), copy-on-write memory images",
                p.instances,
                p.memory_bytes >> 20
            ),
            None => "on-demand allocation, copy-on-write memory images".into(),
        }
    }

    /// What a component file imports and exports, and whether it would load.
    pub fn inspect(&self, bytes: &[u8]) -> Result<Inspection, SandboxError> {
        check_header(bytes)?;
        let component = Component::from_binary(&self.engine, bytes)
            .map_err(|e| SandboxError::Invalid(format!("{e:#}")))?;
        let (problem, (tools, skipped)) = match self.compiler.link(&component, bytes) {
            Err(e) => (Some(e.to_string()), Default::default()),
            Ok(Kind::Contract(_)) => (None, Default::default()),
            Ok(Kind::Generic(g)) => (None, (g.tools.clone(), g.skipped.clone())),
        };
        Ok(Inspection {
            imports: names(&component, &self.engine, true),
            exports: names(&component, &self.engine, false),
            problem,
            tools,
            skipped,
        })
    }
}

/// Link exactly the interfaces a plugin may import: the contract's `host`, WASI 0.2 io, clocks,
/// random and cli here, then each capability's own: files (`wasi:filesystem`, behind the guard) and
/// network (`wasi:http`; many toolchains import it by default, and a plugin without a network grant
/// gets every request refused by the send hook). Raw sockets are deliberately absent.
fn link(engine: &Engine) -> wasmtime::Result<Linker<State>> {
    let mut l = Linker::<State>::new(engine);
    wasmtime_wasi_io::add_to_linker_async(&mut l)?;
    clocks::wall_clock::add_to_linker::<State, WasiClocks>(&mut l, State::clocks)?;
    clocks::monotonic_clock::add_to_linker::<State, WasiClocks>(&mut l, State::clocks)?;
    random::random::add_to_linker::<State, WasiRandom>(&mut l, State::random)?;
    random::insecure::add_to_linker::<State, WasiRandom>(&mut l, State::random)?;
    random::insecure_seed::add_to_linker::<State, WasiRandom>(&mut l, State::random)?;
    cli::exit::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::environment::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::stdin::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::stdout::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::stderr::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::terminal_input::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::terminal_output::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::terminal_stdin::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::terminal_stdout::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    cli::terminal_stderr::add_to_linker::<State, WasiCli>(&mut l, State::cli)?;
    PluginWorld::add_to_linker::<State, HasSelf<State>>(&mut l, |s| s)?;
    super::files::add_to_linker(&mut l)?;
    super::network::add_to_linker(&mut l)?;
    Ok(l)
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
