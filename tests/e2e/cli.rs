//! The command line: exit codes, precise messages for bad config and input, list, audit.

use std::io::Write;
use std::process::Stdio;

use serde_json::json;

use crate::harness::Env;

#[test]
fn call_prints_the_result_and_exits_by_outcome() {
    let env = Env::new(&["echo"], "");
    let out = env.run(&["call", "echo", "--input", r#"{"text":"hi"}"#]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hi");
    let out = env.run(&["call", "echo", "--input", r#"{"txt":"hi"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Invalid input for tool 'echo'"));
}

#[test]
fn a_malformed_allowed_hosts_range_stops_the_daemon_at_start_naming_the_entry() {
    let env = Env::new(
        &["echo"],
        "[server]\nallowed-hosts = [\"tools.internal\", \"10.0.0.0/33\"]\n",
    );
    let mut child = env
        .command(&["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Refused before it listens, not ignored with a warning (which would leave it serving).
    let exited = crate::harness::poll(std::time::Duration::from_secs(30), || {
        child.try_wait().unwrap()
    });
    if exited.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("server.allowed-hosts[1]") && err.contains("10.0.0.0/33"),
        "{err}"
    );
}

#[test]
fn reads_the_input_from_stdin() {
    let env = Env::new(&["echo"], "");
    let mut child = env
        .command(&["call", "echo", "--input", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"text":"from stdin"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "from stdin");
}

#[test]
fn bad_usage_and_config_exit_2_with_a_precise_message() {
    let env = Env::new(&["echo"], "[limits]\ntimeout = 5\n");
    let out = env.run(&["list"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("toolhost.toml") && err.contains("unknown field `timeout`"),
        "{err}"
    );

    let env = Env::new(&["echo"], "");
    let out = env.run(&["call", "echo", "--input", "{not json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid JSON"));

    let out = env.run(&["--config", "missing.toml", "list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.toml"));

    let env = Env::new(
        &["echo"],
        "[permissions]\ndeny = [\"write_file(./src/**\"]\n",
    );
    let out = env.run(&["list", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("missing ')'")
            || String::from_utf8_lossy(&out.stderr).contains("missing ')'"),
        "{text}"
    );
}

#[test]
fn list_shows_tools_hints_and_grants() {
    let env = Env::new(
        &["fs", "echo"],
        "[plugins.fs]\ndirs = [{ host = \"work\", mode = \"rw\" }]\n",
    );
    let out = env.run(&["list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let read = text
        .lines()
        .find(|l| l.starts_with("read_file"))
        .expect(&text);
    assert!(
        read.contains("fs") && read.contains("read-only") && read.contains(":rw"),
        "{read}"
    );
    let write = text
        .lines()
        .find(|l| l.starts_with("write_file"))
        .expect(&text);
    assert!(write.contains("destructive"), "{write}");
}

#[test]
fn flags_grant_dirs_and_modes() {
    let env = Env::new(&["fs"], "");
    std::fs::write(env.work().join("a.txt"), "flag-granted").unwrap();
    let out = env.run(&[
        "--dir",
        "fs=work",
        "call",
        "read_file",
        "--input",
        r#"{"path":"a.txt"}"#,
    ]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("flag-granted"),
        "{out:?}"
    );
    let out = env.run(&[
        "--dir",
        "fs=work:rw",
        "--mode",
        "plan",
        "call",
        "write_file",
        "--input",
        r#"{"path":"b","content":"x"}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("plan"));
}

#[test]
fn audit_summarizes_and_filters() {
    let env = Env::new(&["echo"], "");
    env.call("echo", json!({ "text": "a" })).assert_ok();
    env.call("echo", json!({ "text": "b" })).assert_ok();
    env.call("echo", json!({}))
        .assert_error("invalid_input", "text");
    env.call("nope", json!({}))
        .assert_error("unknown_tool", "Available tools: echo");
    let out = env.run(&["audit", "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["records"], 4);
    let out = env.run(&["audit", "--records", "--outcome", "error"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    let out = env.run(&["audit"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("echo"));
}

#[test]
fn a_closed_stdout_exits_0_without_a_message() {
    // As in `toolhost list | head -1`: the reader has what it wanted and went away. Here it goes
    // away before the first line, so that every command below meets the closed pipe.
    let env = Env::new(&["echo", "fs"], "");
    env.call("echo", json!({ "text": "a" })).assert_ok();
    let commands: [&[&str]; 5] = [
        &["list"],
        &["list", "--json"],
        &["audit"],
        &["audit", "--records"],
        &["call", "echo", "--input", r#"{"text":"b"}"#],
    ];
    for args in commands {
        let mut child = env
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("toolhost:") && !err.contains("panicked") && !err.contains("pipe"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn an_error_says_its_cause_once_and_a_bad_listen_address_names_the_forms() {
    let env = Env::new(&["echo"], "");
    let out = env.run(&["list", "--plugins", "no-such-folder"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot read plugins folder"), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");

    let out = env.run(&["serve", "--no-watch", "--http", "localhost:http"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("IP:PORT") && err.contains("localhost:PORT"),
        "{err}"
    );
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(head.status.success(), "the tests run in a git checkout");
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    let env = Env::new(&["echo"], "");
    let out = env.run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let want = format!(
        "toolhost {} (commit {}",
        env!("CARGO_PKG_VERSION"),
        &head[..12]
    );
    assert!(
        text.starts_with(&want),
        "{text:?} should start with {want:?}"
    );
}

#[test]
fn a_section_naming_no_plugin_stops_the_start_and_lists_the_plugins_there_are() {
    let env = Env::new(&["echo", "fs"], "[plugins.fss]\ndisabled = true\n");
    let out = env.run(&["list"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[plugins.fss] names no plugin in ./plugins (have: echo, fs); fix the name"),
        "{err}"
    );

    // A plugin deployed while serving may be configured ahead of its file.
    let env = Env::new(
        &["echo"],
        "[plugins.late]\nprefix = \"late_\"\narrives-later = true\n",
    );
    let out = env.run(&["list"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn list_shows_every_grant_and_what_the_gate_decides() {
    let env = Env::new(
        &["fetch", "fs"],
        "[permissions]\nmode = \"accept-edits\"\ndeny = [\"write_file(./secret/**)\"]\n\
         [plugins.fs]\ndirs = [{ host = \"work\", guest = \"/data\", mode = \"rw\" }]\n\
         [plugins.fetch]\nenv = { FETCH_MODE = \"fast\" }\n\
         [plugins.fetch.network]\nallow = [\"https://api.example.com\"]\n\
         [plugins.fetch.secrets.api]\nfrom-file = \"token.txt\"\nheader = \"Authorization\"\n\
         format = \"Bearer {secret}\"\ndestinations = [\"https://api.example.com\"]\n",
    );
    std::fs::write(env.path().join("token.txt"), "tok-9f8e7d").unwrap();
    let out = env.run(&["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("tok-9f8e7d"), "{text}");
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .to_owned()
    };
    let fetch = line("fetch");
    for part in [
        "env:FETCH_MODE",
        "net:https://api.example.com",
        "secret:api (header authorization)",
    ] {
        assert!(fetch.contains(part), "{part:?} not in {fetch}");
    }
    assert!(
        line("read_file").contains("gate: allow grants: ./work:rw at /data"),
        "{text}"
    );
    assert!(
        line("write_file").contains("gate: ask (except: deny `write_file(./secret/**)`)"),
        "{text}"
    );

    let out = env.run(&["list", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!doc.to_string().contains("tok-9f8e7d"));
    let tool = |name: &str| {
        doc["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    let read = tool("read_file");
    assert_eq!(read["gate"]["mode"], "accept-edits", "{read}");
    assert_eq!(read["gate"]["decision"], "allow", "{read}");
    assert_eq!(read["grants"]["dirs"][0]["mode"], "rw", "{read}");
    assert_eq!(read["grants"]["dirs"][0]["guest"], "/data", "{read}");
    let write = tool("write_file");
    assert_eq!(write["gate"]["decision"], "ask", "{write}");
    assert_eq!(
        write["gate"]["except"][0], "deny `write_file(./secret/**)`",
        "{write}"
    );
    let fetch = tool("fetch");
    assert_eq!(fetch["grants"]["env"][0], "FETCH_MODE", "{fetch}");
    assert_eq!(fetch["grants"]["secrets"][0]["name"], "api", "{fetch}");
    assert_eq!(
        fetch["grants"]["secrets"][0]["header"], "authorization",
        "{fetch}"
    );
    assert!(
        fetch["grants"]["network"]["allow"][0]
            .as_str()
            .unwrap()
            .starts_with("https://api.example.com"),
        "{fetch}"
    );
}

#[test]
fn list_shows_a_progress_bar_on_a_terminal_and_nothing_on_a_pipe() {
    let env = Env::new(&["echo", "math"], "");
    // On a terminal (a pseudo-terminal from util-linux's `script`), with an empty compile cache.
    let bin = env!("CARGO_BIN_EXE_toolhost");
    let out = std::process::Command::new("script")
        .current_dir(env.path())
        .args(["-qec", &format!("{bin} list"), "/dev/null"])
        .output()
        .expect("util-linux `script` runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("loading plugins"),
        "no progress on a terminal:\n{shown}"
    );
    assert!(shown.contains("calc"), "{shown}");
    // On a pipe: the listing alone.
    std::fs::remove_dir_all(env.path().join(".toolhost")).ok();
    let out = env.run(&["list"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stdout.contains("loading plugins") && !stderr.contains("loading plugins"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "escape codes on a pipe: {stderr:?}"
    );
}
