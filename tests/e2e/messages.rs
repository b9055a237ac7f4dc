//! Messages that name the fix (issue #39): a path outside every directory grant names the grant
//! that would cover it, in the tool's result and the audit record; a served call leaves one log
//! line, without colour codes when stderr is not a terminal.

use serde_json::json;

use crate::daemon::Daemon;
use crate::harness::Env;

#[test]
fn a_path_no_grant_covers_names_the_missing_grant() {
    let env = Env::new(&["fs"], "[permissions]\nmode = \"bypass\"\n");
    let r = env.call("read_file", json!({ "path": "/etc/hosts" }));
    assert_eq!(r.kind(), "tool_failed", "{}", r.json);
    assert!(
        r.content().contains(
            "\ntoolhost: no directory grant covers /etc/hosts; grant it with [plugins.fs] dirs = \
             [{ host = \"<a directory on the host>\", guest = \"/etc\" }] in toolhost.toml"
        ),
        "{}",
        r.content()
    );
    let record = env.audit().pop().unwrap();
    assert_eq!(record["outcome"], "error", "{record}");
    let refused = record["refused"]
        .as_array()
        .expect("the record names the refusal");
    assert!(
        refused[0]
            .as_str()
            .unwrap()
            .starts_with("no directory grant covers /etc/hosts; grant it with [plugins.fs]"),
        "{record}"
    );

    // A write says the grant must be read-write; a relative path is relative to the root.
    let r = env.call("write_file", json!({ "path": "notes.txt", "content": "x" }));
    assert!(
        r.content().contains(
            "no directory grant covers /notes.txt; grant it with [plugins.fs] dirs = \
             [{ host = \"<a directory on the host>\", guest = \".\", mode = \"rw\" }]"
        ),
        "{}",
        r.content()
    );
}

#[test]
fn the_root_no_grant_covers_opens_nothing_and_a_grant_beside_it_still_serves() {
    let env = Env::new(
        &["fs"],
        "[permissions]\nmode = \"bypass\"\n[plugins.fs]\ndirs = [{ host = \"work\", guest = \"/data\", mode = \"rw\" }]\n",
    );
    std::fs::write(env.work().join("hello.txt"), "hello from the grant").unwrap();
    std::fs::write(env.path().join("secret.txt"), "top secret").unwrap();
    let r = env.call("read_file", json!({ "path": "/data/hello.txt" }));
    r.assert_ok();
    assert!(
        r.content().contains("hello from the grant"),
        "{}",
        r.content()
    );

    let secret = env.path().join("secret.txt").display().to_string();
    for path in [
        "/etc/passwd",
        "/../etc/passwd",
        "/data/../secret.txt",
        "/data/../../etc/passwd",
        "..",
        "/",
        ".",
        secret.as_str(),
    ] {
        let r = env.call("read_file", json!({ "path": path }));
        assert!(r.is_error(), "{path}: {}", r.json);
        assert!(
            !r.content().contains("top secret") && !r.content().contains("root:"),
            "{path} leaked: {}",
            r.content()
        );
    }
    for path in ["/", "/tmp", "."] {
        let r = env.call("list_dir", json!({ "path": path }));
        assert!(r.is_error(), "{path}: {}", r.json);
        assert!(
            r.content().contains("no directory grant covers"),
            "{path}: {}",
            r.content()
        );
    }
    // Nothing can be made at the root, nor outside the grant through it.
    for path in ["/made.txt", "/tmp/made.txt", "made.txt"] {
        let r = env.call("write_file", json!({ "path": path, "content": "x" }));
        assert!(r.is_error(), "{path}: {}", r.json);
        assert!(
            r.content().contains("no directory grant covers"),
            "{path}: {}",
            r.content()
        );
    }
    assert!(!std::path::Path::new("/made.txt").exists());
    assert!(!std::path::Path::new("/tmp/made.txt").exists());
}

#[test]
fn a_served_call_logs_one_line_without_colour_when_stderr_is_a_pipe() {
    let env = Env::new(&["echo"], "");
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let out = d.call("echo", json!({ "text": "hi" }));
    out.assert_ok();
    let id = out.call_id().to_owned();
    d.wait_for_stderr(&id);
    let raw = d.stderr_raw();
    assert!(!raw.contains('\x1b'), "colour codes on a pipe: {raw:?}");
    let line = raw
        .lines()
        .find(|l| l.contains(&id))
        .expect("a line for the call");
    for part in [
        " INFO toolhost::call: call ",
        "via=mcp",
        "tool=echo",
        "caller=(no token)",
        "decision=allow",
        "outcome=ok",
        " ms=",
    ] {
        assert!(line.contains(part), "{part:?} not in {line:?}");
    }
    assert_eq!(raw.matches(id.as_str()).count(), 1, "{raw}");
}

#[test]
fn a_section_whose_file_goes_away_while_serving_is_only_a_warning() {
    let env = Env::new(&["echo", "math"], "[plugins.math]\nprefix = \"m_\"\n");
    let mut d = Daemon::start(&env, &[]);
    std::fs::remove_file(env.path().join("plugins/math.wasm")).unwrap();
    let log = d.wait_for_stderr("[plugins.math] names no plugin");
    assert!(log.contains("(have: echo)"), "{log}");
    d.call("echo", json!({ "text": "still serving" }))
        .assert_ok();
    assert!(d.stop().success());
}
