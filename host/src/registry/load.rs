//! Loading one plugin: read, compile, learn its tools (a contract plugin describes them, a generic
//! plugin's come from its exports), apply the operator's per-tool overrides, check them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit, oneshot};

use super::check::{self, Compile, MAX_TOOLS_PER_PLUGIN};
use super::schemas::Schemas;
use super::{LoadedPlugin, MAX_PLUGIN_BYTES, Rejection, Tool};
use crate::distribution::Provenance;
use crate::sandbox::{GuestSpec, Sandbox};
use toolhost_call::text::OneLine;
use toolhost_call::wit::{Export, GenericTool, Skipped};
use toolhost_config::config::PluginPolicy;
use toolhost_gate::grants::Limits;
use toolhost_trust::source::Digest;

/// `describe` gets this long, at most, whatever the plugin's call timeout.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What loading a plugin gives.
pub(super) struct Loaded {
    pub(super) plugin: Arc<LoadedPlugin>,
    pub(super) tools: Vec<Arc<Tool>>,
    pub(super) from_cache: bool,
    /// A generic plugin's functions that are not served, and why.
    pub(super) skipped: Vec<Skipped>,
}

/// A plugin file's digest and, unless the sandbox knew the digest of the unchanged file without
/// reading it, its bytes.
pub(super) fn read_plugin(
    sandbox: &Sandbox,
    path: &Path,
) -> Result<(Option<Vec<u8>>, Digest), Rejection> {
    let before = std::fs::metadata(path).map_err(Rejection::Read)?;
    if before.len() > MAX_PLUGIN_BYTES {
        return Err(Rejection::TooLarge {
            len: before.len(),
            limit: MAX_PLUGIN_BYTES,
        });
    }
    if let Some(digest) = sandbox
        .known_digest(&before)
        .and_then(|d| d.parse::<Digest>().ok())
    {
        return Ok((None, digest));
    }
    let bytes = std::fs::read(path).map_err(Rejection::Read)?;
    let digest = Digest::of(&bytes);
    if let Ok(after) = std::fs::metadata(path) {
        sandbox.remember_digest(&before, &after, digest.as_str());
    }
    Ok((Some(bytes), digest))
}

/// The bytes of a plugin file whose digest was known without reading it: they must still be the
/// ones the digest names.
fn read_again(path: &Path, digest: &Digest) -> Result<Vec<u8>, Rejection> {
    let bytes = std::fs::read(path).map_err(Rejection::Read)?;
    digest.check(&bytes).map_err(|e| {
        Rejection::Read(std::io::Error::other(format!(
            "the file changed while it was loaded ({e}); it is loaded again when it settles"
        )))
    })?;
    Ok(bytes)
}

/// Run CPU-bound `work` on a blocking thread, holding `slot` (a core's turn) until it ends; a
/// panic in it is a rejection naming `stage`.
async fn on_a_core<T, E>(
    slot: Option<SemaphorePermit<'_>>,
    stage: &'static str,
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, Rejection>
where
    T: Send + 'static,
    E: Into<Rejection> + Send + 'static,
{
    let _slot = slot;
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|source| Rejection::Crashed { stage, source })?
        .map_err(Into::into)
}

/// The cores a reload's loads share. Compiles run one at a time, smallest plugin first: each
/// already uses every core (wasmtime compiles a component's functions in parallel), and two at
/// once share one thread pool, where a small plugin's functions wait behind a big one's (a
/// 0.2 MB plugin took 8 s beside a 14 MB one, 0.2 s alone). The short checks after a describe
/// have turns of their own, so that a plugin that has compiled serves at once.
pub(super) struct Cores {
    compiles: Semaphore,
    checks: Semaphore,
}

impl Cores {
    /// Checks `n` at once.
    pub(super) fn new(n: usize) -> Self {
        Self {
            compiles: Semaphore::new(1),
            checks: Semaphore::new(n.max(1)),
        }
    }

