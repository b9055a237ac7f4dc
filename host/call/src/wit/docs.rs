//! The doc comments a component carries, when its toolchain kept them: `package-docs` custom
//! sections (wit-parser's JSON format, versions 0 and 1), found by the sandbox anywhere in the
//! binary. Unknown or malformed sections are ignored: docs are a nicety, never a reason to refuse.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The custom section's name.
pub const SECTION: &str = "package-docs";

/// Longest doc comment used, in bytes; the registry's description limit is larger.
const MAX_DOCS: usize = 4096;

/// Doc comments of exported functions, from every `package-docs` section found.
#[derive(Debug, Default, Clone)]
pub struct Docs {
    packages: Vec<Package>,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct Package {
    #[serde(default)]
    worlds: BTreeMap<String, World>,
    #[serde(default)]
    interfaces: BTreeMap<String, Interface>,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct World {
    #[serde(default)]
    funcs: BTreeMap<String, Value>,
    #[serde(default)]
    func_exports: BTreeMap<String, Value>,
    #[serde(default)]
    interfaces: BTreeMap<String, Interface>,
    #[serde(default)]
    interface_exports: BTreeMap<String, Interface>,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct Interface {
    #[serde(default)]
    funcs: BTreeMap<String, Value>,
}

impl Docs {
    /// Read the contents of `package-docs` sections: a version byte (0 or 1), then JSON.
    pub fn parse<'a>(sections: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let packages = sections
            .into_iter()
            .filter_map(|data| match data.split_first() {
                Some((0 | 1, json)) => serde_json::from_slice(json).ok(),
                _ => None,
            })
            .collect();
        Self { packages }
    }

    /// Whether no docs were found.
    pub fn is_empty(&self) -> bool {
        self.packages.is_empty()
    }

    /// The doc comment of `function` in the exported `interface` (`ns:pkg/iface@v` or an inline
    /// interface's name), or of a function the world exports directly.
    pub fn function(&self, interface: Option<&str>, function: &str) -> Option<String> {
        let text = self.packages.iter().find_map(|p| match interface {
            None => p.worlds.values().find_map(|w| {
                w.func_exports
                    .get(function)
                    .or_else(|| w.funcs.get(function))
            }),
            Some(full) => {
                let unversioned = full.split('@').next().unwrap_or(full);
                let short = unversioned.rsplit('/').next().unwrap_or(unversioned);
                p.interfaces
                    .get(short)
                    .or_else(|| {
                        p.worlds.values().find_map(|w| {
                            w.interface_exports
                                .get(short)
                                .or_else(|| w.interfaces.get(short))
                        })
                    })
                    .and_then(|i| i.funcs.get(function))
            }
        })?;
        // Version 0 wrote a function's docs as a string; version 1 as `{"docs": ...}`.
        let docs = match text {
            Value::String(s) => s.as_str(),
            Value::Object(o) => o.get("docs")?.as_str()?,
            _ => return None,
        };
        let docs = docs.trim();
        (!docs.is_empty()).then(|| crate::text::prefix(docs, MAX_DOCS).to_owned())
    }
}
