//! Workspaces for the benchmark: a temporary folder with a plugins folder, a `toolhost.toml` and whatever
//! else a part needs; and an in-process pipeline over it, built as `toolhost serve` builds its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolhost::exec::Pipeline;
use toolhost_config::config::{Config, Overrides};

/// The repository root.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `toolhost` binary cargo built next to this benchmark, or the one `TOOLHOST_BENCH_BIN` names.
pub(crate) fn toolhost_bin() -> PathBuf {
    // Another build to measure, such as the `dist` profile's that users install (fat LTO).
    std::env::var_os("TOOLHOST_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_toolhost")))
}

/// A built plugin: `plugins/NAME.wasm`, or a test fixture in `target/fixtures/`.
pub(crate) fn plugin_file(name: &str) -> PathBuf {
    let root = repo_root();
    let example = root.join("plugins").join(format!("{name}.wasm"));
    if example.is_file() {
        example
    } else {
        root.join("target/fixtures").join(format!("{name}.wasm"))
    }
}

/// Fail early, with what to do, when the plugins are not built.
pub(crate) fn check_prerequisites() -> Result<(), String> {
    for name in ["echo", "math", "fs", "hostile", "generic"] {
        let p = plugin_file(name);
        if !p.is_file() {
            return Err(format!(
                "{} is missing: run scripts/build-plugins.sh (or scripts/bench.sh)",
                p.display()
            ));
        }
    }
    Ok(())
}

/// `bytes` with a custom section appended that names `tag`: the same component, a different content hash,
/// so that copies of one plugin are compiled and cached separately, as distinct plugins would be.
pub(crate) fn distinct_copy(bytes: &[u8], tag: &str) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }
    let name = b"toolhost-bench";
    let mut payload = Vec::new();
    leb(name.len(), &mut payload);
    payload.extend_from_slice(name);
    payload.extend_from_slice(tag.as_bytes());
    let mut out = bytes.to_vec();
    out.push(0); // custom section
    leb(payload.len(), &mut out);
    out.extend_from_slice(&payload);
    out
}

/// A temporary folder holding `plugins/`, `toolhost.toml` and the audit log and compile cache under
/// `.toolhost/`. Removed when dropped.
pub(crate) struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    /// A workspace with `plugins` (file stem, source file) and this config text.
    pub(crate) fn new(plugins: &[(&str, PathBuf)], toml: &str) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("toolhost-bench-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let ws = Self { dir };
        std::fs::create_dir_all(ws.path().join("plugins")).map_err(|e| e.to_string())?;
        for (stem, src) in plugins {
            let dest = ws.path().join("plugins").join(format!("{stem}.wasm"));
            std::fs::copy(src, &dest).map_err(|e| format!("{}: {e}", src.display()))?;
        }
        ws.write("toolhost.toml", &with_extra(toml))?;
        Ok(ws)
    }

    /// `n` plugins, alternately copies of echo and math, each with its own content and tool prefix.
    pub(crate) fn with_copies(n: usize, extra_toml: &str) -> Result<Self, String> {
        let ws = Self::new(&[], "")?;
        let (echo, math) = (read(&plugin_file("echo"))?, read(&plugin_file("math"))?);
        let mut toml = String::from(extra_toml);
        for i in 0..n {
            let (kind, bytes) = if i % 2 == 0 {
                ("echo", &echo)
            } else {
                ("math", &math)
            };
            let stem = format!("{kind}{i:02}");
            let file = ws.path().join("plugins").join(format!("{stem}.wasm"));
            std::fs::write(&file, distinct_copy(bytes, &stem)).map_err(|e| e.to_string())?;
            toml.push_str(&format!("\n[plugins.{stem}]\nprefix = \"p{i:02}_\"\n"));
        }
        ws.write("toolhost.toml", &with_extra(&toml))?;
        Ok(ws)
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn config_path(&self) -> PathBuf {
        self.path().join("toolhost.toml")
    }

    pub(crate) fn write(&self, rel: &str, text: &str) -> Result<(), String> {
        let p = self.path().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
    }

    pub(crate) fn config(&self) -> Result<Config, String> {
        Config::load(Some(&self.config_path()), &Overrides::default()).map_err(|e| e.to_string())
    }
}

/// `toml` plus `$TOOLHOST_BENCH_TOML`: extra config for every workspace, to compare settings
/// (e.g. `[engine]\npooling = false`) in otherwise identical runs.
fn with_extra(toml: &str) -> String {
    match std::env::var("TOOLHOST_BENCH_TOML") {
        Ok(extra) if !extra.is_empty() => format!("{extra}\n{toml}"),
        _ => toml.to_string(),
    }
}

pub(crate) fn read(p: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// A pipeline over the workspace, from the [`Host`](toolhost::host::Host) `toolhost serve` opens:
/// its engine, registry and audit log (not its state store or telemetry).
pub(crate) async fn pipeline(ws: &Workspace) -> Result<Arc<Pipeline>, String> {
    let config = ws.config()?;
    let max = config.server.max_concurrent_calls;
    let host = toolhost::host::Host::open(config, max)
        .await
        .map_err(|e| e.to_string())?;
    let pipeline = host.pipeline().clone();
    let rejected: Vec<String> = pipeline
        .services()
        .registry
        .catalog()
        .plugins
        .iter()
        .filter_map(|(n, s)| match s {
            toolhost::registry::PluginStatus::Rejected { reason, .. } => {
                Some(format!("{n}: {reason}"))
            }
            toolhost::registry::PluginStatus::Loaded { .. } => None,
        })
        .collect();
    if !rejected.is_empty() {
        return Err(format!("plugins rejected: {}", rejected.join("; ")));
    }
    Ok(pipeline)
}
