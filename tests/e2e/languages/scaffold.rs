//! `toolhost new NAME --lang L`: the project it writes runs its own test.sh (unit tests, build, two calls
//! through the real binary) without edits, and the component it builds loads. Rust always; the others
//! when their toolchain is ready.

use std::process::Command;

use serde_json::Value;

use super::{heavy, toolchain_env, toolchain_ready};
use crate::harness::{Env, root};

/// `extra` flags go to `toolhost new` (`--wasi 0.3`).
fn scaffold_builds_and_loads_without_edits(lang: &str, extra: &[&str]) {
    if lang != "rust" && !toolchain_ready(lang, &format!("`toolhost new --lang {lang}`")) {
        return;
    }
    let name = format!("demo_{lang}{}", if extra.is_empty() { "" } else { "_x" });
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join(&name);
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["new", &name, "--lang", lang])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kind = if extra.is_empty() { "" } else { "WASI 0.3 " };
    assert!(
        stdout.contains(&format!("created the {kind}{lang} plugin '{name}'")),
        "{stdout}"
    );
    assert!(project.join("wit/plugin.wit").is_file() && project.join("build.sh").is_file());

    let mut test = Command::new(project.join("test.sh"));
    toolchain_env(&mut test).env("TOOLHOST", env!("CARGO_BIN_EXE_toolhost"));
    if lang == "rust" {
        // Shared between runs and tests, so that wit-bindgen and serde_json compile once.
        test.env("CARGO_TARGET_DIR", root().join("target/scaffold-rust"));
    }
    let out = {
        let _heavy = heavy();
        test.output().unwrap()
    };
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "test.sh of a new {lang} project failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("test.sh: ok"), "{stdout}");

    // The component test.sh built loads as a plugin: its tool is listed, read-only, with its schema.
    let env = Env::new(
        &[],
        &format!(
            "[cache]\ndir = '{}'\n",
            project.join(".toolhost/cache").display()
        ),
    );
    std::fs::copy(
        project.join(format!("{name}.wasm")),
        env.path().join("plugins").join(format!("{name}.wasm")),
    )
    .unwrap();
    let out = env.run(&["list", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tool = &list["tools"][0];
    assert_eq!(tool["name"], name.as_str(), "{list}");
    assert_eq!(tool["hints"]["read_only"], true, "{list}");
    assert_eq!(tool["input_schema"]["required"][0], "text", "{list}");
}

#[test]
fn new_rust_project_builds_and_loads_without_edits() {
    scaffold_builds_and_loads_without_edits("rust", &[]);
}

#[test]
fn new_wasi_03_rust_project_builds_and_loads_without_edits() {
    scaffold_builds_and_loads_without_edits("rust", &["--wasi", "0.3"]);
}

#[test]
fn new_python_project_builds_and_loads_without_edits() {
    scaffold_builds_and_loads_without_edits("python", &[]);
}

#[test]
fn new_js_project_builds_and_loads_without_edits() {
    scaffold_builds_and_loads_without_edits("js", &[]);
}

#[test]
fn new_c_project_builds_and_loads_without_edits() {
    scaffold_builds_and_loads_without_edits("c", &[]);
}

#[test]
fn new_refuses_a_bad_name_and_a_non_empty_dir() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["new", "no spaces", "--lang", "rust"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot name a plugin"));
    let out = run(&["new", "ok", "--lang", "cobol"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rust, python, js, c"));
    std::fs::create_dir(dir.path().join("taken")).unwrap();
    std::fs::write(dir.path().join("taken/keep.txt"), "x").unwrap();
    let out = run(&["new", "ok", "--lang", "c", "--dir", "taken"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists and is not empty"));
    // `new` needs no config: a broken toolhost.toml here does not stop it.
    std::fs::write(dir.path().join("toolhost.toml"), "not toml [").unwrap();
    let out = run(&["new", "fresh", "--lang", "js"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("fresh/package-lock.json").is_file());
}

/// `toolhost new NAME --lang rust --generic`: a component of plain typed functions; its test.sh calls
/// the derived tool (its `read-only` said in toolhost.toml) and sees a derived-schema refusal and a
/// `result::err`; the component loads as a generic plugin whose tool has an output schema.
#[test]
fn new_generic_rust_project_builds_and_serves_its_exports() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("word-stats");
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["new", "word-stats", "--lang", "rust", "--generic"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("created the generic rust plugin 'word-stats'"),
        "{stdout}"
    );
    let mut test = Command::new(project.join("test.sh"));
    toolchain_env(&mut test)
        .env("TOOLHOST", env!("CARGO_BIN_EXE_toolhost"))
        .env("CARGO_TARGET_DIR", root().join("target/scaffold-rust"));
    let out = {
        let _heavy = heavy();
        test.output().unwrap()
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "test.sh of a new generic project failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("test.sh: ok"), "{stdout}");
    let env = Env::new(&[], "");
    std::fs::copy(
        project.join("word-stats.wasm"),
        env.path().join("plugins/word-stats.wasm"),
    )
    .unwrap();
    let out = env.run(&["list", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tool = &list["tools"][0];
    assert_eq!(tool["name"], "tools_count", "{list}");
    assert_eq!(
        tool["output_schema"]["required"],
        serde_json::json!(["lines", "words", "chars"])
    );
    assert_eq!(list["plugins"]["word-stats"]["generic"], true);
}
