//! Plugins in Python, JavaScript, C and Go (`plugins/examples/<lang>/`), built from source and called
//! through the real binary (a schema violation, a granted file read, the plugin's own `invalid-input`,
//! a `failed` result) and through the library pipeline (progress reports); `toolhost new` projects in
//! every language ([`scaffold`]); and the cost table of the guide ([`measure`], run on demand).
//!
//! A language whose toolchain is missing is SKIPPED, with the reason printed on the terminal even when
//! the test harness captures output; TOOLHOST_REQUIRE_LANGS=python,js,c,go (or `all`) makes it a failure.

mod measure;
mod scaffold;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use serde_json::{Value, json};
use toolhost::exec::{CallRequest, Progress};

use crate::harness::{Env, root};

/// Builds and first compiles of 5-19 MB components keep both cores busy for 10-40 s: one at a time, so
/// that the timing-sensitive tests running alongside keep a core.
static HEAVY: Mutex<()> = Mutex::new(());

pub(crate) fn heavy() -> MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Print past the test harness's capture, so that a skip is seen in `cargo test` output.
fn loud(line: &str) {
    let _ = writeln!(std::io::stderr(), "\n*** {line} ***\n");
}

/// Whether `lang`'s toolchain is installed (scripts/toolchains.sh --check). When it is not, say so
/// loudly and return false, or fail when TOOLHOST_REQUIRE_LANGS names the language.
pub(crate) fn toolchain_ready(lang: &str, what: &str) -> bool {
    let out = Command::new(root().join("scripts/toolchains.sh"))
        .args(["--check", "--langs", lang])
        .output()
        .expect("cannot run scripts/toolchains.sh");
    if out.status.success() {
        return true;
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reason = stdout
        .split_once("SKIPPED: ")
        .map_or(stdout.trim(), |(_, r)| r.trim());
    let required = std::env::var("TOOLHOST_REQUIRE_LANGS").unwrap_or_default();
    if required.split(',').any(|l| l == lang || l == "all") {
        panic!(
            "{what}: TOOLHOST_REQUIRE_LANGS requires {lang}, but its toolchain is not ready: {reason}"
        );
    }
    loud(&format!(
        "SKIPPED {what}: the {lang} toolchain is not ready ({reason}); scripts/toolchains.sh --langs {lang} installs it"
    ));
    false
}

/// PATH and variables that put the project's toolchains (.toolhost/tools) in reach of a build script.
pub(crate) fn toolchain_env(c: &mut Command) -> &mut Command {
    let tools = root().join(".toolhost/tools");
    let path = std::env::var("PATH").unwrap_or_default();
    c.env("PATH", format!("{}:{path}", tools.join("bin").display()))
        .env(
            "TOOLHOST_WASI_ADAPTER",
            tools.join("share/wasi_snapshot_preview1.reactor.wasm"),
        )
        .env("TOOLHOST_GO_PKG", tools.join("share/go-pkg"))
}

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// The newest modification time below `dir`, dependencies and caches aside.
fn newest(dir: &Path) -> SystemTime {
    let mut latest = modified(dir);
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        if matches!(name.to_str(), Some("node_modules" | "__pycache__")) {
            continue;
        }
        let path = entry.path();
        let t = if path.is_dir() {
            newest(&path)
        } else {
            modified(&path)
        };
        latest = latest.max(t);
    }
    latest
}

/// An example plugin: `plugins/examples/<lang>/<tool>/`, a component with one tool of the same name.
pub(crate) struct Example {
    pub(crate) lang: &'static str,
    pub(crate) tool: &'static str,
}

pub(crate) const PYTHON: Example = Example {
    lang: "python",
    tool: "csv_stats",
};
pub(crate) const JS: Example = Example {
    lang: "js",
    tool: "json_query",
};
pub(crate) const C: Example = Example {
    lang: "c",
    tool: "checksum",
};
pub(crate) const GO: Example = Example {
    lang: "go",
    tool: "line_stats",
};

