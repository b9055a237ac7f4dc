//! The command line as clap parses it: global flags and one subcommand. No behaviour here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use toolhost::audit;
use toolhost::scaffold::Lang;
use toolhost_gate::gate::Mode;

/// Hosts AI agent tools as sandboxed WebAssembly components.
#[derive(Parser, Debug)]
#[command(name = "toolhost", version = env!("TOOLHOST_VERSION_LINE"), about)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(super) global: Global,
    #[command(subcommand)]
    pub(super) command: Command,
}

/// What `grant` and `revoke` change.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GrantKind {
    /// A directory (`dirs`).
    Dir,
    /// An outgoing destination (`network.allow`).
    Network,
    /// An environment variable (`env`, `env-from-host`).
    Env,
}

#[derive(Args, Debug)]
pub(super) struct Global {
    /// Plugins folder [default: ./plugins, or `plugins-dir` in the config].
    #[arg(long, global = true, value_name = "DIR")]
    pub(super) plugins: Option<PathBuf>,
    /// Config file [default: ./toolhost.toml when present].
    #[arg(long, global = true, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// Global permission mode: plan, default, accept-edits or bypass.
    #[arg(long, global = true, value_name = "MODE")]
    pub(super) mode: Option<Mode>,
    /// Grant a plugin a directory, seen by the guest as ".": PLUGIN=PATH[:ro|:rw] (read-only by default).
    #[arg(long = "dir", global = true, value_name = "PLUGIN=PATH[:rw]")]
    pub(super) dirs: Vec<String>,
    /// Grant a plugin an env var: PLUGIN=NAME (passed through) or PLUGIN=NAME=VALUE.
    #[arg(long = "env", global = true, value_name = "PLUGIN=NAME[=VALUE]")]
    pub(super) env: Vec<String>,
    /// Audit log file [default: .toolhost/audit.jsonl next to the config].
    #[arg(long, global = true, value_name = "FILE")]
    pub(super) audit: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub(super) enum Command {
    /// Create a plugin project: the contract, one tool with a schema, build.sh and test.sh.
    ///
    /// The project goes into ./NAME, or into the directory given with `--dir DIR`, which must be
    /// absent or empty. For `new`, --dir names that directory; it grants nothing.
    New {
        /// The plugin's name, which is also its tool's name and its .wasm file's name.
        name: String,
        /// The language: rust, python, js or c.
        #[arg(long, value_name = "LANG")]
        lang: Lang,
        /// A generic component (Rust): plain typed functions in its own WIT world, each served as a
        /// tool, instead of the toolhost:plugin contract.
        #[arg(long)]
        generic: bool,
        /// The WASI version: 0.2, or 0.3 for a plugin whose call is async and streams its updates
        /// (the toolhost:plugin@0.2.0 contract; Rust).
        #[arg(long, value_name = "VERSION", default_value = "0.2", value_parser = ["0.2", "0.3"])]
        wasi: String,
    },
    /// Run the MCP daemon: on stdio by default, over Streamable HTTP with --http, or both.
    Serve {
        /// Serve MCP on stdin/stdout (the default when --http is not given).
        #[arg(long)]
        stdio: bool,
        /// Serve Streamable HTTP at /mcp (with /health, /metrics and /console/) on ADDR: IP:PORT,
        /// or PORT or localhost:PORT for loopback [default: `server.http` in the config, else
        /// 127.0.0.1:8750].
        #[arg(long, value_name = "ADDR", num_args = 0..=1)]
        http: Option<Option<String>>,
        /// Do not reload plugins when the plugins folder or the policy file changes.
        #[arg(long)]
        no_watch: bool,
    },
    /// List the tools, their plugin, hints and grants (and every rejected plugin with its reason).
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Print the tool definitions for an LLM API: anthropic, openai or openai-responses.
        #[arg(long, value_name = "FORMAT", conflicts_with = "json")]
        format: Option<toolhost::batch::Format>,
    },
    /// Run the tool calls of an LLM assistant message read from stdin; print the answer for the API.
    /// Exits 1 when any call's result is an error, 2 when the message holds no batch.
    Batch {
        /// The message's API: auto (detect it), anthropic, openai or openai-responses.
        #[arg(long, value_name = "FORMAT", default_value = "auto")]
        format: toolhost::batch::FormatChoice,
        /// Read stdin as the model's streaming response (SSE or NDJSON events, as the API sends
        /// them) and start each call as soon as its arguments are complete; print a JSON line per
        /// event (pending, started, result) as it happens, and the answer last.
        #[arg(long)]
        stream: bool,
        /// Read-only calls running at once.
        #[arg(long, value_name = "N", default_value_t = toolhost::batch::DEFAULT_CONCURRENCY,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
        concurrency: usize,
    },
    /// Call one tool and print its result; exits 1 when the result is an error.
    Call {
        /// The tool's name.
        tool: String,
        /// The input object as JSON, or "-" to read it from stdin.
        #[arg(long, short, default_value = "{}")]
        input: String,
        /// Print the whole outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Resolve every plugin `source` to digests, verify signatures against `[trust]`, fetch into
    /// the local store and write toolhost.lock; `serve` then loads exactly those bytes, offline.
    /// Exits 1 when any plugin could not be pulled (the others are pulled and locked).
    Pull {
        /// Only these plugins [default: every plugin with a source].
        #[arg(value_name = "PLUGIN")]
        names: Vec<String>,
        /// Re-resolve tags: follow a moved tag and rewrite its lock entry.
        #[arg(long)]
        update: bool,
    },
    /// Publish a component to an OCI registry as a wasm artifact; prints the manifest digest.
    Push {
        /// The component (`.wasm`).
        file: PathBuf,
        /// Where: oci://REGISTRY/REPOSITORY:TAG.
        target: String,
    },
    /// Sign a published component with an ECDSA P-256 key, in cosign's format (a
    /// `sha256-<digest>.sig` tag beside it).
    Sign {
        /// The artifact: oci://REGISTRY/REPOSITORY:TAG or @sha256:….
        target: String,
        /// The private key: an unencrypted PKCS#8 PEM file.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
    },
    /// Put the doc comments of a WIT package into a built component, so that a generic plugin's
    /// tools are described (most toolchains drop them when they build the component).
    Doc {
        /// The `.wasm` component.
        file: PathBuf,
        /// The WIT it was built from: a file, or a directory with its `deps/`.
        #[arg(long, value_name = "PATH")]
        wit: PathBuf,
        /// Write the result here instead of replacing FILE.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Grant a plugin a directory, a network destination or an environment variable in the
    /// policy file, checked as a start would check it; a serving daemon applies it at once.
    Grant {
        /// The plugin.
        plugin: String,
        /// What to grant: dir, network or env.
        kind: GrantKind,
        /// A directory (PATH), a destination (scheme://host[:port]), or a variable: NAME passes the
        /// daemon's own through, NAME=VALUE sets a value.
        value: String,
        /// A directory: read-write [default: read-only].
        #[arg(long)]
        rw: bool,
        /// A directory: where the plugin sees it [default: ".", or the folder's name when "."
        /// is taken].
        #[arg(long, value_name = "PATH")]
        guest: Option<String>,
        /// A directory: a path inside it (a glob) the plugin may never touch; repeatable.
        #[arg(long, value_name = "GLOB")]
        exclude: Vec<String>,
    },
    /// Remove a plugin's grant from the policy file; a serving daemon applies it at once (calls
    /// already running keep what they started with).
    Revoke {
        /// The plugin.
        plugin: String,
        /// What to revoke: dir, network or env.
        kind: GrantKind,
        /// The directory, destination or variable name, as for `grant`.
        value: String,
    },
    /// Mint a one-time console sign-in link on a serving daemon with the operator's bearer token
    /// (`server.token-env`, read where this runs): for a shared daemon whose browsers have no
    /// identity provider to sign in with. Prints the link.
    ConsoleLink {
        /// The daemon's address as the browser reaches it [default: http:// and `server.http`].
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Show what a component imports and exports, and whether it fits the contract.
    Inspect {
        /// The `.wasm` file.
        file: PathBuf,
    },
    /// Read the audit log: matching records, or a per-tool summary.
    Audit {
        /// Only this tool.
        #[arg(long)]
        tool: Option<String>,
        /// Only this outcome: ok, error, cancelled, input_required or unfinished (began, never ended).
        #[arg(long)]
        outcome: Option<audit::Outcome>,
        /// Only calls that started at or after this RFC 3339 time.
        #[arg(long)]
        since: Option<chrono::DateTime<chrono::Utc>>,
        /// Only calls that started before this RFC 3339 time.
        #[arg(long)]
        until: Option<chrono::DateTime<chrono::Utc>>,
        /// Print matching records as JSONL instead of the summary.
        #[arg(long)]
        records: bool,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
}
