//! The sandbox: wasmtime engine, compiled plugins, and one fresh, limited store per call.
//!
//! Every wasmtime and WASI type stays inside this module. A plugin is compiled once ([`Sandbox::load`])
//! and bound to its plain grants and limits once ([`Sandbox::prepare`], a [`Prepared`]); a call then
//! brings only its tool, input and [`CallIo`], and gets back a plain [`RunReport`]. Each capability
//! is one module with its phases: `files` (files and env: link, and the one place a WASI context is
//! built) and `network` (wasi:http: link, bind at load, prepare per call); their settings were
//! validated when the config was loaded.

mod bindings;
mod budget;
mod cache;
mod digests;
mod engine;
mod files;
mod generic;
pub mod network;
mod output;
mod plugin;
mod pool;
mod prepared;
mod run;
mod state;
mod store;
mod thread;
mod ticker;

pub use self::engine::{Inspection, Sandbox};
pub use self::plugin::Plugin;
pub use self::prepared::{CallIo, Prepared};
pub use self::run::{GuestError, GuestOutput, GuestSpec, RunError, RunReport};

/// Why the sandbox could not load a plugin or prepare a call.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The engine could not be configured.
    #[error("cannot configure the WebAssembly engine: {0}")]
    Engine(String),
    /// The file is a core module, not a component.
    #[error(
        "this is a core WebAssembly module, not a component; build the plugin for wasm32-wasip2 \
         (or wrap it with `wasm-tools component new`)"
    )]
    CoreModule,
    /// The file is not WebAssembly at all, or is truncated or corrupt.
    #[error("not a valid WebAssembly component: {0}")]
    Invalid(String),
    /// The component does not fit the `toolhost:plugin` contract.
    #[error("does not fit the toolhost:plugin@0.1.0 contract: {0}")]
    Contract(String),
    /// The component neither fits the contract nor exports a function that can be a tool.
    #[error("no tools: {0}")]
    NoTools(String),
    /// A plugin's code, loaded on its first call, is no longer the component that was listed:
    /// its compiled entry is gone and its file changed or went away (a reload follows).
    #[error("the plugin's code cannot be loaded from '{file}': {reason}")]
    Changed {
        /// The component file.
        file: String,
        /// What happened to it.
        reason: String,
    },
    /// A granted directory could not be opened.
    #[error("cannot open granted directory '{path}': {reason}")]
    Grant {
        /// The host path.
        path: String,
        /// The OS error.
        reason: String,
    },
}