impl Example {
    /// The component: `plugins/<tool>.wasm` when scripts/build-plugins.sh built it after the last change
    /// to its sources or the contract, else a fresh build into target/examples/; None when the
    /// language's toolchain is missing (after saying so).
    pub(crate) fn component(&self) -> Option<PathBuf> {
        let sources = root().join("plugins/examples").join(self.lang);
        let built = root().join("plugins").join(format!("{}.wasm", self.tool));
        let stale_after = newest(&sources).max(modified(&root().join("wit/plugin.wit")));
        if built.is_file() && modified(&built) >= stale_after {
            return Some(built);
        }
        if !toolchain_ready(
            self.lang,
            &format!("the {} example {}", self.lang, self.tool),
        ) {
            return None;
        }
        let out_dir = root().join("target/examples");
        let _heavy = heavy();
        let out = toolchain_env(&mut Command::new(sources.join(self.tool).join("build.sh")))
            .arg(&out_dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "building the {} example failed:\n{}{}",
            self.lang,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Some(out_dir.join(format!("{}.wasm", self.tool)))
    }

    /// A workspace with the component as `<tool>.wasm`, `work/` granted read-only, the shared compile
    /// cache, and the cache warmed (the one compile, under the heavy lock).
    fn env(&self, component: &Path) -> Env {
        self.env_with(component, "")
    }

    /// The same with more of the plugin's section, e.g. `limits = { memory-mb = 32 }`.
    fn env_with(&self, component: &Path, section: &str) -> Env {
        let cache = root().join("target/e2e-cache");
        let config = format!(
            "[cache]\ndir = '{}'\n[plugins.{}]\ndirs = [{{ host = \"work\", mode = \"ro\" }}]\n{section}\n",
            cache.display(),
            self.tool
        );
        let env = Env::new(&[], &config);
        std::fs::copy(
            component,
            env.path()
                .join("plugins")
                .join(format!("{}.wasm", self.tool)),
        )
        .unwrap();
        let _heavy = heavy();
        let out = env.run(&["list", "--json"]);
        let list: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(list["tools"][0]["name"], self.tool, "{list}");
        env
    }
}

/// Call `tool` in-process and return its progress reports.
async fn progress_of(env: &Env, tool: &str, input: Value) -> Vec<Progress> {
    let p = env.pipeline(4).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let outcome = p
        .call(CallRequest {
            tool: tool.into(),
            input,
            origin: "test",
            progress: Some(Arc::new(move |pr| sink.lock().unwrap().push(pr))),
            ..CallRequest::default()
        })
        .await;
    assert!(!outcome.is_error(), "{}", outcome.content);
    let reports = seen.lock().unwrap().clone();
    assert!(!reports.is_empty(), "{tool} reported no progress");
    reports
}

#[track_caller]
fn assert_dones(reports: &[Progress], dones: &[u64], total: u64) {
    let got: Vec<u64> = reports.iter().map(|r| r.done).collect();
    assert_eq!(got, dones, "{reports:?}");
    assert_eq!(reports.last().unwrap().total, Some(total), "{reports:?}");
}

#[tokio::test]
async fn python_csv_stats_reads_a_granted_csv_validates_and_fails_cleanly() {
    let Some(component) = PYTHON.component() else {
        return;
    };
    let env = PYTHON.env(&component);
    std::fs::write(
        env.work().join("cities.csv"),
        "city,pop\nParis,2100000\nLyon,520000\nNice,\n",
    )
    .unwrap();
    let rows: String = (1..=2500).map(|i| format!("{i},x{}\n", i % 7)).collect();
    std::fs::write(env.work().join("big.csv"), format!("n,tag\n{rows}")).unwrap();

    let r = env.call("csv_stats", json!({ "path": "cities.csv" }));
    r.assert_ok();
    assert!(
        r.content().starts_with("cities.csv: 3 rows, 2 columns"),
        "{}",
        r.content()
    );
    assert_eq!(r.json["structured"]["columns"][1]["mean"], json!(1310000.0));
    assert_eq!(r.json["structured"]["columns"][0]["top"], "Paris");

    env.call(
        "csv_stats",
        json!({ "path": "cities.csv", "delimiter": ";;" }),
    )
    .assert_error("invalid_input", "- /delimiter:");
    env.call(
        "csv_stats",
        json!({ "path": "cities.csv", "columns": ["pop", "area"] }),
    )
    .assert_error(
        "invalid_input",
        "no column named 'area' in 'cities.csv'; its columns are: 'city', 'pop'",
    );
    env.call("csv_stats", json!({ "path": "missing.csv" }))
        .assert_error(
            "tool_failed",
            "cannot read 'missing.csv': No such file or directory",
        );
    let r = env.call("csv_stats", json!({ "path": "../toolhost.toml" }));
    r.assert_error("tool_failed", "cannot read '../toolhost.toml'");

    let reports = progress_of(&env, "csv_stats", json!({ "path": "big.csv" })).await;
    assert_dones(&reports, &[1000, 2000, 2500], 2500);
}

/// Reading a small file takes little memory: the plugin once asked CPython for a 64 MiB buffer to read
/// any file into, which failed under a lower memory limit and grew every call's memory by that much.
#[test]
fn python_csv_stats_reads_a_small_file_under_a_low_memory_limit() {
    let Some(component) = PYTHON.component() else {
        return;
    };
    let env = PYTHON.env_with(&component, "limits = { memory-mb = 40 }");
    std::fs::write(env.work().join("tiny.csv"), "a,b\n1,2\n").unwrap();
    let r = env.call("csv_stats", json!({ "path": "tiny.csv" }));
    assert!(
        r.assert_ok()
            .content()
            .starts_with("tiny.csv: 1 row, 2 columns"),
        "{}",
        r.content()
    );
    let peak = env.audit().last().unwrap()["peak_memory_bytes"]
        .as_u64()
        .unwrap();
    assert!(peak < 32 << 20, "peak memory {peak}");
}

#[tokio::test]
async fn js_json_query_reads_a_granted_json_validates_and_fails_cleanly() {
    let Some(component) = JS.component() else {
        return;
    };
    let env = JS.env(&component);
    let doc = json!({ "items": [{ "name": "a", "n": 1 }, { "name": "b", "n": 2 }], "cfg": { "log level": "debug" } });
    std::fs::write(env.work().join("data.json"), doc.to_string()).unwrap();
    std::fs::write(env.work().join("bad.json"), "{ not json").unwrap();
    std::fs::write(env.work().join("bom.json"), "\u{feff}{\"k\": \"é ☃\"}").unwrap();
    std::fs::write(env.work().join("latin1.json"), b"{\"k\": \"\xe9\"}").unwrap();
    std::fs::create_dir(env.work().join("sub")).unwrap();
    // Decoded 64 KiB at a time: the first slice ends inside a three-byte character.
    let wide = json!({ "pad": "☃".repeat(30_000), "k": "😀é" }).to_string();
    assert_eq!(
        wide.as_bytes()[1 << 16] & 0xc0,
        0x80,
        "the cut falls inside a character"
    );
    std::fs::write(env.work().join("wide.json"), wide).unwrap();

    let r = env.call(
        "json_query",
        json!({ "path": "data.json", "query": ".items[].name" }),
    );
    r.assert_ok();
    assert_eq!(r.content(), "\"a\"\n\"b\"");
    assert_eq!(
        r.json["structured"],
        json!({ "results": ["a", "b"], "count": 2, "truncated": false })
    );
    let r = env.call(
        "json_query",
        json!({ "path": "data.json", "query": ".cfg[\"log level\"]" }),
    );
    assert_eq!(r.assert_ok().content(), "\"debug\"");
    let r = env.call(
        "json_query",
        json!({ "path": "data.json", "query": ".items | length" }),
    );
    assert_eq!(r.assert_ok().content(), "2");

    env.call("json_query", json!({ "path": "data.json", "limit": 0 }))
        .assert_error("invalid_input", "- /limit:");
    env.call(
        "json_query",
        json!({ "path": "data.json", "query": ".items.name" }),
    )
    .assert_error(
        "invalid_input",
        "cannot take member \"name\" of a value of type array",
    );
    env.call(
        "json_query",
        json!({ "path": "data.json", "query": "items" }),
    )
    .assert_error("invalid_input", "cannot parse query");
    env.call("json_query", json!({ "path": "bad.json" }))
        .assert_error("tool_failed", "cannot parse 'bad.json' as JSON");
    // UTF-8 as it is, a byte order mark skipped (RFC 8259 8.1); anything else is refused, not guessed.
    let r = env.call("json_query", json!({ "path": "bom.json", "query": ".k" }));
    assert_eq!(r.assert_ok().content(), "\"é ☃\"");
    let r = env.call(
        "json_query",
        json!({ "path": "wide.json", "query": ".pad | length" }),
    );
    assert_eq!(r.assert_ok().content(), "30000");
    let r = env.call("json_query", json!({ "path": "wide.json", "query": ".k" }));
    assert_eq!(r.assert_ok().content(), "\"😀é\"");
    env.call("json_query", json!({ "path": "latin1.json" }))
        .assert_error(
            "tool_failed",
            "cannot read 'latin1.json': it is not UTF-8 text",
        );
    env.call("json_query", json!({ "path": "sub" }))
        .assert_error("tool_failed", "cannot read 'sub': it is a directory");
    env.call("json_query", json!({ "path": "missing.json" }))
        .assert_error(
            "tool_failed",
            "cannot open 'missing.json': No such file or directory",
        );
    env.call("json_query", json!({ "path": "../toolhost.toml" }))
        .assert_error("tool_failed", "outside the granted directory");

    let reports = progress_of(
        &env,
        "json_query",
        json!({ "path": "data.json", "query": "." }),
    )
    .await;
    assert_dones(&reports, &[1, 2, 3], 3);
}

#[tokio::test]
async fn c_checksum_hashes_a_granted_file_validates_and_fails_cleanly() {
    use sha2::Digest as _;
    let Some(component) = C.component() else {
        return;
    };
    let env = C.env(&component);
    std::fs::write(env.work().join("hello.txt"), "hello world\n").unwrap();
    let big: Vec<u8> = (0..3_500_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(env.work().join("big.bin"), &big).unwrap();
    std::fs::create_dir(env.work().join("sub")).unwrap();

    let r = env.call("checksum", json!({ "path": "big.bin" }));
    let digest: String = sha2::Sha256::digest(&big)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(r.assert_ok().json["structured"]["digest"], digest);
    assert_eq!(r.json["structured"]["bytes"], 3_500_000);
    let r = env.call(
        "checksum",
        json!({ "path": "hello.txt", "algorithm": "crc32" }),
    );
    assert!(
        r.assert_ok().content().starts_with("af083b2d  hello.txt"),
        "{}",
        r.content()
    );
    let r = env.call(
        "checksum",
        json!({ "path": "hello.txt", "algorithm": "fnv1a64", "expect": "782E1488CD5A68B7" }),
    );
    assert_eq!(r.assert_ok().json["structured"]["matches"], true);

    env.call(
        "checksum",
        json!({ "path": "hello.txt", "algorithm": "md5" }),
    )
    .assert_error("invalid_input", "- /algorithm:");
    env.call("checksum", json!({ "path": "hello.txt", "expect": "abc" }))
        .assert_error(
            "invalid_input",
            "'expect' has 3 hex digits, but a sha256 digest has 64",
        );
    env.call(
        "checksum",
        json!({ "path": "hello.txt", "algorithm": "crc32", "expect": "00000000" }),
    )
    .assert_error(
        "tool_failed",
        "'hello.txt' does not match: its crc32 is af083b2d, expected 00000000",
    );
    env.call("checksum", json!({ "path": "missing.bin" }))
        .assert_error(
            "tool_failed",
            "cannot read 'missing.bin': No such file or directory",
        );
    env.call("checksum", json!({ "path": "sub" }))
        .assert_error("tool_failed", "it is a directory");

    let reports = progress_of(&env, "checksum", json!({ "path": "big.bin" })).await;
    assert_dones(&reports, &[1 << 20, 2 << 20, 3 << 20, 3_500_000], 3_500_000);
}

#[tokio::test]
async fn go_line_stats_reads_a_granted_file_validates_and_fails_cleanly() {
    let Some(component) = GO.component() else {
        return;
    };
    let env = GO.env(&component);
    std::fs::write(
        env.work().join("a.txt"),
        "short\r\n\n\tindented \nthis line is longer than twenty\nend",
    )
    .unwrap();
    let lines: String = (0..12_000)
        .map(|i| format!("{}\n", "x".repeat(i % 130)))
        .collect();
    std::fs::write(env.work().join("big.txt"), lines).unwrap();

    let r = env.call("line_stats", json!({ "path": "a.txt", "max_width": 20 }));
    r.assert_ok();
    let s = &r.json["structured"];
    assert_eq!(
        (s["lines"].as_u64(), s["blank"].as_u64(), s["crlf"].as_u64()),
        (Some(5), Some(1), Some(1)),
        "{s}"
    );
    // "this line is longer than twenty" is 31 characters wide.
    assert_eq!(s["long"], json!([{ "line": 4, "width": 31 }]));
    assert!(
        r.content().contains("no newline at the end of the file"),
        "{}",
        r.content()
    );

    env.call("line_stats", json!({ "path": "a.txt", "max_width": 0 }))
        .assert_error("invalid_input", "- /max_width:");
    env.call("line_stats", json!({ "path": "/etc/passwd" }))
        .assert_error(
            "invalid_input",
            "'path' must be relative to the granted directory",
        );
    env.call("line_stats", json!({ "path": "missing.txt" }))
        .assert_error(
            "tool_failed",
            "cannot read 'missing.txt': No such file or directory",
        );
    env.call("line_stats", json!({ "path": "../toolhost.toml" }))
        .assert_error("tool_failed", "cannot read '../toolhost.toml'");

    let reports = progress_of(&env, "line_stats", json!({ "path": "big.txt" })).await;
    assert_dones(&reports, &[5000, 10_000, 12_000], 12_000);
}
