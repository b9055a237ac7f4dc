//! Hostile plugins through the real daemon (`serve --stdio`): for each attack, the exact result the
//! client gets, its audit record, and a normal call on the same daemon that still succeeds. What
//! `sandbox.rs` already proves through the CLI (escapes by `..`, absolute paths and planted links,
//! read-only grants) is not repeated here.

pub(crate) mod components;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use self::components::{Component, PAYLOAD, log_then_ok, ok_content};
use crate::daemon::{Daemon, Outcome, http, record};
use crate::harness::{EVENT_WAIT, Env, poll, wait_until};

const BASE: &str = "[permissions]\nmode = \"bypass\"\n";

/// hostile (with `work/` granted read-write) and echo, hostile under tight limits.
fn env_with(limits: &str) -> Env {
    Env::new(
        &["hostile", "echo"],
        &format!(
            "{BASE}[plugins.hostile]\ndirs = [{{ host = \"work\", mode = \"rw\" }}]\nlimits = {{ {limits} }}\n"
        ),
    )
}

/// The audit record of `o`, checked against the outcome the client got.
#[track_caller]
fn audited(env: &Env, o: &Outcome) -> Value {
    let r = record(env, o.call_id());
    assert_eq!(r["tool"], o.tool.as_str(), "{r}");
    assert_eq!(r["origin"], "mcp", "{r}");
    if o.is_error() {
        assert_eq!(r["outcome"], "error", "{r}");
        assert_eq!(r["error_kind"], o.kind(), "{r}");
    } else {
        assert_eq!(r["outcome"], "ok", "{r}");
        assert_eq!(r["error_kind"], Value::Null, "{r}");
    }
    r
}

/// A normal call right after an attack: the daemon still answers, and records it.
#[track_caller]
fn still_serving(d: &mut Daemon, env: &Env, after: &str) {
    let text = format!("still here after {after}");
    let o = d.call("echo", json!({ "text": text }));
    o.assert_ok();
    assert_eq!(o.structured()["text"], text.as_str());
    audited(env, &o);
}

/// Call, expect an error of `kind` mentioning `needle`, check its record, then a normal call.
#[track_caller]
fn attack(d: &mut Daemon, env: &Env, tool: &str, args: Value, kind: &str, needle: &str) -> Value {
    let o = d.call(tool, args);
    o.assert_error(kind, needle);
    let r = audited(env, &o);
    still_serving(d, env, tool);
    r
}

