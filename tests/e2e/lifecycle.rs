//! The daemon's life around its calls, through the real binary: an idle daemon stays idle (measured
//! from /proc), a client closing stdin ends its calls at once, a kill right after SIGTERM still leaves
//! every running call in the audit log, a call stopped by the request timeout is `timeout` everywhere,
//! HTTP answers each protocol revision by its own rules (priming events, `DELETE`), and SIGTERM ends a
//! stdio session on a Unix socket as fast as one on pipes.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::daemon::{Daemon, HttpSession, MCP_HEADERS, http};
use crate::harness::Env;

const BASE: &str =
    "[permissions]\nmode = \"bypass\"\n[plugins.hostile.limits]\ntimeout-ms = 20000\n";

fn env(server: &str) -> Env {
    Env::new(&["echo", "hostile"], &format!("{BASE}[server]\n{server}"))
}

/// CPU time (user + system) the process has used, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn clock_ticks_per_second() -> u64 {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Calls `sleep` for `ms` without waiting for the answer; its request id.
fn start_sleep(d: &mut Daemon, ms: u64) -> u64 {
    let id = d.id();
    d.send(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "sleep", "arguments": { "ms": ms } }
    }));
    id
}

fn begins(env: &Env) -> Vec<Value> {
    env.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == "begin")
        .collect()
}

#[test]
fn an_idle_daemon_stays_idle_after_its_plugins_are_read_and_still_reloads_on_change() {
    let env = env("");
    let mut d = Daemon::start(&env, &["--http", "127.0.0.1:0"]);
    // What a client launching the daemon, or `toolhost list`, does: read every plugin file.
    for entry in std::fs::read_dir(env.path().join("plugins")).unwrap() {
        std::fs::read(entry.unwrap().path()).unwrap();
    }
    assert!(env.run(&["list"]).status.success());
    // Sleeps on purpose: a second for the reads to have any effect they would have, then the
    // ten-second window the idle CPU is measured over. Nothing happens to wait for: that is the test.
    std::thread::sleep(Duration::from_secs(1));
    let (before, started) = (cpu_ticks(d.pid()), Instant::now());
    std::thread::sleep(Duration::from_secs(10));
    let used = (cpu_ticks(d.pid()) - before) as f64 / clock_ticks_per_second() as f64;
    let share = used / started.elapsed().as_secs_f64();
    eprintln!(
        "idle CPU over 10 s after reading every plugin: {used:.3} s ({:.2} % of a core)",
        share * 100.0
    );
    assert!(
        share < 0.02,
        "idle daemon used {:.1} % of a core",
        share * 100.0
    );

    std::fs::copy(
        crate::harness::plugin_file("math"),
        env.path().join("plugins/math.wasm"),
    )
    .unwrap();
    let changed = d.next_unsolicited(Duration::from_secs(30));
    assert_eq!(
        changed.as_ref().map(|m| m["method"].clone()),
        Some(json!("notifications/tools/list_changed")),
        "{changed:?}"
    );
    assert!(d.stop().success());
}

#[test]
fn closing_stdin_lets_the_calls_already_sent_finish_then_exits_at_once() {
    // What `printf <requests> | toolhost serve --stdio` does: every request it sent is answered.
    let env = env("");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let slow = start_sleep(&mut d, 1500);
    env.wait_for_begins(1);
    d.close_stdin();
    let answer = d.answer(slow);
    let answered = Instant::now();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let status = d.wait(Duration::from_secs(10));
    let took = answered.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(
        took < Duration::from_secs(1),
        "exited {took:?} after the last answer"
    );
    let records = env.audit();
    let sleep: Vec<&Value> = records.iter().filter(|r| r["tool"] == "sleep").collect();
    assert_eq!(sleep.len(), 1, "{records:?}");
    assert_eq!(sleep[0]["outcome"], "ok", "{records:?}");
    assert_eq!(sleep[0]["call_id"], begins(&env)[0]["call_id"]);
}

#[test]
fn closing_stdin_then_sigterm_stops_the_calls_still_running_and_records_them() {
    let env = env("shutdown-grace-ms = 200\n");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let slow = start_sleep(&mut d, 15_000);
    env.wait_for_begins(1);
    d.close_stdin();
    std::thread::sleep(Duration::from_millis(300));
    assert!(d.try_status().is_none(), "exited with a call still running");
    let termed = Instant::now();
    d.signal("TERM");
    let answer = d.answer(slow);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(d.wait(Duration::from_secs(10)).success());
    assert!(
        termed.elapsed() < Duration::from_secs(2),
        "{:?}",
        termed.elapsed()
    );
    let records = env.audit();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["outcome"], "cancelled", "{records:?}");
}

