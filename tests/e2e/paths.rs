//! Deny means deny, whatever the spelling: path rules judged where the guest really lands (absolute
//! paths, `..` after links, aliases of denied folders, missing subjects), enforced again by the
//! sandbox's filesystem against plugins that ignore their input, and a differential check of the
//! gate's verdict against the file the guest really opens over generated link layouts.

use std::path::Path;

use serde_json::{Value, json};
use toolhost::exec::{CallOutcome, CallRequest};
use toolhost_call::tool::{Hints, ToolSpec};
use toolhost_gate::gate::{Decision, Mounts, PermissionConfig, Permissions};

use crate::daemon::{Daemon, Outcome, record};
use crate::harness::Env;

const SECRET: &str = "TOKEN=hunter2";

/// work/: secrets/key, src/deep/, src/notes.txt, alias -> secrets, link -> src/deep, .env.
fn layout(work: &Path) {
    std::fs::create_dir_all(work.join("secrets")).unwrap();
    std::fs::create_dir_all(work.join("src/deep")).unwrap();
    std::fs::write(work.join("secrets/key"), SECRET).unwrap();
    std::fs::write(work.join("src/notes.txt"), "TOKEN=public\n").unwrap();
    std::fs::write(work.join(".env"), "TOKEN=dotenv\n").unwrap();
    std::os::unix::fs::symlink("secrets", work.join("alias")).unwrap();
    std::os::unix::fs::symlink("src/deep", work.join("link")).unwrap();
}

/// The audit record of `o`: one, with the outcome the client got.
#[track_caller]
fn audited(env: &Env, o: &Outcome) -> Value {
    let r = record(env, o.call_id());
    let kind = if o.is_error() {
        json!(o.kind())
    } else {
        Value::Null
    };
    assert_eq!(r["error_kind"], kind, "{r}");
    r
}

#[track_caller]
fn secret_intact(work: &Path) {
    assert_eq!(
        std::fs::read_to_string(work.join("secrets/key")).unwrap(),
        SECRET
    );
    assert_eq!(
        std::fs::read_dir(work.join("secrets")).unwrap().count(),
        1,
        "something was created in secrets/"
    );
}

#[test]
fn deny_rules_hold_against_every_spelling_of_a_denied_path() {
    let env = Env::new(
        &["hostile", "echo"],
        "[permissions]\nmode = \"bypass\"\ndeny = [\"*(./secrets/**)\"]\n\
         [plugins.hostile]\ndirs = [{ host = \"work\", mode = \"rw\" }]\n",
    );
    let work = env.work();
    layout(&work);
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let spellings = [
        "secrets/key",
        "/secrets/key",
        "./secrets//key",
        "src/../secrets/key",
        "alias/key",
        "/alias/key",
        "link/../../secrets/key",
        "alias/../secrets/key",
    ];
    for path in spellings {
        for (tool, args) in [
            ("read", json!({ "path": path })),
            ("write", json!({ "path": path, "content": "pwned" })),
            ("truncate", json!({ "path": path })),
            ("remove", json!({ "path": path })),
            ("stat", json!({ "path": path })),
        ] {
            let o = d.call(tool, args);
            o.assert_error("denied", "Permission denied");
            assert!(
                !o.result.to_string().contains("hunter2"),
                "{tool} {path}: {}",
                o.result
            );
            let r = audited(&env, &o);
            assert_eq!(r["decision"]["kind"], "denied", "{r}");
        }
    }
    // A missing subject fails closed; so does `..` out of the grant and a link out of it.
    let o = d.call("read", json!({}));
    o.assert_error("denied", "the input has no `/path`");
    audited(&env, &o);
    std::os::unix::fs::symlink("../..", work.join("src/up")).unwrap();
    for (path, why) in [
        ("../x", "climbs out of the granted directory"),
        ("src/up/etc/passwd", "leads out of the granted directory"),
    ] {
        let o = d.call("read", json!({ "path": path }));
        o.assert_error("denied", why);
        audited(&env, &o);
    }
    secret_intact(&work);
    // The rule denies nothing else, and the daemon serves on.
    let o = d.call("read", json!({ "path": "/src/notes.txt" }));
    o.assert_ok();
    assert_eq!(o.text(), "TOKEN=public\n");
    audited(&env, &o);
    d.call("echo", json!({ "text": "still here" })).assert_ok();
    assert!(d.stop().success());
}