    /// A turn to compile, in the order of the queue: the load before this one in it has got its
    /// turn (tasks start in no particular order, and a small plugin must not wait behind a big one).
    async fn compile(&self, turn: Turn) -> Option<SemaphorePermit<'_>> {
        let _ = turn.after.await;
        let slot = self.compiles.acquire().await.ok();
        let _ = turn.then.send(());
        slot
    }
}

/// A load's place in the compile queue.
pub(super) struct Turn {
    /// Resolved when the load queued before this one has its turn (or is gone).
    after: oneshot::Receiver<()>,
    /// Resolves the next load's `after`.
    then: oneshot::Sender<()>,
}

impl Turn {
    /// `n` turns, each after the one before it; the first goes at once.
    pub(super) fn queue(n: usize) -> Vec<Turn> {
        let (first, mut after) = oneshot::channel();
        let _ = first.send(());
        (0..n)
            .map(|_| {
                let (then, next) = oneshot::channel();
                Turn {
                    after: std::mem::replace(&mut after, next),
                    then,
                }
            })
            .collect()
    }
}

/// Compile, describe and check one plugin; `compiling` is told the file's size when the compile
/// cache does not have it (the slow case, which the operator is told about).
#[expect(
    clippy::too_many_arguments,
    reason = "one plugin's every input to its load, each used once; a struct would only rename them"
)]
pub(super) async fn load(
    sandbox: &Arc<Sandbox>,
    name: &str,
    path: &Path,
    bytes: Option<Vec<u8>>,
    provenance: Provenance,
    policy: PluginPolicy,
    cores: &Cores,
    turn: Turn,
    compiling: impl FnOnce(u64) + Send + 'static,
) -> Result<Loaded, Rejection> {
    // A contract plugin the cache has seen before is listed from what it described then, and its
    // code is loaded on its first call: a restart reads no plugin's compiled code.
    let (compiler, file, digest) = (
        sandbox.clone(),
        path.to_path_buf(),
        provenance.digest.clone(),
    );
    let (plugin_name, overrides) = (name.to_string(), policy.clone());
    let (component, vouched) = on_a_core(cores.compile(turn).await, "the compiler", move || {
        let hash = digest.hex();
        if let Some(mut specs) = compiler.described(hash) {
            // Checked again but for its schemas, which compiled before the cache kept them: the
            // operator's overrides may have changed since.
            apply_overrides(&plugin_name, &overrides, &mut specs);
            let checked = check::check_specs(specs, Compile::Deferred)?;
            return Ok((compiler.deferred(file, hash), Some(checked)));
        }
        let bytes = match bytes {
            Some(b) => b,
            None => read_again(&file, &digest)?,
        };
        let size = bytes.len() as u64;
        let plugin = compiler.load_hashed(&bytes, hash, move || compiling(size))?;
        Ok::<_, Rejection>((plugin, None))
    })
    .await?;
    let from_cache = component.from_cache;
    let (checked, exports, skipped) = match vouched {
        Some(checked) => (checked, HashMap::new(), Vec::new()),
        None => {
            // A description the plugin gives now is kept for the next start once it has passed.
            let (mut specs, exports, skipped, fresh) = match component.generic() {
                Some((tools, skipped)) => {
                    let (specs, exports, skipped) = generic_specs(tools, skipped);
                    (specs, exports, skipped, None)
                }
                None => {
                    let limits = Limits {
                        timeout: policy.limits.timeout.min(DESCRIBE_TIMEOUT),
                        ..policy.limits
                    };
                    let report = sandbox.describe(component.clone(), name, &limits).await;
                    let specs = report.result.map_err(Rejection::Describe)?;
                    let kept = specs.clone();
                    (specs, HashMap::new(), Vec::new(), Some(kept))
                }
            };
            apply_overrides(name, &policy, &mut specs);
            // Compiling schemas and bounding their cost is CPU work on plugin-chosen input: off
            // the runtime.
            let checked = on_a_core(
                cores.checks.acquire().await.ok(),
                "the schema check",
                move || check::check_specs(specs, Compile::Now),
            )
            .await?;
            if let Some(kept) = fresh {
                let (keeper, hash) = (sandbox.clone(), component.content_hash.clone());
                // A small file, synced: off the runtime. Losing it only costs a describe next time.
                let _ =
                    tokio::task::spawn_blocking(move || keeper.remember_description(&hash, &kept))
                        .await;
            }
            (checked, exports, skipped)
        }
    };
    let plugin = Arc::new(LoadedPlugin {
        name: name.to_string(),
        path: path.to_path_buf(),
        provenance,
        prepared: sandbox.prepare(component, name, policy.grants.clone(), policy.limits)?,
        policy,
    });
    let tools = checked
        .into_iter()
        .map(|c| {
            let export = exports.get(&c.spec.name);
            let guest_name = export.map_or_else(|| c.spec.name.clone(), Export::path);
            let schemas = match (c.compiled, export) {
                (Some(mut compiled), Some(e)) => {
                    compiled.input = compiled.input.exactly(e.clone());
                    Schemas::compiled(compiled)
                }
                (Some(compiled), None) => Schemas::compiled(compiled),
                // Deferred only for a contract plugin's cached description, which has no exports
                // (a generic plugin's are compiled now, with the conversion to its function).
                (None, export) => {
                    debug_assert!(export.is_none(), "a generic plugin's schemas were deferred");
                    Schemas::deferred()
                }
            };
            let mut spec = c.spec;
            spec.name = format!("{}{}", plugin.policy.prefix, spec.name);
            Arc::new(Tool {
                files: Arc::new(plugin.policy.permissions.path_guard(&spec.name)),
                spec,
                guest_name,
                plugin: plugin.clone(),
                schemas,
            })
        })
        .collect();
    Ok(Loaded {
        plugin,
        tools,
        from_cache,
        skipped,
    })
}

