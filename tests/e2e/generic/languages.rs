//! The fixture's WIT implemented in Python and JavaScript (tests/plugins/generic/LANG), built with
//! each language's own toolchain, answers as the Rust one does.

use std::path::PathBuf;
use std::process::Command;

use serde_json::json;

use super::{BYPASS, list};
use crate::harness::{Env, root};
use crate::languages::{heavy, toolchain_env, toolchain_ready};

/// The same WIT implemented in another language: built from tests/plugins/generic/LANG, then the
/// same calls as the Rust fixture answers.
fn other_language(lang: &str) {
    if !toolchain_ready(lang, &format!("the {lang} generic fixture")) {
        return;
    }
    let file = format!("generic_{lang}");
    let out_dir = root().join("target/fixtures");
    let built: PathBuf = out_dir.join(format!("{file}.wasm"));
    {
        let _heavy = heavy();
        let out = toolchain_env(&mut Command::new(
            root()
                .join("tests/plugins/generic")
                .join(lang)
                .join("build.sh"),
        ))
        .arg(&out_dir)
        .output()
        .unwrap();
        assert!(
            out.status.success(),
            "building the {lang} generic fixture failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let cache = root().join("target/e2e-cache");
    let env = Env::new(
        &[],
        &format!("{BYPASS}[cache]\ndir = '{}'\n", cache.display()),
    );
    std::fs::copy(&built, env.path().join("plugins/shapes.wasm")).unwrap();
    // The toolchain dropped the WIT's doc comments; `toolhost doc` puts them back.
    let wit = root().join("tests/plugins/generic/wit");
    let out = env.run(&["doc", "plugins/shapes.wasm", "--wit", wit.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    {
        let _heavy = heavy();
        let l = list(&env);
        assert_eq!(l["plugins"]["shapes"]["generic"], true, "{l}");
        assert_eq!(
            super::tool(&l, "geometry_area")["description"],
            "The area of a shape; a negative size is an error."
        );
    }
    super::assert_shared_answers(&env);
    env.call(
        "geometry_area",
        json!({"shape": {"tag": "circle", "value": -1}}),
    )
    .assert_error("tool_failed", "negative radius");
    assert_eq!(
        env.call(
            "geometry_show",
            json!({"p": {"x": 1, "y": 2.5}, "unit": "cm", "style": ["bold"]})
        )
        .assert_ok()
        .content(),
        "(1, 2.5) cm [bold]"
    );
    let summary = env.call("geometry_summarize", json!({"values": [1, 2, 3]}));
    assert_eq!(
        summary.assert_ok().json["structured"],
        json!({"count": 3, "total": 6, "label": null, "units": ["mm", "m"]})
    );
    env.call("geometry_summarize", json!({"values": []}))
        .assert_error("tool_failed", "empty");
    env.call("geometry_crash", json!({"message": "boom"}))
        .assert_error("trap", "");
}

#[test]
fn a_python_component_serves_its_exports() {
    other_language("python");
}

#[test]
fn a_javascript_component_serves_its_exports() {
    other_language("js");
}
