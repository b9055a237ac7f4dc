//! The sandbox through the real binary: grants, limits, captured output, env isolation, bad plugins.

use serde_json::json;

use crate::harness::Env;

const BYPASS: &str = "[permissions]\nmode = \"bypass\"\n";

fn fs_env(mode: &str) -> Env {
    Env::new(
        &["fs"],
        &format!("{BYPASS}[plugins.fs]\ndirs = [{{ host = \"work\", mode = \"{mode}\" }}]\n"),
    )
}

#[test]
fn reads_a_file_in_the_granted_dir() {
    let env = fs_env("ro");
    std::fs::write(env.work().join("hello.txt"), "hello from the host\n").unwrap();
    let r = env.call("read_file", json!({ "path": "hello.txt" }));
    r.assert_ok();
    assert!(
        r.content().contains("hello from the host"),
        "{}",
        r.content()
    );
}

#[test]
fn refuses_paths_outside_the_grant() {
    let env = fs_env("rw");
    std::fs::write(env.path().join("secret.txt"), "top secret").unwrap();
    std::os::unix::fs::symlink(env.path().join("secret.txt"), env.work().join("planted")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", env.work().join("relative-planted")).unwrap();
    for path in [
        "../secret.txt",
        "/etc/passwd",
        "planted",
        "relative-planted",
        "a/../../secret.txt",
    ] {
        let r = env.call("read_file", json!({ "path": path }));
        assert!(r.is_error(), "{path}: {}", r.json);
        assert_eq!(r.kind(), "tool_failed", "{path}: {}", r.json);
        assert!(
            !r.content().contains("top secret") && !r.content().contains("root:"),
            "{path} leaked: {}",
            r.content()
        );
        assert!(
            r.content().contains(path),
            "{path}: the message should name the path: {}",
            r.content()
        );
    }
}

#[test]
fn a_guest_symlink_cannot_point_outside() {
    let env = Env::new(
        &["hostile"],
        &format!("{BYPASS}[plugins.hostile]\ndirs = [{{ host = \"work\", mode = \"rw\" }}]\n"),
    );
    std::fs::write(env.path().join("secret.txt"), "top secret").unwrap();
    let made = env.call(
        "symlink",
        json!({ "target": "../secret.txt", "link": "escape" }),
    );
    let read = env.call("read", json!({ "path": "escape" }));
    assert!(
        read.is_error() || !read.content().contains("top secret"),
        "symlink escaped: {} / {}",
        made.json,
        read.json
    );
    let abs = env.call("symlink", json!({ "target": "/etc/passwd", "link": "abs" }));
    let read = env.call("read", json!({ "path": "abs" }));
    assert!(
        !read.content().contains("root:"),
        "absolute symlink escaped: {} / {}",
        abs.json,
        read.json
    );
}

#[test]
fn refuses_every_write_to_a_read_only_grant() {
    let env = Env::new(
        &["fs", "hostile"],
        &format!(
            "{BYPASS}[plugins.fs]\ndirs = [{{ host = \"work\" }}]\n[plugins.hostile]\ndirs = [{{ host = \"work\", mode = \"ro\" }}]\n"
        ),
    );
    std::fs::write(env.work().join("keep.txt"), "original").unwrap();
    env.call("write_file", json!({ "path": "new.txt", "content": "x" }))
        .assert_error("tool_failed", "new.txt");
    env.call("write_file", json!({ "path": "keep.txt", "content": "x" }))
        .assert_error("tool_failed", "keep.txt");
    for (tool, input) in [
        ("truncate", json!({ "path": "keep.txt" })),
        ("rename", json!({ "from": "keep.txt", "to": "moved.txt" })),
        (
            "hardlink",
            json!({ "target": "keep.txt", "link": "hard.txt" }),
        ),
        (
            "symlink",
            json!({ "target": "keep.txt", "link": "soft.txt" }),
        ),
        ("remove", json!({ "path": "keep.txt" })),
        ("mkdir", json!({ "path": "sub" })),
    ] {
        let r = env.call(tool, input);
        assert!(
            r.is_error(),
            "{tool} succeeded on a read-only grant: {}",
            r.json
        );
    }
    assert_eq!(
        std::fs::read_to_string(env.work().join("keep.txt")).unwrap(),
        "original"
    );
    let names: Vec<_> = std::fs::read_dir(env.work())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec!["keep.txt"], "the read-only dir changed");
}

fn mkfifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {} failed", path.display());
}