/// A generic plugin's tools as specs to check, each with its function; a tool the registry would
/// refuse for its size, or one past the per-plugin limit, is skipped rather than refusing the
/// plugin.
fn generic_specs(
    tools: &[GenericTool],
    skipped: &[Skipped],
) -> (Vec<GuestSpec>, HashMap<String, Export>, Vec<Skipped>) {
    let mut skipped = skipped.to_vec();
    let mut specs = Vec::new();
    let mut exports = HashMap::new();
    for t in tools {
        let spec = GuestSpec {
            name: t.name.clone(),
            title: None,
            description: t.description.clone(),
            input_schema: t.input_schema.to_string(),
            output_schema: t.output_schema.as_ref().map(ToString::to_string),
            hints: t.hints,
            permission_subject: None,
        };
        let refused = check::oversized(&spec).or_else(|| {
            (specs.len() == MAX_TOOLS_PER_PLUGIN).then(|| {
                format!("more than {MAX_TOOLS_PER_PLUGIN} functions; the rest are not served")
            })
        });
        match refused {
            Some(reason) => skipped.push(Skipped {
                export: t.export.path(),
                reason,
            }),
            None => {
                exports.insert(t.name.clone(), t.export.clone());
                specs.push(spec);
            }
        }
    }
    (specs, exports, skipped)
}

/// The operator's `[plugins.NAME.tools.TOOL]` over what the plugin declared; an override naming
/// no tool of the plugin is logged.
fn apply_overrides(plugin: &str, policy: &PluginPolicy, specs: &mut [GuestSpec]) {
    for (tool, o) in &policy.tools {
        match specs.iter_mut().find(|s| s.name == *tool) {
            Some(s) => o.apply(
                &mut s.title,
                &mut s.description,
                &mut s.hints,
                &mut s.permission_subject,
            ),
            None => tracing::warn!(plugin = %OneLine(plugin), tool = %OneLine(tool),
                "[plugins.{}.tools.{}] names no tool of this plugin", OneLine(plugin), OneLine(tool)),
        }
    }
}
