//! The sandbox's own errors: why a plugin could not be loaded or bound.

use super::capability::CapabilityError;

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
    /// The component does not fit the `toolhost:plugin` contract (0.1.0, or 0.2.0 for WASI 0.3), or
    /// imports what the host does not provide.
    #[error("does not fit the toolhost:plugin contract: {0}")]
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
    /// A capability refused the plugin's settings when it was bound, at load.
    #[error(transparent)]
    Capability(#[from] CapabilityError),
}
