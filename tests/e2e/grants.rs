//! `toolhost grant` and `revoke` (issue #39): they edit the policy file with the validation of a
//! start, never lose an edit to another one, and a serving daemon applies the result: a grant
//! serves the next call, a revoke refuses it, a file start would refuse changes nothing.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::daemon::Daemon;
use crate::harness::{Env, wait_until};

const APPLIED: &str = "plugin policies applied";
const REFUSED: &str = "policy file changed but not applied";

fn env() -> Env {
    let env = Env::new(
        &["fs", "echo"],
        "# the operator's notes stay\n[permissions]\nmode = \"bypass\"\n",
    );
    std::fs::write(env.work().join("note.txt"), "hello from work").unwrap();
    env
}

/// `toolhost ARGS` in the workspace: exit code, stdout and stderr.
fn run(env: &Env, args: &[&str]) -> (i32, String, String) {
    let out = env.run(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Wait until the daemon has logged `needle` `n` times.
fn wait_logged(d: &Daemon, needle: &str, n: usize) {
    wait_until(
        &format!("{n} x {needle:?} on the daemon's stderr"),
        Duration::from_secs(20),
        || d.stderr().matches(needle).count() >= n,
    );
}

#[test]
fn a_serving_daemon_applies_a_grant_and_a_revoke_refuses_the_very_next_call() {
    let env = env();
    let mut d = Daemon::start(&env, &[]);
    d.call("read_file", json!({ "path": "note.txt" }))
        .assert_error("tool_failed", "no directory grant covers");

    let written = Instant::now();
    let (code, out, err) = run(&env, &["grant", "fs", "dir", "work"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("granted: fs dir work"), "{out}");
    assert!(out.contains("fs is now granted: "), "{out}");
    wait_logged(&d, APPLIED, 1);
    eprintln!(
        "grant applied {:?} after the file was written",
        written.elapsed()
    );
    let r = d.call("read_file", json!({ "path": "note.txt" }));
    r.assert_ok();
    assert!(r.text().contains("hello from work"), "{}", r.text());
    // Only the plugin whose section changed was bound again.
    assert!(d.stderr().contains("plugins=fs"), "{}", d.stderr());

    let (code, out, err) = run(&env, &["revoke", "fs", "dir", "./work/"]);
    assert_eq!(code, 0, "{out}{err}");
    wait_logged(&d, APPLIED, 2);
    // No waiting and no retry: the first call after the daemon applied the revoke is refused.
    d.call("read_file", json!({ "path": "note.txt" }))
        .assert_error("tool_failed", "no directory grant covers");
    let text = std::fs::read_to_string(env.path().join("toolhost.toml")).unwrap();
    assert!(text.starts_with("# the operator's notes stay\n"), "{text}");
    assert!(
        !text.contains("plugins.fs"),
        "an emptied section goes: {text}"
    );
    // One record per call, all three.
    let records = env.audit();
    assert_eq!(records.len(), 3, "{records:?}");
    let outcomes: Vec<&str> = records
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["error", "ok", "error"]);
    assert!(d.stop().success());
}

#[test]
fn a_policy_file_start_would_refuse_leaves_the_policy_in_force() {
    let env = env();
    let config = env.path().join("toolhost.toml");
    let good = format!(
        "{}[plugins.fs]\ndirs = [{{ host = \"work\" }}]\n",
        std::fs::read_to_string(&config).unwrap()
    );
    std::fs::write(&config, &good).unwrap();
    let mut d = Daemon::start(&env, &[]);
    d.call("read_file", json!({ "path": "note.txt" }))
        .assert_ok();

    // By hand: a directory that does not exist, then a typo in a section's name, then a grant
    // over toolhost's own folder; each is refused and the grant in force keeps serving.
    let bad = [
        good.replace("\"work\"", "\"missing\""),
        format!("{good}[plugins.fss]\ndirs = [{{ host = \"work\" }}]\n"),
        good.replace("{ host = \"work\" }", "{ host = \".\", mode = \"rw\" }"),
    ];
    for (n, text) in bad.iter().enumerate() {
        std::fs::write(&config, text).unwrap();
        wait_logged(&d, REFUSED, n + 1);
        d.call("read_file", json!({ "path": "note.txt" }))
            .assert_ok();
    }
    let log = d.stderr();
    assert!(log.contains("plugins.fs.dirs[0].host"), "{log}");
    assert!(log.contains("[plugins.fss] names no plugin"), "{log}");
    assert!(log.contains("holds none of toolhost's own files"), "{log}");
    // A change only a restart applies is named, and the plugin policies still apply.
    std::fs::write(
        &config,
        format!("[server]\nmax-concurrent-calls = 3\n{good}"),
    )
    .unwrap();
    wait_logged(&d, "apply only at the next start", 1);
    assert!(d.stderr().contains("sections=server"), "{}", d.stderr());
    assert!(d.stop().success());
}

#[test]
fn grant_checks_as_start_checks_and_writes_nothing_it_refuses() {
    let env = env();
    let config = env.path().join("toolhost.toml");
    let before = std::fs::read(&config).unwrap();
    std::fs::create_dir(env.path().join(".toolhost")).unwrap();
    let refused = [
        (
            vec!["grant", "fss", "dir", "work"],
            "[plugins.fss] names no plugin",
        ),
        (
            vec!["grant", "fs", "dir", "missing"],
            "is not an existing directory",
        ),
        (
            vec!["grant", "fs", "dir", ".", "--rw"],
            "holds none of toolhost's own files",
        ),
        (
            vec!["grant", "fs", "dir", ".toolhost"],
            "holds none of toolhost's own files",
        ),
        (
            vec!["grant", "fs", "network", "docs.rs"],
            "is not a destination",
        ),
        (
            vec!["grant", "fs", "env", "=x"],
            "not a valid environment variable",
        ),
        (
            vec!["revoke", "fs", "dir", "work"],
            "plugins.fs has no dir grant",
        ),
        (
            vec!["grant", "fs", "network", "https://x.org", "--rw"],
            "--rw",
        ),
    ];
    for (args, needle) in refused {
        let (code, out, err) = run(&env, &args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(
            std::fs::read(&config).unwrap(),
            before,
            "{args:?} wrote the file"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(env.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A policy file that does not exist yet is created by a grant that passes, and only then.
    let (code, _, _) = run(
        &env,
        &["--config", "new.toml", "grant", "fss", "dir", "work"],
    );
    assert_eq!(code, 2);
    assert!(!env.path().join("new.toml").exists());
    let (code, out, err) = run(
        &env,
        &["--config", "new.toml", "grant", "fs", "dir", "work"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let written = std::fs::read_to_string(env.path().join("new.toml")).unwrap();
    assert_eq!(
        written,
        "[plugins.fs]\ndirs = [{ host = \"work\", mode = \"ro\" }]\n"
    );
}

#[test]
fn edits_at_once_are_all_kept() {
    let env = env();
    let children: Vec<_> = (0..8)
        .map(|i| {
            env.command(&["grant", "echo", "env", &format!("VAR_{i}=v{i}")])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(env.path().join("toolhost.toml")).unwrap();
    for i in 0..8 {
        assert!(
            text.contains(&format!("VAR_{i} = \"v{i}\"")),
            "VAR_{i} lost:\n{text}"
        );
    }
}