#[test]
fn the_sandbox_refuses_denied_paths_a_plugin_opens_on_its_own() {
    let env = Env::new(
        &["hostile", "fs"],
        "[permissions]\nmode = \"bypass\"\n\
         deny = [\"rename(./secrets/**)\", \"hardlink(./secrets/**)\", \"grep(./secrets/**)\", \"list(./secrets/**)\"]\n\
         [plugins.hostile]\ndirs = [{ host = \"work\", mode = \"rw\" }]\n\
         [plugins.fs]\ndirs = [{ host = \"work\", exclude = [\".env\"] }]\n",
    );
    let work = env.work();
    layout(&work);
    std::fs::write(work.join("src/a"), "a").unwrap();
    let mut d = Daemon::start(&env, &["--no-watch"]);

    // The gate judges `from` and `link`; the other path is the plugin's own choice.
    let o = d.call("rename", json!({ "from": "src/a", "to": "alias/a" }));
    o.assert_error("tool_failed", "ermission denied");
    audited(&env, &o);
    assert!(work.join("src/a").exists());
    let o = d.call(
        "hardlink",
        json!({ "target": "secrets/key", "link": "src/k" }),
    );
    o.assert_error("tool_failed", "ermission denied");
    audited(&env, &o);
    assert!(!work.join("src/k").exists());

    // grep with no path searches "." (its schema's default): everything but the denied folder.
    let o = d.call("grep", json!({ "pattern": "TOKEN" }));
    o.assert_ok();
    let r = audited(&env, &o);
    assert!(o.text().contains("TOKEN=public"), "{}", o.text());
    assert!(
        !o.text().contains("hunter2"),
        "grep leaked the denied folder: {}",
        o.text()
    );
    assert!(
        r["coercions"]
            .to_string()
            .contains("/path: the schema's default filled in"),
        "{r}"
    );
    // A rule on the folder's contents covers the folder itself; a listing of its parent leaves
    // it out.
    let o = d.call("list", json!({ "path": "secrets" }));
    o.assert_error("denied", "denied by rule");
    let o = d.call("list", json!({ "path": "." }));
    o.assert_ok();
    let entries = o.structured()["entries"].to_string();
    assert!(!entries.contains("\"secrets\""), "{entries}");
    assert!(entries.contains("\"src\""), "{entries}");

    // An `exclude` entry on a grant: no rule names it, the sandbox refuses it anyway.
    let o = d.call("read_file", json!({ "path": ".env" }));
    assert!(o.is_error(), "{}", o.result);
    assert!(!o.result.to_string().contains("dotenv"), "{}", o.result);
    audited(&env, &o);
    let o = d.call("list_dir", json!({}));
    o.assert_ok();
    assert!(!o.text().contains(".env"), "{}", o.text());
    assert!(o.text().contains("src/"), "{}", o.text());
    let o = d.call("grep", json!({ "pattern": "dotenv" }));
    o.assert_ok();
    assert!(!o.text().contains("TOKEN=dotenv"), "{}", o.text());

    secret_intact(&work);
    d.call("read_file", json!({ "path": "src/notes.txt" }))
        .assert_ok();
    assert!(d.stop().success());
}

#[test]
fn a_bad_exclude_entry_is_a_config_error() {
    let env = Env::new(
        &["echo"],
        "[plugins.echo]\ndirs = [{ host = \"work\", exclude = [\"../x\"] }]\n",
    );
    let out = env.run(&["list"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("plugins.echo.dirs[0].exclude[0]"),
        "{stderr}"
    );
}

/// A small deterministic generator (xorshift), so a failure names a seed that reproduces it.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
}

const DIRS: [&str; 4] = ["", "a", "b", "a/sub"];
const SEGMENTS: [&str; 12] = [
    "a", "b", "secrets", "sub", "f", "l0", "l1", "l2", "l3", "..", ".", "",
];

