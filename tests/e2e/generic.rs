//! Generic plugins (issue 19): components without the toolhost contract whose exported functions are
//! tools, in Rust (target/fixtures/generic.wasm), Python and JavaScript (tests/plugins/generic/*, built
//! on demand): derived names and schemas, exact values both ways, typed errors, traps, skipped
//! functions, doc comments, the operator's overrides, and serving beside contract plugins over MCP.

use serde_json::{Value, json};

use crate::daemon::Daemon;
use crate::harness::{Env, root};

mod hostile;
mod languages;
mod roundtrip;

/// Calls need no approval here; the default (approval for tools not known to be read-only) has its
/// own test.
pub(crate) const BYPASS: &str = "[permissions]\nmode = \"bypass\"\n";

pub(crate) fn list(env: &Env) -> Value {
    let out = env.run(&["list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The names of a listing's tools (`list --json` or an MCP `tools/list` result), in its order.
pub(crate) fn names(list: &Value) -> Vec<&str> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

pub(crate) fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {list}"))
}

#[test]
fn exports_become_tools_with_schemas_from_their_types() {
    let env = Env::new(&["generic"], BYPASS);
    let l = list(&env);
    let names: Vec<&str> = names(&l);
    assert_eq!(
        names,
        [
            "counters_add",
            "geometry_area",
            "geometry_bounds",
            "geometry_crash",
            "geometry_reverse",
            "geometry_show",
            "geometry_sum",
            "geometry_summarize",
            "greet",
            "mirror_mirror",
        ]
    );
    let area = tool(&l, "geometry_area");
    // Plain WIT declares no hints: the safe default, a tool that may write.
    assert_eq!(area["hints"]["read_only"], false);
    let shape = &area["input_schema"]["properties"]["shape"];
    assert_eq!(shape["oneOf"].as_array().unwrap().len(), 4, "{shape}");
    assert_eq!(
        shape["oneOf"][0]["properties"]["tag"],
        json!({"const": "circle"})
    );
    assert_eq!(
        area["output_schema"]["properties"]["result"]["anyOf"][0],
        json!({"type": "number"})
    );
    let bounds = &tool(&l, "geometry_bounds")["input_schema"]["properties"];
    assert_eq!(bounds["big"]["maximum"], json!(u64::MAX));
    assert_eq!(bounds["signed"]["minimum"], json!(-128));
    let show = &tool(&l, "geometry_show")["input_schema"];
    assert_eq!(
        show["required"],
        json!(["p", "style"]),
        "an option may be left out"
    );
    assert_eq!(show["properties"]["style"]["uniqueItems"], true);
    let summary = &tool(&l, "geometry_summarize")["output_schema"];
    assert_eq!(summary["required"], json!(["count", "total", "units"]));
    assert_eq!(summary["additionalProperties"], false);
    // The resource and the function returning one are skipped, with reasons, and the plugin serves.
    let status = &l["plugins"]["generic"];
    assert_eq!(status["status"], "loaded");
    assert_eq!(status["generic"], true);
    let skipped = status["skipped"].as_array().unwrap();
    let reason = |export: &str| {
        skipped
            .iter()
            .find(|s| s["export"] == export)
            .unwrap_or_else(|| panic!("{export} not skipped: {skipped:?}"))["reason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(
        reason("toolhost-test:shapes/counters@0.1.0#make").contains("resource"),
        "{skipped:?}"
    );
    assert!(
        reason("toolhost-test:shapes/counters@0.1.0#[method]counter.next").contains("resource")
    );
    let text = env.run(&["list"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("function toolhost-test:shapes/counters@0.1.0#make not served: the result is a resource handle"),
        "{text}"
    );
}

#[test]
fn values_cross_exactly_and_results_come_back_structured() {
    let env = Env::new(&["generic"], BYPASS);
    assert_shared_answers(&env);
    let called = env.call(
        "geometry_area",
        json!({"shape": {"tag": "rectangle", "value": [2.5, 4]}}),
    );
    assert_eq!(called.assert_ok().content(), "10.0");
    let polygon = json!({"shape": {"tag": "polygon", "value": [{"x": 0, "y": 0}, {"x": 4, "y": 0}, {"x": 0, "y": 3}]}});
    assert_eq!(
        env.call("geometry_area", polygon).assert_ok().content(),
        "6.0"
    );
    assert_eq!(
        env.call("geometry_area", json!({"shape": {"tag": "dot"}}))
            .assert_ok()
            .content(),
        "0.0"
    );
    // An option left out; flags by name.
    assert_eq!(
        env.call(
            "geometry_show",
            json!({"p": {"x": 1, "y": 2.5}, "style": ["italic", "bold"]})
        )
        .assert_ok()
        .content(),
        "(1, 2.5) [bold,italic]"
    );
    let summary = env.call(
        "geometry_summarize",
        json!({"values": [1, 2, 3], "label": "abc"}),
    );
    assert_eq!(
        summary.assert_ok().json["structured"],
        json!({"count": 3, "total": 6, "label": "abc", "units": ["mm", "m"]})
    );
    assert_eq!(
        env.call("counters_add", json!({"a": 2, "b": 3}))
            .assert_ok()
            .content(),
        "5"
    );
}

/// What every implementation of the fixture's WIT answers alike, whatever its language.
pub(crate) fn assert_shared_answers(env: &Env) {
    let called = env.call(
        "geometry_area",
        json!({"shape": {"tag": "rectangle", "value": [2.5, 4]}}),
    );
    assert_eq!(
        called.assert_ok().json["structured"],
        json!({"result": 10.0})
    );
    // Every bound, exactly; a char beyond the BMP.
    let bounds = json!({"small": 255, "big": u64::MAX, "signed": -128, "letter": "𝄞"});
    assert_eq!(
        env.call("geometry_bounds", bounds).assert_ok().json["structured"]["result"],
        json!([255, u64::MAX, -128, "𝄞"])
    );
    // 64-bit integers survive (no detour through a float).
    let big = json!({"values": [9_007_199_254_740_993_i64, 1]});
    assert_eq!(
        env.call("geometry_sum", big).assert_ok().content(),
        "9007199254740994"
    );
    // Bytes are base64 both ways.
    assert_eq!(
        env.call("geometry_reverse", json!({"data": "AQID"}))
            .assert_ok()
            .json["structured"],
        json!({"result": "AwIB"})
    );
    assert_eq!(
        env.call("greet", json!({"name": "Ada"}))
            .assert_ok()
            .content(),
        "Hello, Ada!"
    );
}

#[test]
fn wrong_values_are_validation_errors_with_paths() {
    let env = Env::new(&["generic"], BYPASS);
    let bad = [
        (
            "geometry_bounds",
            json!({"small": 256, "big": -1, "signed": 1.5, "letter": "ab"}),
            vec!["/small", "/big", "/signed", "/letter"],
        ),
        (
            "geometry_area",
            json!({"shape": {"tag": "hexagon", "value": 1}}),
            vec!["/shape"],
        ),
        (
            "geometry_show",
            json!({"p": {"x": 1}, "style": ["bold", "bold"], "extra": 1}),
            vec!["/p", "/style", "extra"],
        ),
        (
            "geometry_reverse",
            json!({"data": "not base64!"}),
            vec!["/data"],
        ),
    ];
    for (name, input, paths) in bad {
        let called = env.call(name, input.clone());
        called.assert_error("invalid_input", "Invalid input");
        for p in paths {
            assert!(
                called.content().contains(p),
                "{name} {input}: no problem at {p}: {}",
                called.content()
            );
        }
    }
    // 2^64 is past u64 even though a float rounds it onto u64::MAX.
    let out = env.run(&[
        "call",
        "geometry_bounds",
        "--input",
        r#"{"small": 0, "big": 18446744073709551616, "signed": 0, "letter": "a"}"#,
        "--json",
    ]);
    let called: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(called["error_kind"], "invalid_input", "{called}");
    assert!(
        called["content"].as_str().unwrap().contains("/big"),
        "{called}"
    );
    // No call reached the plugin: every refusal is in the audit log as invalid input.
    let audit = env.audit();
    assert!(audit.iter().all(|r| r["outcome"] != "ok"), "{audit:?}");
}

#[test]
fn an_err_result_is_an_error_result_and_a_trap_is_contained() {
    let env = Env::new(&["generic"], BYPASS);
    env.call(
        "geometry_area",
        json!({"shape": {"tag": "circle", "value": -1}}),
    )
    .assert_error("tool_failed", "negative radius -1");
    env.call("geometry_summarize", json!({"values": []}))
        .assert_error("tool_failed", "empty");
    env.call("geometry_crash", json!({"message": "boom"}))
        .assert_error("trap", "boom");
    // The plugin serves on after its trap: every call has a fresh instance.
    env.call("greet", json!({"name": "again"})).assert_ok();
}

#[test]
fn overrides_and_doc_comments_describe_tools_and_defaults_ask() {
    let config = "[plugins.generic.tools.geometry_sum]\n\
         description = \"Adds integers exactly.\"\n\
         read-only = true\n\
         [plugins.generic.tools.greet]\n\
         title = \"Greeting\"\n\
         permission-subject = \"/name\"\n\
         [plugins.generic.tools.nonesuch]\n\
         read-only = true\n";
    let env = Env::new(&["generic"], config);
    // The build dropped the WIT's doc comments: `toolhost doc` puts them back, in wit-parser's own
    // package-docs format.
    let wit = root().join("tests/plugins/generic/wit");
    let out = env.run(&[
        "doc",
        "plugins/generic.wasm",
        "--wit",
        wit.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let l = list(&env);
    assert_eq!(
        tool(&l, "geometry_area")["description"],
        "The area of a shape; a negative size is an error."
    );
    assert!(
        tool(&l, "mirror_mirror")["description"]
            .as_str()
            .unwrap()
            .contains("carries no description"),
    );
    let sum = tool(&l, "geometry_sum");
    assert_eq!(sum["description"], "Adds integers exactly.");
    assert_eq!(sum["hints"]["read_only"], true);
    let greet = tool(&l, "greet");
    assert_eq!(greet["description"], "Greets someone by name.");
    assert_eq!(greet["title"], "Greeting");
    assert_eq!(greet["permission_subject"], "/name");
    // The default mode runs a read-only tool and asks for the rest (no one to ask here: refused).
    env.call("geometry_sum", json!({"values": [1, 2]}))
        .assert_ok();
    let asked = env.call("greet", json!({"name": "x"}));
    assert!(asked.is_error(), "{}", asked.json);
    assert_eq!(asked.kind(), "denied", "{}", asked.json);
    // A broken override is a config error at start.
    let env = Env::new(
        &["generic"],
        "[plugins.generic.tools.greet]\npermission-subject = \"name\"\n",
    );
    let out = env.run(&["list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("permission-subject"));
}

#[test]
fn inspect_shows_derived_tools_and_skipped_functions() {
    let env = Env::new(&[], "");
    let file = crate::harness::plugin_file("generic");
    let out = env.run(&["inspect", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("a generic component"), "{text}");
    assert!(
        text.contains("tool geometry_area (toolhost-test:shapes/geometry@0.1.0#area)"),
        "{text}"
    );
    assert!(text.contains("\"contentEncoding\": \"base64\""), "{text}");
    assert!(
        text.contains("not a tool: toolhost-test:shapes/counters@0.1.0#make"),
        "{text}"
    );
}

#[test]
fn generic_and_contract_plugins_serve_side_by_side_over_mcp() {
    let env = Env::new(&["generic", "echo"], BYPASS);
    let mut d = Daemon::start(&env, &[]);
    let tools = d.request("tools/list", json!({}))["result"].clone();
    let names: Vec<&str> = names(&tools);
    assert!(
        names.contains(&"echo") && names.contains(&"geometry_area"),
        "{names:?}"
    );
    let area = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "geometry_area")
        .unwrap();
    assert!(area["outputSchema"].is_object(), "{area}");
    let out = d.call("geometry_summarize", json!({"values": [4, 5]}));
    out.assert_ok();
    assert_eq!(out.structured()["total"], 9);
    d.call("echo", json!({"text": "hi"})).assert_ok();
    d.call(
        "geometry_area",
        json!({"shape": {"tag": "circle", "value": -2}}),
    )
    .assert_error("tool_failed", "negative radius");
    d.call(
        "geometry_bounds",
        json!({"small": -1, "big": 0, "signed": 0, "letter": "a"}),
    )
    .assert_error("invalid_input", "/small");
    d.stop();
    // One audit record per call, in the order the client saw them.
    let audit = env.audit();
    let tools: Vec<&str> = audit.iter().map(|r| r["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "geometry_summarize",
            "echo",
            "geometry_area",
            "geometry_bounds"
        ]
    );
}
