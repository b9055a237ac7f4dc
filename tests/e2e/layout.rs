//! The code of the daemon's everyday path sits together, ahead of the rest (host/build.rs), and
//! the list that names it (host/hot-code.txt) still names the code this build has: a layout that
//! is missing fails; a stale list warns (and fails only with TOOLHOST_REQUIRE_HOT_CODE=1).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::collections::HashSet;
use std::io::Write;

use object::{Object, ObjectSection, ObjectSymbol};

/// A symbol as `hot-code.txt` names it: without the per-build hash of Rust's legacy mangling
/// (`17h<16 hex digits>E` and what follows it) or an LLVM suffix (`.llvm.<digits>`).
fn key(symbol: &str) -> &str {
    if let Some(at) = symbol.rfind("17h") {
        let hash = symbol.as_bytes().get(at + 3..at + 20);
        if hash.is_some_and(|h| h[..16].iter().all(u8::is_ascii_hexdigit) && h[16] == b'E') {
            return &symbol[..at + 3];
        }
    }
    symbol.split(".llvm.").next().unwrap_or(symbol)
}

#[test]
fn everyday_code_is_placed_together_and_its_list_is_current() {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_toolhost")).unwrap();
    let binary = object::File::parse(&*bytes).unwrap();
    let hot = binary
        .section_by_name(".text.hot")
        .expect("no .text.hot section: host/build.rs's linker script was not applied");
    let text = binary.section_by_name(".text").unwrap();
    assert!(
        hot.address() < text.address(),
        "the everyday code comes first"
    );
    assert!(
        hot.size() > 1 << 20,
        "only {} bytes placed together",
        hot.size()
    );

    let list =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/hot-code.txt")).unwrap();
    let listed: Vec<&str> = list
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let present: HashSet<&str> = binary
        .symbols()
        .filter_map(|s| s.name().ok())
        .map(key)
        .collect();
    let found = listed.iter().filter(|k| present.contains(*k)).count();
    // A list written from another build or profile matches about 95% (generic instances and
    // inlining differ); far fewer means the everyday path moved. That costs some speed, not
    // correctness, and is fixed by regenerating the list: a warning, so that a refactor elsewhere is
    // not blocked by it, and a failure only where the list must be current (TOOLHOST_REQUIRE_HOT_CODE,
    // which scripts/hot-code.sh sets to check the list it just wrote).
    if found * 10 < listed.len() * 8 {
        let stale = format!(
            "host/hot-code.txt is stale: only {found} of its {} functions ({} %) are in this build, \
             where a current list matches about 95 % (80 % at least); the everyday path moved. \
             Run scripts/hot-code.sh (about 5 min on 2 cores) and commit host/hot-code.txt.",
            listed.len(),
            found * 100 / listed.len().max(1)
        );
        assert!(
            std::env::var_os("TOOLHOST_REQUIRE_HOT_CODE").is_none_or(|v| v.is_empty() || v == "0"),
            "{stale} (failing because TOOLHOST_REQUIRE_HOT_CODE is set)"
        );
        // Straight to the process's stderr: the test harness would hide eprintln! of a passing test.
        let _ = writeln!(
            std::io::stderr(),
            "WARNING: {stale} Set TOOLHOST_REQUIRE_HOT_CODE=1 to make this fail."
        );
    }
}