#[test]
fn one_daemon_outlives_every_limit_a_plugin_can_hit() {
    let env = env_with("timeout-ms = 500, memory-mb = 64");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let started = Instant::now();
    let r = attack(
        &mut d,
        &env,
        "spin",
        json!({}),
        "timeout",
        "Tool 'spin' timed out after 500 ms and was stopped.",
    );
    assert!(r["duration_us"].as_u64().unwrap() < 5_000_000, "{r}");
    attack(
        &mut d,
        &env,
        "sleep",
        json!({ "ms": 3_600_000 }),
        "timeout",
        "timed out after 500 ms",
    );
    let r = attack(
        &mut d,
        &env,
        "grow",
        json!({ "mb": 200, "abort": true }),
        "memory_limit",
        "memory limit of 64 MiB",
    );
    assert!(r["peak_memory_bytes"].as_u64().unwrap() <= 64 << 20, "{r}");
    attack(&mut d, &env, "recurse", json!({}), "trap", "stack overflow");
    attack(
        &mut d,
        &env,
        "recurse",
        json!({ "native": true }),
        "trap",
        "stack overflow (unbounded recursion?)",
    );
    attack(&mut d, &env, "trap", json!({}), "trap", "boom");
    attack(
        &mut d,
        &env,
        "exit",
        json!({ "code": 3 }),
        "trap",
        // WASI 0.2's exit carries success or failure only: any non-zero code arrives as 1.
        "the plugin called exit with exit status 1",
    );
    attack(
        &mut d,
        &env,
        "bad_structured",
        json!({}),
        "bad_output",
        "does not match its output schema",
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(d.stop().success());
}

#[test]
fn a_million_progress_reports_reach_the_client_as_a_few_increasing_notifications() {
    let env = env_with("timeout-ms = 60000");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let (o, progress) = d.call_with_progress("progress_flood", json!({ "count": 1_000_000 }));
    o.assert_ok();
    assert_eq!(o.text(), "reported progress 1000000 times");
    audited(&env, &o);
    assert!(
        !progress.is_empty() && progress.len() < 100_000,
        "{} notifications",
        progress.len()
    );
    let done: Vec<f64> = progress
        .iter()
        .map(|p| p["params"]["progress"].as_f64().unwrap())
        .collect();
    assert!(
        done.windows(2).all(|w| w[0] < w[1]),
        "progress must increase: {done:?}"
    );
    assert_eq!(
        done.last(),
        Some(&1_000_000.0),
        "the last report arrives before the result"
    );
    // A 50 MB message per report is cut to 4 KiB before it goes anywhere.
    let (o, progress) =
        d.call_with_progress("progress_flood", json!({ "count": 3, "bytes": 50_000_000 }));
    o.assert_ok();
    audited(&env, &o);
    assert!(!progress.is_empty());
    for p in &progress {
        let message = p["params"]["message"].as_str().unwrap();
        assert!(
            message.len() <= 4096 + 3 && message.ends_with('…'),
            "{} bytes",
            message.len()
        );
    }
    still_serving(&mut d, &env, "progress_flood");
    assert!(d.stop().success());
}

#[test]
fn a_huge_argument_into_a_host_import_is_cut_and_a_log_flood_is_capped() {
    let env = env_with("timeout-ms = 60000");
    let mut d = Daemon::start_env(&env, &["--no-watch"], &[("TOOLHOST_LOG", "info")]);
    let o = d.call("log_flood", json!({ "count": 1, "bytes": 100_000_000 }));
    o.assert_ok();
    audited(&env, &o);
    let o = d.call("log_flood", json!({ "count": 20_000 }));
    o.assert_ok();
    assert_eq!(o.text(), "logged 20000 lines");
    audited(&env, &o);
    still_serving(&mut d, &env, "log_flood");
    // Give the stderr reader a moment to catch up, then look at what reached the log. The log
    // never waits for its reader: lines this test's reader was too slow for are dropped, and a
    // notice counts them, so what was logged is what arrived plus what the notices count.
    let logged = || -> (Vec<String>, usize) {
        let stderr = d.stderr();
        let lines = stderr
            .lines()
            .filter(|l| l.contains("hostile log line"))
            .map(String::from)
            .collect();
        (lines, dropped_lines(&stderr))
    };
    let (lines, dropped) = poll(EVENT_WAIT, || {
        Some(logged()).filter(|(l, dropped)| l.len() + dropped >= 1001)
    })
    .unwrap_or_else(logged);
    assert!(lines.len() <= 1001, "{} lines", lines.len());
    // Other lines may be among those dropped, but far fewer than 19,000 more of the guest's.
    assert!(
        (1001..1001 + 100).contains(&(lines.len() + dropped)),
        "one huge line, then at most 1000 lines per call: {} arrived, {dropped} dropped",
        lines.len()
    );
    assert!(
        lines.iter().all(|l| l.len() < 4096 + 200),
        "a log line was not cut: {} bytes",
        lines[0].len()
    );
    assert!(d.stop().success());
}

#[test]
fn hundreds_of_megabytes_of_result_are_cut_to_the_output_cap_or_refused() {
    let env = env_with("timeout-ms = 60000, memory-mb = 1024");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    // Under the host's transfer bound (128 MiB): copied out, then cut to the output cap.
    let o = d.call(
        "big_output",
        json!({ "bytes": 100_000_000, "fill": "é€🦀" }),
    );
    o.assert_ok();
    let text = o.text();
    assert!(text.len() < (256 << 10) + 400, "{} bytes", text.len());
    let tail: String = text
        .chars()
        .rev()
        .take(200)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert!(
        text.contains("[output truncated: showing the first 262"),
        "{tail}"
    );
    assert!(text.contains(" of 100000000 bytes ("), "{tail}");
    let r = audited(&env, &o);
    assert_eq!(r["truncated"], true, "{r}");
    assert!(
        r["peak_memory_bytes"].as_u64().unwrap() >= 100_000_000,
        "{r}"
    );
    // Over it: the host refuses to allocate that much on the guest's behalf, and says so.
    attack(
        &mut d,
        &env,
        "big_output",
        json!({ "bytes": 300_000_000, "fill": "é€🦀" }),
        "trap",
        "more than 128 MiB in one value",
    );
    assert!(d.stop().success());
}

#[test]
fn invalid_utf8_and_wild_pointers_from_a_component_are_traps() {
    let env = Env::new(&["echo"], BASE);
    let plugins = env.path().join("plugins");
    let write = |name: &str, c: Component| {
        std::fs::write(plugins.join(format!("{name}.wasm")), c.build()).unwrap()
    };
    // Content that is not UTF-8; a pointer past the end of memory; the same two into `host.log`.
    write(
        "w_utf8",
        Component::new("bad_utf8")
            .payload(b"\xff\xfe bad")
            .body(ok_content(PAYLOAD, 6)),
    );
    write(
        "w_oob",
        Component::new("wild_pointer").body(ok_content(0xffff_0000, 4096)),
    );
    write(
        "w_len",
        Component::new("wild_length").body(ok_content(0, 0x7fff_ffff)),
    );
    write(
        "w_log_oob",
        Component::new("log_wild_pointer").body(log_then_ok(0xffff_ff00, 4096)),
    );
    write(
        "w_log_utf8",
        Component::new("log_bad_utf8")
            .payload(b"\xc3\x28")
            .body(log_then_ok(PAYLOAD, 2)),
    );
    let mut d = Daemon::start(&env, &["--no-watch"]);
    for (tool, needle) in [
        ("bad_utf8", "utf-8"),
        ("wild_pointer", "out of bounds"),
        ("wild_length", "out of bounds"),
        ("log_wild_pointer", "out of bounds"),
        ("log_bad_utf8", "utf-8"),
    ] {
        attack(&mut d, &env, tool, json!({}), "trap", needle);
    }
    assert!(d.stop().success());
}

#[test]
fn escapes_and_control_characters_reach_the_client_intact_as_json() {
    let env = env_with("timeout-ms = 5000");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let o = d.call("weird_text", json!({}));
    o.assert_ok();
    audited(&env, &o);
    let expected = "\u{1b}[31mred\u{1b}[0m \u{1b}]0;pwned\u{7} nul:\u{0} cr:\r ls:\u{2028} ps:\u{2029} \
                    bom:\u{feff} rtl:\u{202e}txt.exe\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";
    assert_eq!(
        o.text(),
        expected,
        "the text is passed on exactly, as escaped JSON"
    );
    assert_eq!(o.structured()["text"], expected);
    still_serving(&mut d, &env, "weird_text");
    // The embedded JSON-RPC line stayed inside its string: no stray message, no answer to id 1.
    assert_eq!(d.next_unsolicited(Duration::from_millis(200)), None);
    assert!(d.stop().success());
}

#[test]
fn guest_output_and_fake_json_rpc_never_reach_the_stdio_transport() {
    let env = env_with("timeout-ms = 20000");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    for _ in 0..3 {
        let o = d.call("print", json!({ "lines": 5000 }));
        o.assert_ok();
        audited(&env, &o);
        let o = d.call("stdin", json!({}));
        o.assert_ok();
        assert_eq!(
            o.structured()["bytes"],
            0,
            "the guest's stdin is empty, never the MCP stream: {}",
            o.result
        );
        still_serving(&mut d, &env, "print");
    }
    // The fake `{"jsonrpc":"2.0","id":1,"result":{}}` lines would answer our first request id.
    assert_eq!(d.next_unsolicited(Duration::from_millis(200)), None);
    assert!(d.stop().success(), "the daemon must exit cleanly");
}

#[test]
fn the_daemons_env_args_and_earlier_calls_stay_invisible() {
    let env = Env::new(
        &["hostile", "echo"],
        &format!("{BASE}[plugins.hostile]\nenv = {{ GREETING = \"hi\" }}\n"),
    );
    let mut d = Daemon::start_env(&env, &["--no-watch"], &[("ANOTHER_SECRET", "hunter2")]);
    let o = d.call("env", json!({}));
    o.assert_ok();
    audited(&env, &o);
    let seen = o.structured();
    assert_eq!(
        seen["vars"],
        json!({ "GREETING": "hi" }),
        "only the granted variable: {seen}"
    );
    let all = o.result.to_string();
    for leak in [
        "canary-4711",
        "hunter2",
        "TOOLHOST_SECRET_CANARY",
        "PATH",
        "serve",
        "--stdio",
        "--no-watch",
    ] {
        assert!(!all.contains(leak), "{leak} leaked into the sandbox: {all}");
    }
    let first = d.call("remember", json!({ "value": "secret-of-call-1" }));
    first.assert_ok();
    for _ in 0..3 {
        let next = d.call("remember", json!({}));
        next.assert_ok();
        assert_eq!(
            next.structured()["previous"],
            Value::Null,
            "state leaked between calls: {}",
            next.result
        );
    }
    still_serving(&mut d, &env, "remember");
    assert!(d.stop().success());
}

#[test]
fn trailing_slash_symlink_chains_stay_inside_the_grant() {
    let env = env_with("timeout-ms = 5000");
    let work = env.work();
    std::fs::write(env.path().join("secret.txt"), "top secret").unwrap();
    std::fs::create_dir(work.join("sub")).unwrap();
    // Planted by someone with host access: a -> b/ -> c/ -> ../ (outside), d -> /etc/.
    let link =
        |target: &str, name: &str| std::os::unix::fs::symlink(target, work.join(name)).unwrap();
    link("b/", "a");
    link("c/", "b");
    link("../", "c");
    link("/etc/", "d");
    link("sub/../../", "e");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    // Made by the guest: g1 -> g2/ -> ../ ; it may create them (rw grant), never follow them out.
    d.call("symlink", json!({ "target": "g2/", "link": "g1" }));
    d.call("symlink", json!({ "target": "..//", "link": "g2" }));
    for path in [
        "a/secret.txt",
        "a//secret.txt",
        "a/./secret.txt",
        "a/",
        "b/secret.txt",
        "c/secret.txt",
        "d/passwd",
        "d//passwd",
        "d/./passwd",
        "e/secret.txt",
        "g1/secret.txt",
        "g1/",
        "g2/secret.txt",
        "sub/../a/secret.txt",
        "a/sub/../secret.txt",
    ] {
        for tool in ["read", "list", "stat"] {
            let o = d.call(tool, json!({ "path": path }));
            let all = o.result.to_string();
            assert!(
                !all.contains("top secret") && !all.contains("root:x"),
                "{tool} {path} escaped: {all}"
            );
            if tool == "list" && !o.is_error() {
                // Listing may succeed only where the chain stays inside: names of work/ or sub/.
                let inside = ["a", "b", "c", "d", "e", "g1", "g2", "sub"];
                let entries = o.structured()["entries"].as_array().unwrap();
                assert!(
                    entries
                        .iter()
                        .all(|e| inside.contains(&e.as_str().unwrap())),
                    "{tool} {path} listed outside: {all}"
                );
            }
            assert!(
                !all.contains(env.path().to_str().unwrap()),
                "{tool} {path} revealed a host path: {all}"
            );
            audited(&env, &o);
        }
    }
    still_serving(&mut d, &env, "symlink chains");
    assert!(d.stop().success());
}

/// A 2 MiB tmpfs mounted on a folder for the duration of a test; unmounted on drop.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// Mount one on `dir`, or say why not (it needs root and a kernel that allows it).
    fn mount(dir: &Path) -> Result<Self, String> {
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Self(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn filling_the_disk_of_a_grant_is_a_clear_error_and_the_daemon_stays_healthy() {
    let env = env_with("timeout-ms = 20000");
    let _tmpfs = match Tmpfs::mount(&env.work()) {
        Ok(t) => t,
        Err(why) => {
            eprintln!("SKIPPED filling_the_disk_of_a_grant: cannot mount a 2 MiB tmpfs ({why})");
            return;
        }
    };
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let o = d.call("fill", json!({ "path": "big.bin" }));
    // The guest's own report: wasi-libc turns the host's "no space" on a stream write into EIO.
    o.assert_error("tool_failed", "Tool 'fill' failed: fill 'big.bin': wrote ");
    assert!(o.text().contains("I/O error"), "{}", o.text());
    let r = audited(&env, &o);
    assert_eq!(r["decision"]["kind"], "allowed", "{r}");
    still_serving(&mut d, &env, "a full disk");
    d.call(
        "write",
        json!({ "path": "small.txt", "content": "x".repeat(8192) }),
    )
    .assert_error("tool_failed", "small.txt");
    d.call("remove", json!({ "path": "big.bin" })).assert_ok();
    d.call(
        "write",
        json!({ "path": "small.txt", "content": "fits again" }),
    )
    .assert_ok();
    assert_eq!(
        std::fs::read_to_string(env.work().join("small.txt")).unwrap(),
        "fits again"
    );
    assert!(d.stop().success());
}

#[test]
fn thousands_of_open_handles_are_released_with_the_call() {
    let env = env_with("timeout-ms = 30000");
    std::fs::write(env.work().join("f.txt"), "content").unwrap();
    let mut d = Daemon::start(&env, &["--no-watch"]);
    // Past the sandbox's 1024 handles per call: stopped with the reason, never the daemon's problem.
    let o = d.call("open_many", json!({ "path": "f.txt", "count": 5000 }));
    o.assert_error("trap", "held more than 1024 handles");
    audited(&env, &o);
    for _ in 0..3 {
        let o = d.call("read", json!({ "path": "f.txt" }));
        o.assert_ok();
        assert_eq!(o.text(), "content");
    }
    still_serving(&mut d, &env, "open_many");
    assert!(d.stop().success());
}

#[test]
fn broken_plugins_dropped_into_a_live_daemon_are_rejected_while_it_serves() {
    let env = Env::new(
        &["echo", "describe_spins"],
        &format!("{BASE}[limits]\ntimeout-ms = 300\n"),
    );
    let mut d = Daemon::start(&env, &["--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let tools_before = d.request("tools/list", json!({}))["result"]["tools"].clone();
    let plugins = env.path().join("plugins");
    for fixture in [
        "describe_traps",
        "bad_schema",
        "dup_names",
        "bad_name",
        "many_tools",
        "net_import",
    ] {
        std::fs::copy(
            crate::harness::plugin_file(fixture),
            plugins.join(format!("{fixture}.wasm")),
        )
        .unwrap();
    }
    let echo = std::fs::read(plugins.join("echo.wasm")).unwrap();
    let pages_of = |mib: u32| mib * 16;
    let broken: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"this is not wasm at all".to_vec()),
        (
            "core",
            wat::parse_str("(module (func (export \"call\")))").unwrap(),
        ),
        ("truncated", echo[..echo.len() / 2].to_vec()),
        (
            "huge_memory",
            Component::new("huge_memory").pages(pages_of(1200)).build(),
        ),
        (
            "many_memories",
            Component::new("many_memories")
                .extra("(memory 1)\n".repeat(40))
                .build(),
        ),
        (
            "many_tables",
            Component::new("many_tables")
                .extra("(table 1 funcref)\n".repeat(200))
                .build(),
        ),
        (
            "huge_table",
            Component::new("huge_table")
                .extra("(table 20000000 funcref)")
                .build(),
        ),
        (
            "describe_bomb",
            Component::new("describe_bomb")
                .describe_len(0x0fff_ffff)
                .build(),
        ),
    ];
    for (name, bytes) in &broken {
        std::fs::write(plugins.join(format!("{name}.wasm")), bytes).unwrap();
    }
    let expected: Vec<&str> = [
        "describe_spins",
        "describe_traps",
        "bad_schema",
        "dup_names",
        "bad_name",
        "many_tools",
        "net_import",
    ]
    .into_iter()
    .chain(broken.iter().map(|(n, _)| *n))
    .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let rejected = loop {
        let health: Value =
            serde_json::from_slice(&http(addr, "GET", "/health", &[], b"").body).unwrap();
        let rejected: Vec<String> =
            serde_json::from_value(health["plugins"]["rejected"].clone()).unwrap();
        if expected.iter().all(|e| rejected.iter().any(|r| r == e)) || Instant::now() > deadline {
            break rejected;
        }
        still_serving(&mut d, &env, "a broken plugin");
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut missing: Vec<&&str> = expected
        .iter()
        .filter(|e| !rejected.iter().any(|r| r == *e))
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "not rejected: {missing:?}; rejected: {rejected:?}\n{}",
        d.stderr()
    );
    let tools_after = d.request("tools/list", json!({}))["result"]["tools"].clone();
    assert_eq!(
        tools_before, tools_after,
        "no broken plugin may add or remove a tool"
    );
    still_serving(&mut d, &env, "every broken plugin");
    let log = d.stderr();
    for (plugin, reason) in [
        ("describe_spins", "describe timed out after 300 ms"),
        ("huge_memory", "exceeds the limit"),
        ("many_memories", "memor"),
        ("many_tables", "table"),
        ("huge_table", "table"),
        ("describe_bomb", "out of bounds"),
    ] {
        let line = log
            .lines()
            .find(|l| l.contains("plugin rejected") && l.contains(&format!("plugin={plugin}")))
            .unwrap_or_else(|| panic!("no rejection logged for {plugin}:\n{log}"));
        assert!(line.contains(reason), "{plugin}: {line}");
    }
    assert!(d.stop().success());
}

#[test]
fn a_guest_holding_every_handle_it_can_open_does_not_starve_other_calls() {
    let env = env_with("timeout-ms = 30000");
    std::fs::write(env.work().join("f.txt"), "content").unwrap();
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let hog = d.id();
    // A call may hold 1024 handles (the preopen is one): the hog takes all it may and sits on them.
    d.send(&json!({
        "jsonrpc": "2.0", "id": hog, "method": "tools/call",
        "params": { "name": "open_many", "arguments": { "path": "f.txt", "count": 1000, "hold_ms": 3000 } }
    }));
    wait_until("the hog to hold its 1000 handles", EVENT_WAIT, || {
        d.open_files("/work/f.txt") >= 1000
    });
    // While the hog holds its handles, another call with a grant, and one without, still run.
    let read = d.call("read", json!({ "path": "f.txt" }));
    let echo = d.call("echo", json!({ "text": "while hogged" }));
    let hogged = Outcome {
        tool: "open_many".into(),
        result: d.answer(hog)["result"].clone(),
    };
    hogged.assert_ok();
    assert_eq!(hogged.structured()["opened"], 1000, "{}", hogged.text());
    audited(&env, &hogged);
    read.assert_ok();
    assert_eq!(read.text(), "content");
    echo.assert_ok();
    still_serving(&mut d, &env, "a handle hog");
    assert!(d.stop().success());
}

/// Log lines the daemon's notices say it dropped because its stderr was full.
fn dropped_lines(stderr: &str) -> usize {
    stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("toolhost: ")?
                .split_once(" log line(s) dropped")
        })
        .map(|(count, _)| count.parse::<usize>().unwrap())
        .sum()
}
