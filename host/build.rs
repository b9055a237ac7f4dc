//! Link settings of the `toolhost` binary, and the commit it was built from.
//!
//! `toolhost --version` names the commit: an operator reporting a bug, or comparing two daemons,
//! needs more than the crate version. It comes from git when the source is a checkout (`-dirty`
//! when tracked files differ from it), else from the `TOOLHOST_COMMIT` environment variable
//! (builds without `.git`, such as the container build), else it is "unknown commit". Cargo reruns
//! this script when HEAD moves, the branch it names moves, or the index changes (a commit, a
//! checkout, `git add`), not on every edit.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=hot-code.txt");
    println!("cargo:rerun-if-env-changed=TOOLHOST_HOT_CODE");
    version_line();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        // Relative relocations packed (DT_RELR, glibc 2.36+, binutils 2.38+): the binary's ~78,000
        // relocations take a few KB instead of 1.9 MB, which the loader reads and applies at every
        // start. The binary stays position-independent.
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        // `scripts/hot-code.sh` profiles a build without it: callgrind names code outside `.text`
        // as an unknown object.
        if std::env::var_os("TOOLHOST_HOT_CODE").is_none_or(|v| v != "off") {
            hot_code();
        }
    }
}

/// The functions of the everyday path (`hot-code.txt`, written by `scripts/hot-code.sh`) placed
/// side by side in a section of their own, ahead of `.text`. The kernel maps a binary's code in
/// 64 KiB windows around each page touched, so scattered among 36 MiB of code these few MiB made
/// the daemon map about 20 MiB of it. The script adds to the linker's default layout (`INSERT`),
/// and both GNU ld and lld read it; a line that matches no section changes nothing. A linker
/// without `SECTIONS` (mold) needs `TOOLHOST_HOT_CODE=off`.
fn hot_code() {
    let Ok(list) = std::fs::read_to_string("hot-code.txt") else {
        return;
    };
    // One input section description: the linker scans every input section once per description,
    // and one per function made the link 30 s slower.
    let mut script = String::from("SECTIONS {\n  .text.hot : {\n    *(\n");
    for name in list
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        // A trailing `17h` stands for the hash (`17h<16 hex digits>E`) and any suffix after it.
        let any = if name.ends_with("17h") { "*" } else { "" };
        // Cold functions (`#[cold]`) are named `.text.unlikely.<symbol>`.
        let _ = writeln!(script, "      .text.{name}{any} .text.unlikely.{name}{any}");
    }
    script.push_str("    )\n  }\n}\nINSERT BEFORE .text;\n");
    let path = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("hot-code.ld");
    std::fs::write(&path, script).expect("write the hot-code linker script");
    println!(
        "cargo:rustc-link-arg-bin=toolhost=-Wl,-T,{}",
        path.display()
    );
}

/// `TOOLHOST_VERSION_LINE`, what clap prints after the name: `0.1.0 (commit 1a2b3c4d5e6f, 2026-11-28)`.
fn version_line() {
    println!("cargo:rerun-if-env-changed=TOOLHOST_COMMIT");
    let version = env!("CARGO_PKG_VERSION");
    let line = match from_git().or_else(from_env) {
        Some((commit, Some(date))) => format!("{version} (commit {commit}, {date})"),
        Some((commit, None)) => format!("{version} (commit {commit})"),
        None => format!("{version} (unknown commit)"),
    };
    println!("cargo:rustc-env=TOOLHOST_VERSION_LINE={line}");
}

/// `git` with `args` in this directory, its trimmed stdout when it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_owned())
}

/// The checkout's commit (12 hex digits, `-dirty` when tracked files changed) and its date, and
/// the files whose change means another commit.
fn from_git() -> Option<(String, Option<String>)> {
    let head = git(&["rev-parse", "HEAD"])?;
    if head.len() < 12 || !head.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    watch(&["rev-parse", "--git-path", "HEAD"]);
    watch(&["rev-parse", "--git-path", "index"]);
    watch(&["rev-parse", "--git-path", "packed-refs"]);
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(&["rev-parse", "--git-path", &branch]);
    }
    let dirty = match Command::new("git")
        .args(["diff", "--quiet", "HEAD", "--"])
        .status()
    {
        Ok(s) if s.code() == Some(1) => "-dirty",
        _ => "",
    };
    let date = git(&["log", "-1", "--format=%cs", "HEAD"]).filter(|d| !d.is_empty());
    Some((format!("{}{dirty}", &head[..12]), date))
}

/// Rerun when the file git names with `args` changes (only if it exists: cargo reruns every
/// build for a missing one).
fn watch(args: &[&str]) {
    if let Some(path) = git(args).map(PathBuf::from)
        && path.exists()
    {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// `TOOLHOST_COMMIT`, when set to something printable and short; a full hash (the image build
/// passes `github.sha`) is cut to the 12 digits a checkout's build shows.
fn from_env() -> Option<(String, Option<String>)> {
    let commit = std::env::var("TOOLHOST_COMMIT").ok()?;
    let commit = commit.trim();
    let commit = match commit.get(..12) {
        Some(short) if commit.bytes().all(|b| b.is_ascii_hexdigit()) => short,
        _ => commit,
    };
    let printable = commit
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c));
    (!commit.is_empty() && commit.len() <= 64 && printable).then(|| (commit.to_owned(), None))
}
