//! Link settings of the `toolhost` binary.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=hot-code.txt");
    println!("cargo:rerun-if-env-changed=TOOLHOST_HOT_CODE");
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
