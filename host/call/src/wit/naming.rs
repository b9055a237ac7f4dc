//! Tool names for exported functions.
//!
//! The rule, applied to exports in the component's order:
//! 1. `interface_function` in snake case (`docs:text/word-count@0.1.0#count-words` → `word_count_count_words`);
//!    a function the world exports directly keeps its own name (`greet`).
//! 2. If an earlier export took that name, the package is put in front: `docs_text_word_count_count_words`.
//! 3. If that is taken too, `_2`, `_3`, … is added.
//!
//! A name longer than 64 bytes keeps its first 55 and ends with `_` and 8 hex digits of its SHA-256,
//! so that it stays unique and stable. WIT identifiers are lowercase letters, digits and `-`, so
//! every name satisfies `^[A-Za-z0-9_-]{1,64}$`.

use std::collections::BTreeSet;

use sha2::{Digest as _, Sha256};

use super::function::Export;

/// The longest tool name LLM APIs accept.
const MAX_NAME: usize = 64;

/// One name per export, in order, all distinct.
pub fn tool_names(exports: &[Export]) -> Vec<String> {
    let mut taken = BTreeSet::new();
    exports
        .iter()
        .map(|e| {
            let parts = Parts::of(e);
            let mut name = fit(&parts.short());
            if taken.contains(&name) {
                name = fit(&parts.qualified());
            }
            let base = name.clone();
            let mut n = 2;
            while taken.contains(&name) {
                name = fit(&format!("{base}_{n}"));
                n += 1;
            }
            taken.insert(name.clone());
            name
        })
        .collect()
}

/// The pieces of an export's name, in snake case.
struct Parts {
    package: Option<String>,
    interface: Option<String>,
    function: String,
}

impl Parts {
    fn of(e: &Export) -> Self {
        let (package, interface) = match &e.interface {
            None => (None, None),
            Some(full) => {
                // `ns:pkg/iface@1.0.0`: the version is dropped; an inline interface is a plain name.
                let unversioned = full.split('@').next().unwrap_or(full);
                match unversioned.split_once('/') {
                    Some((package, iface)) => (Some(snake(package)), Some(snake(iface))),
                    None => (None, Some(snake(unversioned))),
                }
            }
        };
        Self {
            package,
            interface,
            function: snake(&e.function),
        }
    }

    fn short(&self) -> String {
        match &self.interface {
            Some(i) => format!("{i}_{}", self.function),
            None => self.function.clone(),
        }
    }

    fn qualified(&self) -> String {
        match &self.package {
            Some(p) => format!("{p}_{}", self.short()),
            None => self.short(),
        }
    }
}

/// Kebab case (and the `:` of a package) to snake case; anything an LLM API would refuse becomes `_`.
fn snake(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn fit(name: &str) -> String {
    if name.len() <= MAX_NAME {
        return name.to_owned();
    }
    let hash = Sha256::digest(name.as_bytes());
    let hex: String = hash[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}_{hex}", &name[..MAX_NAME - 9])
}
