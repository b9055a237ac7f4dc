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
