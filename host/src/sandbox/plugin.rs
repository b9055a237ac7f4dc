//! A plugin's compiled code: loaded at once, or, for a plugin whose tools the compile cache already
//! knows, on its first call, so that a restart lists every tool without deserializing (or even
//! reading) any plugin's code, and a plugin that is never called costs no memory for it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::OnceCell;
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use super::bindings::{PluginPre, v2};
use super::cache::{CompileCache, sha256_hex};
use super::engine::{
    TOOL_EXPORT, TOOL_EXPORT_V2, check_header, describe_link_error, list_or_none, names,
};
use super::error::SandboxError;
use super::generic::{self, Functions, Generic};
use super::state::State;
use toolhost_call::wit::{self, Docs, GenericTool, Skipped};

/// A plugin, ready to instantiate cheaply for every call once its code is loaded.
#[derive(Clone)]
pub struct Plugin {
    code: Arc<OnceCell<Kind>>,
    /// The component file, read again (and checked against `content_hash`) only if its compiled
    /// entry is gone when the code is loaded late.
    file: Option<Arc<Path>>,
    /// SHA-256 of the component file.
    pub content_hash: String,
    /// Whether it came from the compile cache.
    pub from_cache: bool,
}

/// How the host talks to a plugin.
#[derive(Clone)]
pub(crate) enum Kind {
    /// It implements `toolhost:plugin`: `describe` names its tools, `call` runs them.
    Contract(PluginPre<State>),
    /// It implements `toolhost:plugin@0.2.0` (WASI 0.3): the same, with `call` async.
    AsyncContract(v2::PluginPre<State>),
    /// Each function it exports is a tool.
    Generic(Arc<Generic>),
}

impl Plugin {
    /// For a generic plugin, its tools (derived from its exports and doc comments) and the
    /// functions that cannot be tools; `None` for a contract plugin, which describes itself.
    /// (Only contract plugins are loaded late, so a generic plugin's code is always here.)
    pub fn generic(&self) -> Option<(&[GenericTool], &[Skipped])> {
        match self.code.get()? {
            Kind::Contract(_) | Kind::AsyncContract(_) => None,
            Kind::Generic(g) => Some((&g.tools, &g.skipped)),
        }
    }

    /// Whether its code is loaded (false for a plugin listed from the cache and not called yet).
    pub fn is_loaded(&self) -> bool {
        self.code.initialized()
    }

    /// A contract plugin whose code is loaded on its first call, from the compile cache or else
    /// from `file`.
    pub(crate) fn deferred(file: PathBuf, content_hash: &str) -> Self {
        Self {
            code: Arc::new(OnceCell::new()),
            file: Some(file.into()),
            content_hash: content_hash.to_owned(),
            from_cache: true,
        }
    }
}

/// What compiling and linking needs, shared with the blocking threads that do it: for each engine
/// ([`super::engine::Engines`]), its linker and its compile cache.
#[derive(Clone)]
pub(crate) struct Compiler {
    pub(crate) sync: Linked,
    pub(crate) concurrent: Linked,
}

/// One engine, the linker with exactly the host interfaces plugins may import, and its cache.
#[derive(Clone)]
pub(crate) struct Linked {
    pub(crate) engine: Engine,
    pub(crate) linker: Arc<Linker<State>>,
    pub(crate) cache: Option<Arc<CompileCache>>,
}

impl Compiler {
    /// The compiled component with `content_hash`, if a cache holds an authentic entry.
    fn cached(&self, content_hash: &str) -> Option<Component> {
        let get = |l: &Linked| l.cache.as_ref()?.get(&l.engine, content_hash);
        get(&self.sync).or_else(|| get(&self.concurrent))
    }

    /// Whether a cache has an entry for `content_hash` (not checked).
    pub(crate) fn has_cached(&self, content_hash: &str) -> bool {
        [&self.sync, &self.concurrent]
            .iter()
            .any(|l| l.cache.as_ref().is_some_and(|c| c.has(content_hash)))
    }

    /// The cache that keeps what contract plugins described (the sync engine's).
    pub(crate) fn cache(&self) -> Option<&CompileCache> {
        self.sync.cache.as_deref()
    }

    /// Compile `bytes` for the sync engine, or, when it does not take them (an `async` function,
    /// a stream), for the concurrent one. When neither does, the concurrent engine's error says
    /// why: it takes everything the other does.
    pub(crate) fn component(&self, bytes: &[u8]) -> Result<Component, SandboxError> {
        Component::from_binary(&self.sync.engine, bytes)
            .or_else(|_| Component::from_binary(&self.concurrent.engine, bytes))
            .map_err(|e| SandboxError::Invalid(format!("{e:#}")))
    }

    /// Compile `bytes` (whose SHA-256 is `content_hash`) and cache the result.
    fn compile(&self, bytes: &[u8], content_hash: &str) -> Result<Component, SandboxError> {
        let c = self.component(bytes)?;
        if let Some(cache) = &self.linked(&c).cache {
            cache.put(content_hash, &c);
        }
        Ok(c)
    }