#[test]
fn a_stdio_client_leaving_gets_every_running_call_recorded_before_its_sigkill() {
    // The MCP stdio shutdown: close stdin, SIGTERM, and about 2 s later SIGKILL. With the default
    // 5 s grace, a call still running must be cancelled and recorded within a second of SIGTERM.
    let env = env("");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let slow = start_sleep(&mut d, 15_000);
    env.wait_for_begins(1);
    d.close_stdin();
    std::thread::sleep(Duration::from_millis(200));
    let termed = Instant::now();
    d.signal("TERM");
    crate::harness::wait_until("the call's end record", Duration::from_secs(5), || {
        !env.audit().is_empty()
    });
    let recorded = termed.elapsed();
    assert!(
        recorded < Duration::from_secs(1),
        "recorded {recorded:?} after SIGTERM"
    );
    assert_eq!(env.audit()[0]["outcome"], "cancelled", "{:?}", env.audit());
    let answer = d.answer(slow);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(d.wait(Duration::from_secs(10)).success());
    assert!(
        termed.elapsed() < Duration::from_millis(1900),
        "exited {:?} after SIGTERM",
        termed.elapsed()
    );
}

#[test]
fn an_idle_daemon_exits_at_once_when_stdin_closes_while_a_plugin_compiles() {
    // A 20 MB Python plugin compiles for many seconds from an empty cache: nothing waits for it.
    let env = Env::new(&["echo", "csv_stats"], "");
    let mut d = Daemon::start_cold(&env, &["--no-watch"], &[("TOOLHOST_LOG", "info")]);
    crate::harness::wait_until(
        "csv_stats to start compiling",
        Duration::from_secs(60),
        || {
            d.stderr()
                .lines()
                .any(|l| l.contains("compiling plugin") && l.contains("csv_stats"))
        },
    );
    let closed = Instant::now();
    d.close_stdin();
    let status = d.wait(Duration::from_secs(10));
    let took = closed.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(
        took < Duration::from_secs(1),
        "took {took:?} to exit:\n{}",
        d.stderr()
    );
}

#[test]
fn a_2026_client_listening_for_changes_sees_the_daemon_exit_within_a_second_of_closing_stdin() {
    let env = env("");
    let mut d = Daemon::start_session_less(&env, &["--no-watch"]);
    d.send(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"},
            },
            "notifications": { "toolsListChanged": true },
        }
    }));
    // The stream is open: the daemon acknowledges it, or at least has not answered it.
    let _ = d.next_unsolicited(Duration::from_millis(500));
    let closed = Instant::now();
    d.close_stdin();
    let status = d.wait(Duration::from_secs(10));
    let took = closed.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(
        took < Duration::from_secs(1),
        "took {took:?} to exit:\n{}",
        d.stderr()
    );
}

#[test]
fn a_kill_right_after_sigterm_leaves_every_running_call_recorded() {
    let env = env("shutdown-grace-ms = 5000\n");
    // At info, the daemon logs when its drain begins: the moment to kill it.
    let mut d = Daemon::start_env(&env, &["--no-watch"], &[("TOOLHOST_LOG", "info")]);
    for _ in 0..3 {
        start_sleep(&mut d, 15_000);
    }
    // Accepted and running: each call's plugin has started, which is also when it was recorded.
    env.wait_for_begins(3);
    d.signal("TERM");
    d.wait_for_stderr("for calls in flight");
    d.signal("KILL");
    d.wait(Duration::from_secs(10));
    assert_eq!(begins(&env).len(), 3, "{:?}", env.audit_lines());
    let out = env.run(&["audit", "--json"]);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["total"]["unfinished"], 3, "{summary}");
    let out = env.run(&["audit", "--records", "--outcome", "unfinished"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
}

#[test]
fn a_call_stopped_by_the_request_timeout_is_timeout_on_the_wire_in_the_audit_and_in_stats() {
    let env = env("request-timeout-ms = 500\n");
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let mut s = HttpSession::open(addr, &[]).unwrap();
    let answer = s.call("sleep", json!({ "ms": 5000 })).unwrap();
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    assert_eq!(result["_meta"]["toolhost/errorKind"], "timeout", "{answer}");
    let call_id = result["_meta"]["toolhost/callId"].as_str().unwrap();
    let record = crate::daemon::record(&env, call_id);
    assert_eq!(
        (record["outcome"].clone(), record["error_kind"].clone()),
        (json!("error"), json!("timeout")),
        "{record}"
    );
    let metrics = http(addr, "GET", "/metrics", &[], b"").text();
    assert!(
        metrics
            .lines()
            .any(|l| l.contains("kind=\"timeout\"") && l.contains("sleep")),
        "{metrics}"
    );
    assert!(!metrics.contains("kind=\"cancelled\""), "{metrics}");
    assert!(d.stop().success());
}

/// The events of an SSE body, as raw text.
fn sse_events(text: &str) -> Vec<&str> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .collect()
}

