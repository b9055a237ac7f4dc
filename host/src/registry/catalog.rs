//! What a registry serves at one moment: an immutable [`Catalog`] of tools, each plugin's
//! [`PluginStatus`], and what is still [`Loading`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use super::{Entry, Rejected, Tool};
use crate::distribution::Provenance;
use toolhost_call::text::OneLine;
use toolhost_call::tool::ToolSpec;
use toolhost_call::wit::Skipped;

/// How loading one plugin file went.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PluginStatus {
    /// Serving.
    Loaded {
        /// The file.
        file: PathBuf,
        /// Tools served, by exposed name.
        tools: Vec<String>,
        /// Tools not served because another plugin claimed the name first: (tool, that plugin).
        hidden: Vec<(String, String)>,
        /// Whether compilation was skipped thanks to the cache.
        from_cache: bool,
        /// Load time (compile or cache load, instantiate, describe), in ms.
        load_ms: u64,
        /// Where the component came from.
        provenance: Provenance,
        /// Whether it is a generic component (its exported functions are its tools).
        generic: bool,
        /// A generic component's exported functions that are not tools, and why.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<Skipped>,
    },
    /// Not serving (or serving the previous version, if `kept_previous`).
    Rejected {
        /// The file.
        file: PathBuf,
        /// What is wrong, precisely.
        reason: String,
        /// Whether an earlier version of the plugin is still serving.
        kept_previous: bool,
    },
}

/// An immutable snapshot of what is served.
#[derive(Default)]
pub struct Catalog {
    /// Servable tools by exposed name, in a deterministic (sorted) order.
    pub tools: BTreeMap<String, Arc<Tool>>,
    /// Every plugin file seen, by plugin name.
    pub plugins: BTreeMap<String, PluginStatus>,
    /// Plugins being loaded now, by name; an earlier version of one keeps serving meanwhile.
    pub loading: BTreeMap<String, Loading>,
    /// How far the registry's first load is.
    pub start: Start,
}

/// How far a registry's first load of its plugins is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// The folder and the configured sources are being read: what will load is not known yet.
    Scanning,
    /// Every plugin to load is in [`Catalog::loading`] or served.
    Loading,
    /// The first load has ended (for a registry opened with [`Registry::open`](super::Registry::open), before it returned).
    #[default]
    Done,
}

/// A plugin being loaded.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Loading {
    /// The file.
    pub file: PathBuf,
    /// Its size in bytes, once it is known to be compiling (the compile cache did not have it);
    /// `None` while it may still come from the cache, which takes milliseconds.
    pub compiling: Option<u64>,
    /// When its load began.
    #[serde(skip)]
    pub since: Instant,
}

impl Catalog {
    /// Whether a plugin may still join or change: the first load is not over, or a reload is
    /// loading a plugin.
    pub fn is_loading(&self) -> bool {
        self.start != Start::Done || !self.loading.is_empty()
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(name)
    }

    /// Every servable tool's spec, in name order.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|t| &t.spec)
    }
}

/// Whether two catalogs serve the same tools (the same `Arc`s under the same names).
pub(super) fn same_tools(a: &Catalog, b: &Catalog) -> bool {
    a.tools.len() == b.tools.len()
        && a.tools
            .iter()
            .zip(&b.tools)
            .all(|((a, x), (b, y))| a == b && Arc::ptr_eq(x, y))
}

/// Build the served catalog; plugins are visited in name order, so the first to claim a name keeps it.
pub(super) fn build_catalog(
    entries: &BTreeMap<String, Entry>,
    rejected: &BTreeMap<String, Rejected>,
) -> Catalog {
    let mut catalog = Catalog::default();
    for (name, e) in entries {
        let mut served = Vec::new();
        let mut hidden = Vec::new();
        for t in &e.tools {
            match catalog.tools.get(&t.spec.name) {
                Some(owner) => {
                    tracing::warn!(tool = %t.spec.name, plugin = %OneLine(name), owner = %OneLine(&owner.plugin.name),
                        "tool hidden: another plugin already provides it; set a `prefix` for one of them");
                    hidden.push((t.spec.name.clone(), owner.plugin.name.clone()));
                }
                None => {
                    served.push(t.spec.name.clone());
                    catalog.tools.insert(t.spec.name.clone(), t.clone());
                }
            }
        }
        catalog.plugins.insert(
            name.clone(),
            PluginStatus::Loaded {
                file: e.plugin.path.clone(),
                tools: served,
                hidden,
                from_cache: e.from_cache,
                load_ms: e.load_ms,
                provenance: e.plugin.provenance.clone(),
                generic: e.plugin.prepared.plugin.generic().is_some(),
                skipped: e.skipped.clone(),
            },
        );
    }
    for (name, r) in rejected {
        catalog.plugins.insert(
            name.clone(),
            PluginStatus::Rejected {
                file: r.file.clone(),
                reason: r.why.reason(),
                kept_previous: entries.contains_key(name),
            },
        );
    }
    catalog
}