/// Files that name themselves (`FILE secrets/f`), and five random links, some out of the grant.
fn random_layout(work: &Path, rng: &mut Rng) {
    for dir in ["a/sub", "b", "secrets"] {
        std::fs::create_dir_all(work.join(dir)).unwrap();
    }
    for file in ["f", "a/f", "b/f", "a/sub/f", "secrets/f"] {
        std::fs::write(work.join(file), format!("FILE {file}")).unwrap();
    }
    for i in 0..5 {
        let dir = rng.pick(&DIRS);
        let len = 1 + rng.next() % 3;
        let target: Vec<&str> = (0..len).map(|_| rng.pick(&SEGMENTS[..10])).collect();
        let link = work.join(dir).join(format!("l{i}"));
        let _ = std::os::unix::fs::symlink(target.join("/"), link);
    }
}

fn random_spelling(rng: &mut Rng) -> String {
    let len = 1 + rng.next() % 4;
    let mut parts: Vec<&str> = (0..len).map(|_| rng.pick(&SEGMENTS)).collect();
    if rng.next().is_multiple_of(2) {
        parts.push("f");
    }
    let lead = if rng.next().is_multiple_of(3) {
        "/"
    } else {
        ""
    };
    format!("{lead}{}", parts.join("/"))
}

async fn read(pipeline: &toolhost::exec::Pipeline, path: &str) -> CallOutcome {
    pipeline
        .call(CallRequest {
            tool: "read".into(),
            input: json!({ "path": path }),
            origin: "test",
            ..CallRequest::default()
        })
        .await
}

/// Over generated link layouts and spellings: what the gate allows never reaches the denied
/// folder in the real guest; what it denies does reach it, cannot be opened, or names the denied
/// folder as written (the rule is read widely); and with the rule in force nothing ever leaks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gates_verdict_agrees_with_the_file_the_guest_opens() {
    let spec = ToolSpec {
        name: "read".into(),
        title: None,
        description: "read".into(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        hints: Hints {
            read_only: true,
            ..Hints::default()
        },
        permission_subject: Some("/path".into()),
    };
    let deny = PermissionConfig {
        mode: Some(toolhost_gate::gate::Mode::Bypass),
        deny: vec!["read(./secrets/**)".into()],
        ..PermissionConfig::default()
    };
    let (mut judged, mut leaks_blocked) = (0, 0);
    for seed in 1..=6u64 {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed);
        let open = Env::new(
            &["hostile"],
            "[permissions]\nmode = \"bypass\"\n[plugins.hostile]\ndirs = [{ host = \"work\" }]\n",
        );
        let work = open.work();
        random_layout(&work, &mut rng);
        let guarded = Env::new(
            &["hostile"],
            &format!(
                "[permissions]\nmode = \"bypass\"\ndeny = [\"read(./secrets/**)\"]\n\
                 [plugins.hostile]\ndirs = [{{ host = {:?} }}]\n",
                work.display().to_string()
            ),
        );
        let truth = open.pipeline(4).await;
        let enforced = guarded.pipeline(4).await;
        let gate = Permissions::new(&deny, None)
            .unwrap()
            .with_files(Mounts::new([(".", work.as_path())]), Vec::new());
        for _ in 0..40 {
            let path = random_spelling(&mut rng);
            let verdict = gate.decide(&spec, &json!({ "path": path }));
            let real = read(&truth, &path).await;
            let reached = !real.is_error() && real.content.starts_with("FILE secrets/");
            let context = format!(
                "seed {seed}, path {path:?}: {verdict:?} vs {:?}",
                real.content
            );
            match &verdict {
                Decision::Allow { .. } => {
                    assert!(!reached, "allowed a read of the denied folder: {context}")
                }
                Decision::Deny { reason, .. } => {
                    let unplaceable = reason.contains("cannot be checked");
                    let named = reason.contains("denied by rule");
                    assert!(
                        reached || real.is_error() || named || unplaceable,
                        "{context}"
                    );
                    if unplaceable {
                        assert!(
                            real.is_error(),
                            "the gate could not place a path the guest opened: {context}"
                        );
                    }
                }
                Decision::Ask { .. } => panic!("bypass mode never asks: {context}"),
            }
            let with_rule = read(&enforced, &path).await;
            assert!(
                !with_rule.content.contains("FILE secrets/"),
                "leaked with the rule in force: {path:?}"
            );
            judged += 1;
            leaks_blocked += usize::from(reached);
        }
    }
    assert!(judged >= 240);
    assert!(
        leaks_blocked > 0,
        "no generated spelling reached the denied folder: the generator tests nothing"
    );
}