fn initialize(version: &str) -> Vec<u8> {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "old", "version": "1" } }
    })
    .to_string()
    .into_bytes()
}

#[test]
fn priming_events_reach_only_clients_of_2025_11_25_or_later() {
    let env = env("");
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    for (version, primed) in [
        ("2025-03-26", false),
        ("2025-06-18", false),
        ("2025-11-25", true),
    ] {
        let reply = http(addr, "POST", "/mcp", &MCP_HEADERS, &initialize(version));
        assert_eq!(reply.status, 200, "{}", reply.text());
        let text = reply.text();
        let events = sse_events(&text);
        let has_priming = events
            .iter()
            .any(|e| e.lines().any(|l| l.trim_end() == "data:" || l == "data: "));
        assert_eq!(has_priming, primed, "{version}: {text}");
        assert!(
            events.iter().any(|e| e.contains("\"serverInfo\"")),
            "{version}: {text}"
        );
        // Later requests carry the version in a header (2025-06-18 on) or not at all (2025-03-26).
        let session = reply.header("mcp-session-id").unwrap().to_string();
        let mut headers = MCP_HEADERS.to_vec();
        headers.push(("mcp-session-id", &session));
        if version != "2025-03-26" {
            headers.push(("mcp-protocol-version", version));
        }
        let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        http(addr, "POST", "/mcp", &headers, done.to_string().as_bytes());
        let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
        let reply = http(addr, "POST", "/mcp", &headers, list.to_string().as_bytes());
        let text = reply.text();
        for event in sse_events(&text) {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .collect();
            if !primed {
                assert!(
                    data.iter().all(|d| !d.trim().is_empty()),
                    "{version}: an event an old client cannot parse: {text}"
                );
            }
        }
        assert_eq!(reply.messages()[0]["id"], 2, "{version}: {text}");
    }
}

#[test]
fn delete_ends_a_live_session_with_204_and_answers_404_for_unknown_or_ended_ones() {
    let env = env("");
    let d = Daemon::start(&env, &["--no-watch", "--http", "127.0.0.1:0"]);
    let addr = d.http.unwrap();
    let s = HttpSession::open(addr, &[]).unwrap();
    let headers = [
        ("mcp-session-id", s.session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let first = http(addr, "DELETE", "/mcp", &headers, b"");
    assert_eq!(first.status, 204, "{}", first.text());
    let again = http(addr, "DELETE", "/mcp", &headers, b"");
    assert_eq!(again.status, 404, "{}", again.text());
    let unknown = [
        ("mcp-session-id", "no-such-session"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let reply = http(addr, "DELETE", "/mcp", &unknown, b"");
    assert_eq!(reply.status, 404, "{}", reply.text());
}

#[test]
fn sigterm_ends_a_stdio_session_on_a_unix_socket_at_once() {
    // Some clients hand the daemon one end of a socket pair as stdin and stdout, and keep theirs
    // open until the daemon has exited. No plugins: nothing else may be running at exit.
    use std::io::{BufRead, BufReader, Write};
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;
    use std::process::Stdio;

    let env = Env::new(&[], "");
    for _ in 0..3 {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let mut child = env
            .command(&["serve", "--stdio", "--no-watch"])
            .stdin(Stdio::from(OwnedFd::from(theirs.try_clone().unwrap())))
            .stdout(Stdio::from(OwnedFd::from(theirs)))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        ours.set_read_timeout(Some(crate::daemon::ANSWER_WAIT))
            .unwrap();
        let mut line = initialize("2025-11-25");
        line.push(b'\n');
        (&ours).write_all(&line).unwrap();
        let mut answer = String::new();
        BufReader::new(&ours).read_line(&mut answer).unwrap();
        assert!(answer.contains("\"serverInfo\""), "{answer}");

        let termed = Instant::now();
        let kill = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let status = crate::harness::poll(Duration::from_secs(10), || child.try_wait().unwrap());
        let took = termed.elapsed();
        let _ = child.kill();
        assert!(status.is_some_and(|s| s.success()), "{status:?}");
        assert!(
            took < Duration::from_millis(500),
            "exited {took:?} after SIGTERM"
        );
    }
}
