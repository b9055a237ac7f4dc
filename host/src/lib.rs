//! toolhost hosts AI agent tools as sandboxed WebAssembly components.
//!
//! Five pure crates decide, and this one runs what they decide. `toolhost_call` holds the types
//! every call shares (outcomes, safe text, tool specs, WIT types and values); `toolhost_gate` what a
//! call may do (input validation and coercion, permission rules, modes and paths, grants and limits,
//! network destinations and secret redaction, callers, quotas, breakers, tasks); `toolhost_wire` the
//! LLM APIs' batch wire formats; `toolhost_trust` where plugins come from and whom to trust (sources,
//! OCI manifests, signatures, the lockfile); `toolhost_config` the operator's configuration. None of
//! them knows wasmtime, MCP or the async runtime.
//!
//! A call travels one pipeline ([`exec`]): a front end ([`server`] for MCP and the batch API, or the
//! CLI) hands it a request; the pipeline's stages admit it, find the tool in the [`registry`],
//! validate and gate the input with the policy, run it in the [`sandbox`] (a fresh wasmtime store
//! with only what the plugin's grants allow: each capability, such as files and env, network, or
//! log and progress, is one module implementing the sandbox's capability trait, bound per plugin at
//! load and prepared per call), shape the result for a model, and record it in the [`audit`] log.
//! Each stage is a type borrowing the [`exec::Services`] it needs: the services one daemon shares
//! (admission and shutdown, the audit log, stats, live calls, questions, health, quotas,
//! credentials), which the front ends read too. The pipeline decides every outcome and one recorder
//! writes it; front ends only translate. [`host`] is the one place that wires a daemon from a
//! config: its [`host::Host`] owns the sandbox, the services, the pipeline, the state store,
//! telemetry and shutdown, and serves through [`server`]; the CLI, the tests and the benchmarks
//! open the same `Host`.
//!
//! Dependencies point down: host -> server -> exec -> {registry, sandbox, audit, stats} -> the pure
//! crates (config -> gate -> call, config -> trust, wire -> call), with [`system`] (the cores),
//! [`diagnostics`] (the log on stderr, which never waits), [`body`] (bounded network reads) and
//! [`random`] (unguessable values) leaves any layer may use. Only [`sandbox`] knows wasmtime; only
//! [`server`] knows MCP and turns outcomes into wire errors (inside it, the MCP, batch and HTTP
//! front ends import only its shared part, never each other); nothing below [`host`] imports it,
//! nothing but the host imports the server, nothing imports the CLI, and the pure crates know none
//! of them (the compiler checks it).
//! [`distribution`] brings plugins from registries into a local store, which the registry loads
//! from offline. [`state`] keeps what must outlive a request (task records and results) in SQLite
//! or a PostgreSQL shared by many daemons; [`tasks`] runs long calls in the background over it.

pub mod audit;
pub mod batch;
pub mod body;
pub mod diagnostics;
pub mod distribution;
pub mod exec;
pub mod host;
pub mod random;
pub mod registry;
pub mod sandbox;
pub mod scaffold;
pub mod server;
pub mod state;
pub mod stats;
pub mod system;
pub mod tasks;
pub mod telemetry;
