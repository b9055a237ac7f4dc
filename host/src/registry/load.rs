//! Loading one plugin: read, compile, learn its tools (a contract plugin describes them, a generic
//! plugin's come from its exports), apply the operator's per-tool overrides, check them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::check::{self, MAX_TOOLS_PER_PLUGIN};
use super::{LoadedPlugin, MAX_PLUGIN_BYTES, Rejection, Tool};
use crate::distribution::Provenance;
use crate::sandbox::{GuestSpec, Sandbox};
use toolhost_policy::config::PluginPolicy;
use toolhost_policy::grants::Limits;
use toolhost_policy::text::OneLine;
use toolhost_policy::wit::{Export, GenericTool, Skipped};

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

pub(super) fn read_plugin(path: &Path) -> Result<Vec<u8>, Rejection> {
    let len = std::fs::metadata(path).map_err(Rejection::Read)?.len();
    if len > MAX_PLUGIN_BYTES {
        return Err(Rejection::TooLarge {
            len,
            limit: MAX_PLUGIN_BYTES,
        });
    }
    std::fs::read(path).map_err(Rejection::Read)
}

/// Compile, describe and check one plugin.
pub(super) async fn load(
    sandbox: &Arc<Sandbox>,
    name: &str,
    path: &Path,
    bytes: Vec<u8>,
    provenance: Provenance,
    policy: PluginPolicy,
) -> Result<Loaded, Rejection> {
    let compiler = sandbox.clone();
    let component = tokio::task::spawn_blocking(move || compiler.load(&bytes))
        .await
        .map_err(|source| Rejection::Crashed {
            stage: "the compiler",
            source,
        })??;
    let from_cache = component.from_cache;
    let (mut specs, exports, skipped) = match component.generic() {
        Some((tools, skipped)) => generic_specs(tools, skipped),
        None => {
            let limits = Limits {
                timeout: policy.limits.timeout.min(DESCRIBE_TIMEOUT),
                ..policy.limits
            };
            let report = sandbox.describe(component.clone(), name, &limits).await;
            let specs = report.result.map_err(Rejection::Describe)?;
            (specs, HashMap::new(), Vec::new())
        }
    };
    apply_overrides(name, &policy, &mut specs);
    // Compiling schemas and bounding their cost is CPU work on plugin-chosen input: off the runtime.
    let checked = tokio::task::spawn_blocking(move || check::check_specs(specs))
        .await
        .map_err(|source| Rejection::Crashed {
            stage: "the schema check",
            source,
        })??;
    let plugin = Arc::new(LoadedPlugin {
        name: name.to_string(),
        path: path.to_path_buf(),
        provenance,
        prepared: sandbox.prepare(component, name, policy.grants.clone(), policy.limits),
        policy,
    });
    let tools = checked
        .into_iter()
        .map(|c| {
            let export = exports.get(&c.spec.name);
            let guest_name = export.map_or_else(|| c.spec.name.clone(), Export::path);
            let input = match export {
                Some(e) => c.input.exactly(e.clone()),
                None => c.input,
            };
            let mut spec = c.spec;
            spec.name = format!("{}{}", plugin.policy.prefix, spec.name);
            Arc::new(Tool {
                files: Arc::new(plugin.policy.permissions.path_guard(&spec.name)),
                spec,
                guest_name,
                plugin: plugin.clone(),
                input,
                output: c.output,
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
