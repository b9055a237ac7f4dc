//! toolhost's own state out of every plugin's reach, through the real binary: a grant over the compile
//! cache, the audit log, the config file, a secrets file or the plugins folder stops it at start (exit
//! 2, naming the setting), and a compile-cache entry that was altered or swapped is recompiled, never
//! loaded.

use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::harness::Env;

const BYPASS: &str = "[permissions]\nmode = \"bypass\"\n";

/// `toolhost list` in `env` with `args`: (exit code, stderr).
fn list(env: &Env, args: &[&str]) -> (Option<i32>, String) {
    let mut all = args.to_vec();
    all.push("list");
    let out = env.run(&all);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[track_caller]
fn refused(env: &Env, args: &[&str], setting: &str, what: &str) {
    let (code, stderr) = list(env, args);
    assert_eq!(code, Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(&format!("invalid setting `{setting}")) && stderr.contains(what),
        "{args:?}: expected `{setting}` and {what:?} in: {stderr}"
    );
}

#[test]
fn a_grant_over_toolhosts_own_files_stops_it_naming_the_setting() {
    let env = Env::new(&["echo"], BYPASS);
    let root = env.path();
    std::fs::create_dir_all(root.join(".toolhost/cache")).unwrap();
    std::fs::create_dir(root.join("secrets")).unwrap();
    std::fs::write(root.join("secrets/token"), "s3cret-token-0123456789").unwrap();
    // The project folder itself holds everything: the first grant an operator might try.
    refused(
        &env,
        &["--dir", &format!("echo={}:rw", root.display())],
        "--dir echo=",
        "covers the plugins folder",
    );
    refused(
        &env,
        &["--dir", "echo=.toolhost"],
        "--dir echo=",
        "covers the compile cache",
    );
    std::fs::create_dir(root.join(".toolhost/cache/sub")).unwrap();
    refused(
        &env,
        &["--dir", "echo=.toolhost/cache/sub"],
        "--dir echo=",
        "lies inside the compile cache",
    );
    refused(
        &env,
        &["--dir", "echo=plugins"],
        "--dir echo=",
        "covers the plugins folder",
    );
    // The audit log elsewhere, in a granted folder that does not hold it yet.
    refused(
        &env,
        &["--audit", "work/logs/audit.jsonl", "--dir", "echo=work"],
        "--dir echo=",
        "covers the audit log",
    );
    // A symlinked alias of the state folder is seen through.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(root.join(".toolhost"), root.join("alias")).unwrap();
        refused(
            &env,
            &["--dir", "echo=alias"],
            "--dir echo=",
            "covers the compile cache",
        );
    }
    // From the file: a secrets folder, and the folder of the config file itself.
    let secret = format!(
        "{BYPASS}[plugins.echo]\ndirs = [{{ host = \"secrets\" }}]\n\
         [plugins.echo.secrets.tok]\nfrom-file = \"secrets/token\"\nenv = \"TOKEN\"\n"
    );
    std::fs::write(root.join("toolhost.toml"), secret).unwrap();
    refused(
        &env,
        &[],
        "plugins.echo.dirs[0].host",
        "covers a secrets file",
    );
    std::fs::create_dir(root.join("conf")).unwrap();
    std::fs::write(
        root.join("conf/toolhost.toml"),
        format!(
            "plugins-dir = \"../plugins\"\n{BYPASS}[cache]\ndir = \"../.toolhost/cache\"\n\
             [audit]\npath = \"../.toolhost/audit.jsonl\"\n[plugins.echo]\ndirs = [{{ host = \".\" }}]\n"
        ),
    )
    .unwrap();
    refused(
        &env,
        &["--config", "conf/toolhost.toml"],
        "plugins.echo.dirs[0].host",
        "covers the config file",
    );
    // A folder that holds none of it is fine, and the tool still runs.
    std::fs::write(root.join("toolhost.toml"), BYPASS).unwrap();
    let (code, stderr) = list(&env, &["--dir", "echo=work:rw"]);
    assert_eq!(code, Some(0), "{stderr}");
    env.call("echo", json!({ "text": "fine" })).assert_ok();
}

/// The compile-cache entry of the plugin file `wasm`.
fn entry(env: &Env, wasm: &Path) -> PathBuf {
    let hash: String = Sha256::digest(std::fs::read(wasm).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let cache = env.path().join(".toolhost/cache");
    std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&hash) && n.ends_with(".cwasm"))
        })
        .unwrap_or_else(|| {
            panic!(
                "no cache entry for {} in {}",
                wasm.display(),
                cache.display()
            )
        })
}

#[test]
fn an_altered_or_swapped_cache_entry_is_recompiled_never_loaded() {
    let env = Env::new(&["echo", "hostile"], BYPASS);
    let echo = |text: &str| {
        let c = env.call("echo", json!({ "text": text }));
        c.assert_ok();
        assert_eq!(c.json["structured"]["text"], text, "{}", c.json);
    };
    echo("first, compiled");
    let victim = entry(&env, &env.path().join("plugins/echo.wasm"));
    let attacker = entry(&env, &env.path().join("plugins/hostile.wasm"));
    let key = env.path().join(".toolhost/cache/cache.key");
    assert_eq!(std::fs::read(&key).unwrap().len(), 32);

    // One flipped byte in the compiled code.
    let mut bytes = std::fs::read(&victim).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&victim, &bytes).unwrap();
    echo("after a flipped byte");
    let rewritten = std::fs::read(&victim).unwrap();
    assert_ne!(rewritten, bytes, "the altered entry was kept");

    // Another plugin's entry, valid under the host's key, copied over the victim's.
    std::fs::copy(&attacker, &victim).unwrap();
    echo("after a swapped entry");
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        rewritten,
        "the victim's entry is its own again"
    );
    // Nothing else is loaded from the cache than what the host wrote: a new key invalidates every entry.
    std::fs::write(&key, [7u8; 32]).unwrap();
    echo("under another key");
}

