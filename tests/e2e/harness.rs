//! A throw-away workspace per test: a plugins folder with chosen plugins, a config, a granted dir.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use std::sync::Arc;

use toolhost::exec::Pipeline;
use toolhost::host::Host;
use toolhost_config::config::{Config, Overrides, RawConfig};

/// The repository root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A built plugin: an example (`plugins/NAME.wasm`) or a fixture (`target/fixtures/NAME.wasm`).
pub(crate) fn plugin_file(name: &str) -> PathBuf {
    let example = root().join("plugins").join(format!("{name}.wasm"));
    if example.is_file() {
        return example;
    }
    let fixture = root().join("target/fixtures").join(format!("{name}.wasm"));
    assert!(
        fixture.is_file(),
        "{name}.wasm is not built: run scripts/build-plugins.sh first (looked in plugins/ and target/fixtures/)"
    );
    fixture
}

/// How often [`wait_until`] and its twins look again: short, so the normal path is fast.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// A generous bound for waiting on something that normally happens within milliseconds: the
/// tests run on a loaded two-core CI machine.
pub(crate) const EVENT_WAIT: Duration = Duration::from_secs(20);

/// Look for `found()` every [`POLL`] until it is `Some`, for at most `limit`; `None` when it never
/// was. The primitive under [`wait_until`] and [`wait_for`], for a site that builds its own
/// failure message from the state it saw last.
pub(crate) fn poll<T>(limit: Duration, mut found: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = found() {
            return Some(value);
        }
        if started.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// [`poll`] inside a tokio test: sleeps between looks without blocking the runtime's threads.
pub(crate) async fn poll_async<T>(
    limit: Duration,
    mut found: impl FnMut() -> Option<T>,
) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = found() {
            return Some(value);
        }
        if started.elapsed() >= limit {
            return None;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Wait until `done()` holds, looking every [`POLL`]; after `limit` fail, saying `what` did not
/// happen. For synchronising with the daemon instead of sleeping (a begin line, `/ready`, a log
/// line, a file): the test goes on the moment it happened.
#[track_caller]
pub(crate) fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    wait_for(what, limit, || done().then_some(()))
}

/// [`wait_until`] for a condition that yields a value: the first `Some` is returned.
#[track_caller]
pub(crate) fn wait_for<T>(what: &str, limit: Duration, found: impl FnMut() -> Option<T>) -> T {
    // A `match`, not a closure, so that the panic names the caller's line (track_caller).
    match poll(limit, found) {
        Some(value) => value,
        None => panic!("timed out after {limit:?} waiting for {what}"),
    }
}

/// [`wait_for`] inside a tokio test.
pub(crate) async fn wait_for_async<T>(
    what: &str,
    limit: Duration,
    found: impl FnMut() -> Option<T>,
) -> T {
    poll_async(limit, found)
        .await
        .unwrap_or_else(|| panic!("timed out after {limit:?} waiting for {what}"))
}

/// The first line of the audit log at `path` that satisfies `matches`, if any yet.
pub(crate) fn audit_line_at(
    path: &Path,
    matches: impl Fn(&serde_json::Value) -> bool,
) -> Option<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .find(|l| matches(l))
}

/// A temporary workspace: `plugins/`, `work/` (for grants), `toolhost.toml`.
pub(crate) struct Env {
    pub(crate) dir: tempfile::TempDir,
}

