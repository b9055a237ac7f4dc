//! The sandbox: wasmtime engine, compiled plugins, and one fresh, limited store per call.
//!
//! Every wasmtime and WASI type stays inside this module, and [`Sandbox`]'s one `impl` below is its
//! whole surface. A plugin is compiled once ([`Sandbox::load`]) and bound to its plain grants and
//! limits once ([`Sandbox::prepare`], a [`Prepared`]); a call then brings only its tool, input and
//! [`CallIo`], and gets back a plain [`RunReport`]. What a plugin may do is a fixed set of
//! capabilities, each one module implementing the `Capability` trait (`capability`) with its phases:
//! linked once, bound per plugin at load (a setting it cannot use fails the load, naming it),
//! prepared per call into its piece of the store's state (`state`, the one place that lists them):
//! `files` (files and env: the one place a WASI context is built), `network` (wasi:http) and
//! `reporting` (the contract's log and progress); `secrets` binds the named secrets the three share
//! and redacts them from what leaves. Host services reach a capability as traits the sandbox
//! defines, lent by the call in [`CallIo`] (progress today). Settings were validated when the
//! config was loaded.

mod bindings;
mod budget;
mod cache;
mod calling;
mod capability;
mod digests;
mod engine;
mod error;
mod files;
mod generic;
mod limiter;
pub mod network;
mod output;
mod plugin;
mod pool;
mod prepared;
mod report;
mod reporting;
mod run;
mod secrets;
mod state;
mod store;
mod thread;
mod ticker;
mod updates;

use std::fs::Metadata;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wasmtime::Engine;
use wasmtime::component::Linker;

pub use self::capability::{CallIo, CapabilityError};
pub use self::engine::Inspection;
pub use self::error::SandboxError;
pub use self::plugin::Plugin;
pub use self::prepared::Prepared;
pub use self::report::{
    GuestError, GuestOutput, GuestSpec, NestedCalls, NestedFailure, RunError, RunReport,
};

use self::budget::FileBudget;
use self::cache::{CompileCache, sha256_hex};
use self::digests::FileDigests;
use self::engine::{check_header, names};
use self::generic::GenericCall;
use self::plugin::{Compiler, Kind, Linked};
use self::run::Runner;
use self::state::{Capabilities, State};
use self::ticker::Ticker;
use toolhost_config::config::{EngineOptions, PoolOptions};
use toolhost_gate::grants::{Grants, Limits};

/// The engine, the linker with exactly the host interfaces plugins may import, the capabilities
/// that decide what each plugin gets, and the epoch ticker.
pub struct Sandbox {
    /// The linkers and the compile caches of both engines, shared with the threads that load plugins.
    compiler: Compiler,
    /// Plugin files' hashes, by what `stat` says of them.
    digests: FileDigests,
    /// Advances the epoch while guests run.
    ticker: Ticker,
    /// The pool in use; `None` when allocating on demand (configured so, or the pool could not be reserved).
    pool: Option<PoolOptions>,
    /// Descriptors all calls together may hold.
    files: Arc<FileBudget>,
    /// What a plugin may be given, bound per plugin and prepared per call.
    capabilities: Capabilities,
}