/// The description the cache keeps beside `wasm`'s compiled entry.
fn description(env: &Env, wasm: &Path) -> PathBuf {
    let compiled = entry(env, wasm);
    let name = compiled.file_name().unwrap().to_str().unwrap();
    compiled.with_file_name(name.replace(".cwasm", ".describe.json"))
}

fn echo_request(text: &str) -> toolhost::exec::CallRequest {
    toolhost::exec::CallRequest {
        tool: "echo".into(),
        input: json!({ "text": text }),
        origin: "test",
        ..Default::default()
    }
}

#[tokio::test]
async fn a_restart_lists_a_described_plugin_and_loads_its_code_only_when_called() {
    let env = Env::new(&["echo"], BYPASS);
    let wasm = env.path().join("plugins/echo.wasm");
    env.call("echo", json!({ "text": "compiled and described" }))
        .assert_ok();
    let described = description(&env, &wasm);
    assert!(described.is_file(), "no description kept");

    // Listed from its description: the compiled entry is not read until the first call, which
    // compiles the component again from its file when the entry is gone.
    std::fs::remove_file(entry(&env, &wasm)).unwrap();
    let p = env.pipeline(4).await;
    let tool = p
        .services()
        .registry
        .catalog()
        .tools
        .get("echo")
        .cloned()
        .unwrap();
    assert!(!tool.plugin.code_loaded(), "the code was loaded at start");
    let o = p.call(echo_request("loaded late")).await;
    assert!(!o.is_error(), "{}", o.content);
    assert!(tool.plugin.code_loaded());
    assert!(
        entry(&env, &wasm).is_file(),
        "not compiled into the cache again"
    );

    // A forged description is not believed: the plugin is described again, by itself.
    let mut bytes = std::fs::read(&described).unwrap();
    let at = bytes.windows(4).position(|w| w == b"echo").unwrap();
    bytes[at..at + 4].copy_from_slice(b"ECHO");
    std::fs::write(&described, bytes).unwrap();
    env.call("echo", json!({ "text": "described again" }))
        .assert_ok();
    assert!(
        std::fs::read(&described)
            .unwrap()
            .windows(4)
            .any(|w| w == b"echo")
    );

    // The file replaced after the listing, with the compiled entry gone: the first call refuses
    // to load anything but the component that was listed.
    let p = env.pipeline(4).await;
    std::fs::remove_file(entry(&env, &wasm)).unwrap();
    std::fs::copy(crate::harness::plugin_file("hostile"), &wasm).unwrap();
    let o = p.call(echo_request("swapped")).await;
    assert!(o.is_error(), "{}", o.content);
    // The model is told the tool could not be set up; the operator's audit record says why.
    assert!(
        o.content.contains("could not be set up on the host"),
        "{}",
        o.content
    );
    let r = crate::daemon::record(&env, &o.call_id);
    assert!(
        r["detail"]
            .as_str()
            .is_some_and(|d| d.contains("holds another component than the one loaded")),
        "{r}"
    );
}

#[tokio::test]
async fn only_a_checked_description_is_kept_and_a_restart_still_validates_against_it() {
    // An operator's override that contradicts echo's read-only hint rejects the plugin: what it
    // described is not kept, so no restart can list it unchecked.
    let contradicted = format!("{BYPASS}[plugins.echo.tools.echo]\ndestructive = true\n");
    let env = Env::new(&["echo"], &contradicted);
    let wasm = env.path().join("plugins/echo.wasm");
    let p = env.pipeline(4).await;
    assert!(
        !p.services().registry.catalog().tools.contains_key("echo"),
        "a contradiction was served"
    );
    assert!(
        !description(&env, &wasm).exists(),
        "a description that failed the checks was kept"
    );

    // Checked, it is kept; a restart lists echo from it without compiling its schemas, and the
    // first calls are still validated against them.
    std::fs::write(env.path().join("toolhost.toml"), BYPASS).unwrap();
    drop(env.pipeline(4).await);
    assert!(description(&env, &wasm).is_file(), "no description kept");
    let p = env.pipeline(4).await;
    let o = p
        .call(toolhost::exec::CallRequest {
            input: json!({ "text": "x", "repeat": 0 }),
            ..echo_request("")
        })
        .await;
    assert!(o.is_error(), "{}", o.content);
    assert!(o.content.contains("/repeat"), "{}", o.content);
    let o = p.call(echo_request("valid")).await;
    assert!(!o.is_error(), "{}", o.content);
    // And the same with the contradiction back: the cached description is checked again.
    std::fs::write(env.path().join("toolhost.toml"), &contradicted).unwrap();
    let p = env.pipeline(4).await;
    assert!(
        !p.services().registry.catalog().tools.contains_key("echo"),
        "an override was skipped"
    );
}
