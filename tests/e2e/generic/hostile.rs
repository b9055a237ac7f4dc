//! Generic components written to hurt: types nested past the limit, a schema too large to serve,
//! more functions than a plugin may have, names that collide once snake-cased, nothing usable at
//! all. Each is built here from WIT with wit-component's dummy module (every function traps).

use serde_json::json;
use wit_component::dummy_module;
use wit_parser::{ManglingAndAbi, Resolve};

use super::{BYPASS, list, names, tool};
use crate::harness::Env;
use crate::hostile::components::componentize;

/// A component for `world` in the WIT `text`, whose every function traps.
fn component(text: &str, world: &str) -> Vec<u8> {
    let mut resolve = Resolve::default();
    let package = resolve.push_str("hostile.wit", text).unwrap();
    let world = resolve.select_world(&[package], Some(world)).unwrap();
    let core = dummy_module(&resolve, world, ManglingAndAbi::Standard32);
    componentize(core, &resolve, world)
}

fn env_with(name: &str, bytes: &[u8]) -> Env {
    let env = Env::new(&[], BYPASS);
    std::fs::write(env.path().join(format!("plugins/{name}.wasm")), bytes).unwrap();
    env
}

fn skipped_reason(l: &serde_json::Value, plugin: &str, export: &str) -> String {
    l["plugins"][plugin]["skipped"]
        .as_array()
        .unwrap_or_else(|| panic!("{plugin} skipped nothing: {l}"))
        .iter()
        .find(|s| s["export"] == export)
        .unwrap_or_else(|| panic!("{export} is not skipped: {l}"))["reason"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn what_cannot_be_served_is_skipped_and_the_rest_serves() {
    let deep = format!("{}u8{}", "list<".repeat(30), ">".repeat(30));
    let cases: Vec<String> = (0..6000).map(|i| format!("case-number-{i}")).collect();
    let wit = format!(
        "package hostile:deep;\n\
         interface tools {{\n\
           enum huge {{ {} }}\n\
           deep: func(x: {deep});\n\
           wide: func(x: huge);\n\
           fine: func(x: u8) -> u8;\n\
         }}\n\
         world w {{ export tools; }}\n",
        cases.join(", ")
    );
    let env = env_with("deep", &component(&wit, "w"));
    let l = list(&env);
    assert!(
        skipped_reason(&l, "deep", "hostile:deep/tools#deep").contains("more than 24 deep"),
        "{l}"
    );
    let wide = skipped_reason(&l, "deep", "hostile:deep/tools#wide");
    assert!(
        wide.contains("input-schema is") && wide.contains("the limit is 65536"),
        "{wide}"
    );
    tool(&l, "tools_fine");
    // Every function of a dummy module traps: contained, and reported as a trap.
    env.call("tools_fine", json!({"x": 1}))
        .assert_error("trap", "");
}

#[test]
fn past_the_tool_limit_the_rest_are_skipped() {
    let functions: String = (0..300).map(|i| format!("fn-{i}: func();\n")).collect();
    let wit = format!(
        "package hostile:many;\nworld w {{\n{}}}\n",
        functions
            .lines()
            .map(|f| format!("export {f}\n"))
            .collect::<String>()
    );
    let env = env_with("many", &component(&wit, "w"));
    let l = list(&env);
    assert_eq!(l["tools"].as_array().unwrap().len(), 256, "{l}");
    let skipped = l["plugins"]["many"]["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 44);
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("more than 256 functions")
    );
}

#[test]
fn names_that_collide_once_snake_cased_stay_apart() {
    let wit = "package hostile:names;\n\
               interface a-b { c: func(); }\n\
               interface a { b-c: func(); }\n\
               world w { export a-b; export a; export a-b-c: func(); }\n";
    let env = env_with("names", &component(wit, "w"));
    let l = list(&env);
    let mut names: Vec<&str> = names(&l);
    names.sort();
    // The component lists the world's own function first: it keeps the short name; the interfaces'
    // take the package in front, and the second of those a number.
    assert_eq!(
        names,
        ["a_b_c", "hostile_names_a_b_c", "hostile_names_a_b_c_2"],
        "{l}"
    );
}

#[test]
fn a_component_with_nothing_to_serve_is_rejected_with_the_reasons() {
    let wit = "package hostile:none;\n\
               interface handles { resource thing { constructor(); } make: func() -> thing; }\n\
               world w { export handles; }\n";
    let env = env_with("none", &component(wit, "w"));
    let l = list(&env);
    let status = &l["plugins"]["none"];
    assert_eq!(status["status"], "rejected", "{l}");
    let reason = status["reason"].as_str().unwrap();
    assert!(
        reason.contains("nor a function that can be a tool")
            && reason.contains("hostile:none/handles#make (the result is a resource handle"),
        "{reason}"
    );
}