impl Sandbox {
    /// Configure the engine (component model and its async ABI on; GC and stack switching off;
    /// exceptions and threads not even compiled in; fuel and epochs on), link the capabilities'
    /// host interfaces (WASI 0.2 and 0.3 side by side), start the ticker.
    pub fn new(options: &EngineOptions) -> Result<Self, SandboxError> {
        let engines = engine::build(options)?;
        let linked = |engine: &Engine, concurrent: bool| -> Result<Linked, SandboxError> {
            let mut linker = Linker::<State>::new(engine);
            Capabilities::link(&mut linker, concurrent)?;
            let cache = options.cache_dir.as_ref().and_then(|dir| {
                CompileCache::open(dir, engine)
                    .inspect_err(|e| {
                        tracing::warn!(dir = %dir.display(), error = %e, "compile cache disabled");
                    })
                    .ok()
            });
            Ok(Linked {
                engine: engine.clone(),
                linker: Arc::new(linker),
                cache: cache.map(Arc::new),
            })
        };
        let compiler = Compiler {
            sync: linked(&engines.sync, false)?,
            concurrent: linked(&engines.concurrent, true)?,
        };
        let (sync, concurrent) = (engines.sync.clone(), engines.concurrent.clone());
        let ticker = Ticker::start(move || {
            sync.increment_epoch();
            concurrent.increment_epoch();
        })
        .map_err(|e| SandboxError::Engine(format!("cannot start the epoch ticker: {e}")))?;
        let digests = FileDigests::open(compiler.cache());
        let files = FileBudget::for_process(options.open_files);
        Ok(Self {
            digests,
            compiler,
            ticker,
            pool: engines.pool,
            capabilities: Capabilities::new(&files),
            files,
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
        self.digests.save(self.compiler.cache());
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
        let component = self.compiler.component(bytes)?;
        let (problem, contract, tools, skipped) = match self.compiler.link(&component, bytes) {
            Err(e) => (Some(e.to_string()), None, Vec::new(), Vec::new()),
            Ok(Kind::Contract(_)) => (None, Some("toolhost:plugin@0.1.0"), Vec::new(), Vec::new()),
            Ok(Kind::AsyncContract(_)) => {
                (None, Some("toolhost:plugin@0.2.0"), Vec::new(), Vec::new())
            }
            Ok(Kind::Generic(g)) => (None, None, g.tools.clone(), g.skipped.clone()),
        };
        Ok(Inspection {
            imports: names(&component, true),
            exports: names(&component, false),
            problem,
            contract,
            tools,
            skipped,
        })
    }

    /// Compile (or load from the cache) and link a component. CPU-heavy: call it off the async runtime.
    /// Linking does not depend on grants: a plugin that imports `wasi:http` loads whether or not it is
    /// granted network, and without a grant each of its requests is refused when it is sent.
    pub fn load(&self, bytes: &[u8]) -> Result<Plugin, SandboxError> {
        self.load_hashed(bytes, &sha256_hex(bytes), || ())
    }

    /// [`Self::load`] for bytes whose SHA-256 (hex) the caller already has.
    pub fn load_hashed(
        &self,
        bytes: &[u8],
        content_hash: &str,
        compiling: impl FnOnce(),
    ) -> Result<Plugin, SandboxError> {
        self.compiler.load(bytes, content_hash, compiling)
    }

    /// Whether the compile cache has an entry for the component with `content_hash`: a hint (the
    /// entry is not checked) that loading it will not compile.
    pub fn is_cached(&self, content_hash: &str) -> bool {
        self.compiler.has_cached(content_hash)
    }

    /// What the contract plugin with `content_hash` described when it was first loaded, if the
    /// compile cache holds an authentic record of it. Reads a small file.
    pub fn described(&self, content_hash: &str) -> Option<Vec<GuestSpec>> {
        let bytes = self.compiler.cache()?.description(content_hash)?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keep what a contract plugin described, for [`Self::described`] after a restart. Only a
    /// description that passed the registry's checks: a restart trusts it without compiling it.
    pub fn remember_description(&self, content_hash: &str, specs: &[GuestSpec]) {
        if let (Some(cache), Ok(json)) = (self.compiler.cache(), serde_json::to_vec(specs)) {
            cache.put_description(content_hash, &json);
        }
    }

    /// A contract plugin whose tools are known ([`Self::described`]) and whose code is loaded on
    /// its first call, from the compile cache or else from `file`.
    pub fn deferred(&self, file: PathBuf, content_hash: &str) -> Plugin {
        Plugin::deferred(file, content_hash)
    }

    /// Bind `plugin` to its name, grants and limits, once, for all of its calls: each capability
    /// binds its settings, and one it cannot use fails here, naming the capability.
    pub fn prepare(
        &self,
        plugin: Plugin,
        name: &str,
        grants: Grants,
        limits: Limits,
    ) -> Result<Prepared, SandboxError> {
        let name: Arc<str> = name.into();
        let bound = self.capabilities.bind(&name, &grants)?;
        Ok(Prepared {
            plugin,
            name,
            limits,
            bound,
        })
    }

    /// Ask a contract plugin which tools it provides, with no grants at all.
    pub async fn describe(
        &self,
        plugin: Plugin,
        name: &str,
        limits: &Limits,
    ) -> RunReport<Vec<GuestSpec>> {
        let never = CancellationToken::new();
        let bare = match self.prepare(plugin, name, Grants::default(), *limits) {
            Ok(bare) => bare,
            Err(e) => return RunReport::refused(RunError::Setup(e.to_string())),
        };
        let io = CallIo {
            files: Arc::default(),
            progress: None,
            cancel: &never,
            caps: Default::default(),
            tools: None,
            credentials: Vec::new(),
        };
        match self.compiler.code(&bare.plugin).await {
            Ok(Kind::Contract(pre)) => self.runner().describe(&bare, io, pre).await,
            Ok(Kind::AsyncContract(pre)) => self.runner().describe_v2(&bare, io, pre).await,
            _ => RunReport::refused(RunError::Setup(
                "a generic plugin has no describe export".into(),
            )),
        }
    }

    /// Run `tool` with `input` (JSON text) in a fresh store with the plugin's grants and limits.
    /// For a generic plugin, `tool` is the function's [`Export::path`](toolhost_call::wit::Export::path) and `input` is read into
    /// its arguments exactly.
    pub async fn call(
        &self,
        prepared: &Prepared,
        tool: &str,
        input: String,
        io: CallIo<'_>,
    ) -> RunReport<Result<GuestOutput, GuestError>> {
        let kind = match self.compiler.code(&prepared.plugin).await {
            Ok(kind) => kind,
            Err(e) => return RunReport::refused(RunError::Setup(e.to_string())),
        };
        let secrets = match prepared.bound.secrets.for_call(&io.credentials) {
            Ok(secrets) => secrets,
            Err(e) => return RunReport::refused(RunError::Setup(e.to_string())),
        };
        let runner = Runner {
            secrets: Some(secrets.clone()),
            ..self.runner()
        };
        let report = match kind {
            Kind::Contract(pre) => runner.call(prepared, io, pre, tool, input).await,
            Kind::AsyncContract(pre) => runner.call_v2(prepared, io, pre, tool, input).await,
            Kind::Generic(g) => match GenericCall::new(g, tool, &input) {
                Ok(call) => {
                    runner
                        .run(prepared, io, &g.pre, async move |store, instance| {
                            call.invoke(store, instance).await
                        })
                        .await
                }
                Err(answer) => RunReport::without_guest(answer),
            },
        };
        secrets.redact_report(report)
    }

    /// What running a call needs of the sandbox.
    fn runner(&self) -> Runner<'_> {
        Runner {
            ticker: &self.ticker,
            capabilities: &self.capabilities,
            secrets: None,
        }
    }
}