#[test]
fn a_fifo_in_a_grant_is_refused_at_once_not_waited_on() {
    // Opening a FIFO blocks until the other end opens, and a call's file operations block its
    // thread: the guard opens files and directories only, so these calls fail at once instead of
    // at their deadline (a timeout, and a stuck thread, before the guard looked).
    let env = Env::new(
        &["fs"],
        &format!(
            "{BYPASS}[limits]\ntimeout-ms = 20000\n[plugins.fs]\ndirs = [{{ host = \"work\" }}]\n"
        ),
    );
    mkfifo(&env.work().join("pipe"));
    std::os::unix::fs::symlink("pipe", env.work().join("to-pipe")).unwrap();
    for path in ["pipe", "to-pipe", "./pipe"] {
        env.call("read_file", json!({ "path": path }))
            .assert_error("tool_failed", path);
        env.call("write_file", json!({ "path": path, "content": "x" }))
            .assert_error("tool_failed", path);
    }
    let r = env.call("grep", json!({ "pattern": "x", "path": "." }));
    r.assert_ok();
}

#[test]
fn a_link_out_of_a_grant_fails_alike_whatever_it_points_at() {
    // The type check looks before the open: it must not tell a plugin what kind of host file a
    // link out of its grant leads to (a look along the path as the kernel alone resolves it would).
    // A FIFO outside and a plain file outside fail the same way, at once.
    // The hostile plugin's `read` opens the path straight away; the fs plugin's tools stat it
    // first, and that confined stat alone already fails for a path that leads out.
    let env = Env::new(
        &["hostile"],
        &format!(
            "{BYPASS}[limits]\ntimeout-ms = 20000\n[plugins.hostile]\ndirs = [{{ host = \"work\" }}]\n"
        ),
    );
    mkfifo(&env.path().join("outside-pipe"));
    std::fs::write(env.path().join("outside-file"), "secret").unwrap();
    let links = [
        ("abs-pipe", env.path().join("outside-pipe")),
        ("abs-file", env.path().join("outside-file")),
        ("rel-pipe", "../outside-pipe".into()),
        ("rel-file", "../outside-file".into()),
    ];
    for (link, target) in &links {
        std::os::unix::fs::symlink(target, env.work().join(link)).unwrap();
    }
    std::fs::create_dir(env.work().join("sub")).unwrap();
    std::os::unix::fs::symlink("..", env.work().join("sub/up")).unwrap();
    let answer = |path: &str| {
        let r = env.call("read", json!({ "path": path }));
        assert!(r.is_error(), "{path} was read: {}", r.json);
        assert!(!r.content().contains("secret"), "{}", r.json);
        format!("{}: {}", r.kind(), r.content().replace(path, "LINK"))
    };
    assert_eq!(answer("abs-pipe"), answer("abs-file"));
    assert_eq!(answer("rel-pipe"), answer("rel-file"));
    assert_eq!(
        answer("sub/up/../outside-pipe"),
        answer("sub/up/../outside-file")
    );
}

#[test]
fn no_grant_means_no_files() {
    let env = Env::new(&["hostile"], BYPASS);
    let r = env.call("list", json!({ "path": "." }));
    assert!(
        r.is_error(),
        "a plugin with no grant listed a directory: {}",
        r.json
    );
    let r = env.call("read", json!({ "path": "/etc/passwd" }));
    assert!(r.is_error() && !r.content().contains("root:"), "{}", r.json);
}

#[test]
fn stops_an_infinite_loop_at_its_deadline() {
    let env = Env::new(
        &["hostile", "echo"],
        &format!("{BYPASS}[limits]\ntimeout-ms = 300\n"),
    );
    let started = std::time::Instant::now();
    env.call("spin", json!({}))
        .assert_error("timeout", "timed out after 300 ms");
    assert!(started.elapsed().as_secs() < 10);
    env.call("sleep", json!({ "ms": 3_600_000 }))
        .assert_error("timeout", "timed out");
    env.call("echo", json!({ "text": "still here" }))
        .assert_ok();
}

#[test]
fn stops_a_fuel_hog() {
    let env = Env::new(&["hostile"], &format!("{BYPASS}[limits]\nfuel = 1000000\n"));
    env.call("spin", json!({}))
        .assert_error("out_of_fuel", "compute budget");
}

