//! Generic plugins: a component that does not implement `toolhost:plugin` but exports plain typed
//! functions, each served as a tool.
//!
//! The sandbox reads the component's exports into [`Export`]s (skipping, with a reason, every
//! function whose types have no JSON form: resources, futures, streams, error contexts, maps).
//! This module decides the rest, purely: tool names ([`naming`]), JSON Schemas from WIT types
//! ([`WitType::schema`]), exact JSON ⇄ value conversion ([`json`]), descriptions from doc comments
//! ([`Docs`]), and what a returned value shows the model ([`Export::answer`]).

mod docs;
mod function;
pub mod json;
pub mod naming;
#[cfg(any(test, feature = "proptest"))]
pub mod strategy;
mod ty;
mod value;

pub use self::docs::{Docs, SECTION as DOCS_SECTION};
pub use self::function::{Answer, Export, Skipped, export_path};
pub use self::json::{TypeMismatch, WitValue};
pub use self::ty::{INFINITY, NAN, NEG_INFINITY, WitType};

use serde_json::Value;

use crate::tool::Hints;

/// One generic tool, before the registry's checks and the operator's overrides.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GenericTool {
    /// Its name (before the plugin's prefix).
    pub name: String,
    /// The doc comment, or a sentence saying where the function comes from.
    pub description: String,
    /// See [`Export::input_schema`].
    pub input_schema: Value,
    /// See [`Export::output_schema`].
    pub output_schema: Option<Value>,
    /// Plain WIT cannot declare hints: none, so the tool counts as one that writes.
    pub hints: Hints,
    /// The function it calls (shown as its path).
    #[serde(rename = "function", serialize_with = "serialize_path")]
    pub export: Export,
}

/// The tools of a component's usable exports, named by the [`naming`] rule, described by `docs`.
pub fn tools(exports: Vec<Export>, docs: &Docs) -> Vec<GenericTool> {
    let names = naming::tool_names(&exports);
    exports
        .into_iter()
        .zip(names)
        .map(|(export, name)| GenericTool {
            description: docs
                .function(export.interface.as_deref(), &export.function)
                .unwrap_or_else(|| {
                    format!(
                        "Calls `{}` of the WebAssembly component (it carries no description).",
                        export.path()
                    )
                }),
            input_schema: export.input_schema(),
            output_schema: export.output_schema(),
            hints: Hints::default(),
            name,
            export,
        })
        .collect()
}

fn serialize_path<S: serde::Serializer>(export: &Export, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&export.path())
}

#[cfg(test)]
mod tests;