    /// The engine, linker and cache `component` was compiled for.
    fn linked(&self, component: &Component) -> &Linked {
        if Engine::same(component.engine(), &self.sync.engine) {
            &self.sync
        } else {
            &self.concurrent
        }
    }

    /// Link a component: as a contract plugin when it exports `toolhost:plugin/tool`, otherwise as
    /// a generic one (`bytes` gives its doc comments).
    pub(crate) fn link(&self, component: &Component, bytes: &[u8]) -> Result<Kind, SandboxError> {
        let linked = self.linked(component);
        let contract = component
            .component_type()
            .exports(&linked.engine)
            .find_map(|(name, _)| {
                [TOOL_EXPORT, TOOL_EXPORT_V2]
                    .into_iter()
                    .find(|&c| c == name)
            });
        let instance_pre = linked
            .linker
            .instantiate_pre(component)
            .map_err(|e| SandboxError::Contract(describe_link_error(&e)))?;
        let unlike = |e: wasmtime::Error| SandboxError::Contract(format!("{e:#}"));
        match contract {
            Some(TOOL_EXPORT) => {
                return PluginPre::new(instance_pre)
                    .map(Kind::Contract)
                    .map_err(unlike);
            }
            Some(_) => {
                return v2::PluginPre::new(instance_pre)
                    .map(Kind::AsyncContract)
                    .map_err(unlike);
            }
            None => {}
        }
        let (found, skipped) = generic::read(component, &linked.engine);
        if found.is_empty() {
            let why: Vec<String> = skipped
                .iter()
                .map(|s| format!("{} ({})", s.export, s.reason))
                .collect();
            return Err(SandboxError::NoTools(format!(
                "it exports neither `{TOOL_EXPORT}` nor a function that can be a tool (exports: {})",
                list_or_none(if why.is_empty() {
                    names(component, false)
                } else {
                    why
                })
            )));
        }
        let docs = Docs::parse(generic::doc_sections(bytes).iter().map(Vec::as_slice));
        let tools = wit::tools(found.iter().map(|(e, _)| e.clone()).collect(), &docs);
        Ok(Kind::Generic(Arc::new(Generic {
            pre: instance_pre,
            functions: Functions::new(found),
            tools,
            skipped,
        })))
    }

    /// A contract plugin's code, loaded late: its compiled entry, or else its file again, which
    /// must still be the component that was described.
    fn load_late(&self, file: &Path, content_hash: &str) -> Result<Kind, SandboxError> {
        let (component, bytes) = match self.cached(content_hash) {
            Some(c) => (c, Vec::new()),
            None => {
                let bytes = std::fs::read(file).map_err(|e| SandboxError::Changed {
                    file: file.display().to_string(),
                    reason: e.to_string(),
                })?;
                if sha256_hex(&bytes) != content_hash {
                    return Err(SandboxError::Changed {
                        file: file.display().to_string(),
                        reason: "it holds another component than the one loaded".into(),
                    });
                }
                (self.compile(&bytes, content_hash)?, bytes)
            }
        };
        match self.link(&component, &bytes)? {
            kind @ (Kind::Contract(_) | Kind::AsyncContract(_)) => Ok(kind),
            Kind::Generic(_) => Err(SandboxError::Changed {
                file: file.display().to_string(),
                reason: "its compiled code no longer implements the toolhost:plugin contract"
                    .into(),
            }),
        }
    }

    /// Compile (or load from the cache) and link a component whose SHA-256 (hex) is `content_hash`;
    /// `compiling` is called first when the cache does not have it.
    pub(crate) fn load(
        &self,
        bytes: &[u8],
        content_hash: &str,
        compiling: impl FnOnce(),
    ) -> Result<Plugin, SandboxError> {
        check_header(bytes)?;
        let cached = self.cached(content_hash);
        let from_cache = cached.is_some();
        let component = match cached {
            Some(c) => c,
            None => {
                compiling();
                self.compile(bytes, content_hash)?
            }
        };
        let kind = self.link(&component, bytes)?;
        Ok(Plugin {
            code: Arc::new(OnceCell::new_with(Some(kind))),
            file: None,
            content_hash: content_hash.to_owned(),
            from_cache,
        })
    }

    /// The plugin's code, loaded now (off the async runtime) if it was deferred. Concurrent first
    /// calls share one load; a failed load is tried again by the next call.
    pub(crate) async fn code<'p>(&self, plugin: &'p Plugin) -> Result<&'p Kind, SandboxError> {
        plugin
            .code
            .get_or_try_init(|| async {
                let Some(file) = plugin.file.clone() else {
                    return Err(SandboxError::Engine("a plugin without code".into()));
                };
                let (compiler, hash) = (self.clone(), plugin.content_hash.clone());
                let started = std::time::Instant::now();
                let kind = tokio::task::spawn_blocking(move || compiler.load_late(&file, &hash))
                    .await
                    .map_err(|e| SandboxError::Engine(format!("loading the plugin's code: {e}")))??;
                tracing::debug!(hash = %plugin.content_hash, ms = started.elapsed().as_millis() as u64,
                    "plugin code loaded on its first call");
                Ok(kind)
            })
            .await
    }
}