#[test]
fn stops_a_memory_bomb_at_its_limit() {
    let env = Env::new(&["hostile"], &format!("{BYPASS}[limits]\nmemory-mb = 32\n"));
    env.call("grow", json!({ "mb": 200, "abort": true }))
        .assert_error("memory_limit", "memory limit of 32 MiB");
    let audit = env.audit();
    let last = audit.last().unwrap();
    assert_eq!(last["error_kind"], "memory_limit");
    assert!(
        last["peak_memory_bytes"].as_u64().unwrap() <= 32 << 20,
        "{last}"
    );
}

#[test]
fn unbounded_recursion_is_a_trap_not_a_crash() {
    let env = Env::new(&["hostile", "echo"], BYPASS);
    // The guest's shadow stack in linear memory runs out first: a clean trap either way.
    env.call("recurse", json!({}))
        .assert_error("trap", "stack overflow");
    env.call("echo", json!({ "text": "after" })).assert_ok();
    env.call("trap", json!({})).assert_error("trap", "boom");
}

#[test]
fn cuts_output_beyond_the_cap() {
    let env = Env::new(&["hostile"], &format!("{BYPASS}[limits]\noutput-kb = 4\n"));
    let r = env.call("big_output", json!({ "bytes": 100_000, "fill": "é" }));
    r.assert_ok();
    assert!(r.content().len() < 5000, "{} bytes", r.content().len());
    assert!(
        r.content()
            .contains("[output truncated: showing the first 4096 of 100000 bytes"),
        "{}",
        &r.content()[4000..]
    );
    assert_eq!(env.audit().last().unwrap()["truncated"], true);
}

#[test]
fn guest_output_never_reaches_the_hosts_stdout() {
    let env = Env::new(&["hostile"], BYPASS);
    // `call` parses stdout as exactly one JSON document: any guest line would break it.
    env.call("print", json!({ "lines": 2000 })).assert_ok();
}

#[test]
fn a_plugin_sees_only_granted_env_and_no_args() {
    let env = Env::new(
        &["hostile"],
        &format!("{BYPASS}[plugins.hostile]\nenv = {{ GREETING = \"hi\" }}\n"),
    );
    let r = env.call("env", json!({}));
    r.assert_ok();
    let text = r.content();
    assert!(
        !text.contains("canary-4711"),
        "the daemon's env leaked: {text}"
    );
    assert!(!text.contains("PATH"), "the daemon's env leaked: {text}");
    assert!(text.contains("GREETING"), "{text}");
    assert!(
        !text.contains("call") || !text.contains("--json"),
        "the host's args leaked: {text}"
    );
}

#[test]
fn rejects_broken_plugins_precisely_and_loads_the_rest() {
    let env = Env::new(
        &[
            "echo",
            "describe_traps",
            "bad_schema",
            "dup_names",
            "bad_name",
            "many_tools",
            "net_import",
        ],
        "",
    );
    let plugins = env.path().join("plugins");
    std::fs::write(plugins.join("garbage.wasm"), b"this is not wasm at all").unwrap();
    std::fs::write(plugins.join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let echo = std::fs::read(plugins.join("echo.wasm")).unwrap();
    std::fs::write(plugins.join("truncated.wasm"), &echo[..echo.len() / 2]).unwrap();
    let out = env.run(&["list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["echo"]);
    let reason = |p: &str| {
        let s = &list["plugins"][p];
        assert_eq!(s["status"], "rejected", "{p}: {s}");
        s["reason"].as_str().unwrap().to_string()
    };
    assert!(reason("garbage").contains("magic bytes"));
    assert!(reason("core").contains("core WebAssembly module, not a component"));
    assert!(reason("truncated").contains("not a valid WebAssembly component"));
    assert!(
        reason("net_import").contains("wasi:sockets"),
        "{}",
        reason("net_import")
    );
    assert!(
        reason("describe_traps").contains("describe crashed"),
        "{}",
        reason("describe_traps")
    );
    assert!(
        reason("bad_schema").contains("input-schema"),
        "{}",
        reason("bad_schema")
    );
    assert!(reason("dup_names").contains("declared twice"));
    assert!(reason("bad_name").contains("not accepted by LLM APIs"));
    assert!(reason("many_tools").contains("at most 256"));
}

#[test]
fn inspect_tells_whether_a_component_fits() {
    let env = Env::new(&["echo", "net_import"], "");
    let out = env.run(&["inspect", "plugins/echo.wasm"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("toolhost:plugin/tool@0.1.0")
            && text.contains("fits the toolhost:plugin@0.1.0 contract"),
        "{text}"
    );
    let out = env.run(&["inspect", "plugins/net_import.wasm"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("wasi:sockets"));
}