impl Env {
    /// A workspace with these plugins and this config text.
    pub(crate) fn new(plugins: &[&str], config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        for p in plugins {
            std::fs::copy(
                plugin_file(p),
                dir.path().join("plugins").join(format!("{p}.wasm")),
            )
            .unwrap();
        }
        std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
        Self { dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The workspace's `toolhost.toml`, loaded as the daemon loads it.
    pub(crate) fn config(&self) -> Config {
        let text = std::fs::read_to_string(self.path().join("toolhost.toml")).unwrap();
        let raw: RawConfig = toml::from_str(&text).unwrap();
        Config::from_raw(raw, self.path(), &Overrides::default()).unwrap()
    }

    /// The host over this workspace, as `toolhost call` and `batch` open it (the daemon adds its
    /// state store and telemetry), `max_calls` at once.
    pub(crate) async fn host(&self, max_calls: usize) -> Host {
        Host::open(self.config(), max_calls).await.unwrap()
    }

    /// The pipeline of [`Self::host`]: for tests that drive it in-process (stage by stage,
    /// progress, approvals) rather than through the binary.
    pub(crate) async fn pipeline(&self, max_calls: usize) -> Arc<Pipeline> {
        self.host(max_calls).await.pipeline().clone()
    }

    pub(crate) fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// Run the binary in the workspace with a clean, known environment.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        c.current_dir(self.path())
            .args(args)
            .env("TOOLHOST_SECRET_CANARY", "canary-4711");
        c
    }

    /// `toolhost call TOOL --input JSON --json`, parsed.
    pub(crate) fn call(&self, tool: &str, input: serde_json::Value) -> Called {
        let out = self.run(&["call", tool, "--input", &input.to_string(), "--json"]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let json: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "stdout of `call {tool}` is not one JSON document ({e}):\n{stdout}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        Called {
            code: out.status.code(),
            json,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The end records written so far (one per finished call; begin lines left out).
    pub(crate) fn audit(&self) -> Vec<serde_json::Value> {
        self.audit_lines()
            .into_iter()
            .filter(|l| l["event"] != "begin")
            .collect()
    }

    /// Wait (up to [`EVENT_WAIT`]) until the audit log holds a begin line that satisfies
    /// `matches`: the call passed the gate and its plugin is starting. Returns the line.
    #[track_caller]
    pub(crate) fn wait_for_begin(
        &self,
        what: &str,
        matches: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        wait_for(&format!("the begin line of {what}"), EVENT_WAIT, || {
            self.audit_lines()
                .into_iter()
                .find(|l| l["event"] == "begin" && matches(l))
        })
    }

    /// Wait (up to [`EVENT_WAIT`]) until the audit log holds at least `n` begin lines.
    #[track_caller]
    pub(crate) fn wait_for_begins(&self, n: usize) {
        wait_until(
            &format!("{n} begin lines in the audit log"),
            EVENT_WAIT,
            || {
                self.audit_lines()
                    .iter()
                    .filter(|l| l["event"] == "begin")
                    .count()
                    >= n
            },
        )
    }

    /// Every line of the audit log so far: begin lines and end records.
    pub(crate) fn audit_lines(&self) -> Vec<serde_json::Value> {
        let path = self.path().join(".toolhost/audit.jsonl");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// The result of one `call`.
pub(crate) struct Called {
    pub(crate) code: Option<i32>,
    pub(crate) json: serde_json::Value,
    pub(crate) stderr: String,
}

impl Called {
    pub(crate) fn content(&self) -> &str {
        self.json["content"].as_str().unwrap()
    }
    pub(crate) fn is_error(&self) -> bool {
        self.json["is_error"].as_bool().unwrap()
    }
    pub(crate) fn kind(&self) -> &str {
        self.json["error_kind"].as_str().unwrap_or("none")
    }
    #[track_caller]
    pub(crate) fn assert_ok(&self) -> &Self {
        assert!(
            !self.is_error(),
            "expected success, got: {}\nstderr: {}",
            self.json,
            self.stderr
        );
        assert_eq!(self.code, Some(0));
        self
    }
    #[track_caller]
    pub(crate) fn assert_error(&self, kind: &str, needle: &str) -> &Self {
        assert!(
            self.is_error(),
            "expected a {kind} error, got success: {}",
            self.json
        );
        assert_eq!(self.kind(), kind, "{}", self.json);
        assert!(
            self.content().contains(needle),
            "{:?} does not contain {needle:?}",
            self.content()
        );
        assert_eq!(self.code, Some(1));
        self
    }
}

/// A server program the tests start (installed by scripts/services.sh), or `None` after printing
/// SKIPPED for `test`; with TOOLHOST_REQUIRE_SERVICES set (as in CI) a missing one fails instead.
pub(crate) fn service(program: &str, test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
        .map(|d| d.join(program))
        .find(|p| p.is_file());
    if found.is_none() {
        let why = format!("{program} is not installed (scripts/services.sh installs it)");
        assert!(
            std::env::var_os("TOOLHOST_REQUIRE_SERVICES").is_none(),
            "{test}: TOOLHOST_REQUIRE_SERVICES is set, but {why}"
        );
        eprintln!("SKIPPED {test}: {why}");
    }
    found
}

/// A throw-away CA and a certificate it signed for 127.0.0.1, made by openssl in `d`: `ca.pem`,
/// `leaf.pem` and `leaf.key` (mode 0600), for the tests that serve TLS on loopback.
pub(crate) fn loopback_certificates(d: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        d,
        &[
            &["req", "-x509"][..],
            &ec,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=toolhost test CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign",
            ],
        ]
        .concat(),
    );
    openssl(
        d,
        &[
            &["req"][..],
            &ec,
            &[
                "-keyout",
                "leaf.key",
                "-out",
                "leaf.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat(),
    );
    std::fs::write(
        d.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "leaf.pem",
            "-days",
            "2",
            "-extfile",
            "leaf.ext",
        ],
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.join("leaf.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
