//! The gate's decisions: modes against kinds of tools, rule precedence across the global and plugin
//! policies, paths through links and traversal, and the messages of refusals.

use toolhost_call::tool::Hints;

use super::*;
use serde_json::json;

fn tool(name: &str, hints: Hints) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        title: None,
        description: String::new(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        hints,
        permission_subject: Some("/path".to_owned()),
    }
}

fn read_only() -> ToolSpec {
    let hints = Hints {
        read_only: true,
        ..Hints::default()
    };
    tool("read_file", hints)
}

fn plain_write() -> ToolSpec {
    tool("write_file", Hints::default())
}

fn destructive() -> ToolSpec {
    let hints = Hints {
        destructive: true,
        ..Hints::default()
    };
    tool("delete_file", hints)
}

fn open_world() -> ToolSpec {
    let hints = Hints {
        open_world: true,
        ..Hints::default()
    };
    tool("post_url", hints)
}

fn config(mode: Option<Mode>, allow: &[&str], ask: &[&str], deny: &[&str]) -> PermissionConfig {
    let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
    PermissionConfig {
        mode,
        allow: own(allow),
        ask: own(ask),
        deny: own(deny),
    }
}

fn with_mode(mode: Mode) -> Permissions {
    Permissions::new(&config(Some(mode), &[], &[], &[]), None).unwrap()
}

fn input(path: &str) -> Value {
    json!({ "path": path })
}

/// "allow", "ask" or "deny".
fn verdict(p: &Permissions, t: &ToolSpec, path: &str) -> &'static str {
    match p.decide(t, &input(path)) {
        Decision::Allow { .. } => "allow",
        Decision::Ask { .. } => "ask",
        Decision::Deny { .. } => "deny",
    }
}

#[test]
fn each_mode_treats_each_kind_of_tool_as_documented() {
    let expected = [
        (Mode::Plan, ["allow", "deny", "deny", "deny"]),
        (Mode::Default, ["allow", "ask", "ask", "ask"]),
        (Mode::AcceptEdits, ["allow", "allow", "ask", "ask"]),
        (Mode::Bypass, ["allow", "allow", "allow", "allow"]),
    ];
    let tools = [read_only(), plain_write(), destructive(), open_world()];
    for (mode, verdicts) in expected {
        let p = with_mode(mode);
        for (t, want) in tools.iter().zip(verdicts) {
            assert_eq!(verdict(&p, t, "a.txt"), want, "{mode} / {}", t.name);
        }
    }
}

#[test]
fn default_mode_applies_without_any_config() {
    let p = Permissions::new(&PermissionConfig::default(), None).unwrap();
    assert_eq!(p.mode(), Mode::Default);
    assert_eq!(verdict(&p, &plain_write(), "a.txt"), "ask");
    assert_eq!(verdict(&Permissions::default(), &read_only(), "a"), "allow");
}

#[test]
fn read_only_and_destructive_together_count_as_not_read_only() {
    let hints = Hints {
        read_only: true,
        destructive: true,
        ..Hints::default()
    };
    let t = tool("odd", hints);
    assert_eq!(verdict(&with_mode(Mode::Plan), &t, "a"), "deny");
    assert_eq!(verdict(&with_mode(Mode::Default), &t, "a"), "ask");
}

#[test]
fn deny_beats_allow_at_both_levels() {
    let global = config(None, &["write_file"], &[], &["write_file(./secrets/**)"]);
    let plugin = config(Some(Mode::Bypass), &["write_file(**)"], &[], &[]);
    let p = Permissions::new(&global, Some(&plugin)).unwrap();
    assert_eq!(verdict(&p, &plain_write(), "secrets/key"), "deny");
    assert_eq!(verdict(&p, &plain_write(), "src/../secrets/key"), "deny");
    assert_eq!(verdict(&p, &plain_write(), "notes.md"), "allow");

    let global = config(Some(Mode::Bypass), &["write_file"], &[], &[]);
    let plugin = config(None, &[], &[], &["write_file(./secrets/**)"]);
    let p = Permissions::new(&global, Some(&plugin)).unwrap();
    let decision = p.decide(&plain_write(), &input("./secrets/key"));
    assert_eq!(
        decision.reason(),
        "denied by rule `deny: write_file(./secrets/**)` in the plugin policy"
    );
    assert_eq!(decision.rule().map(|r| r.scope), Some(Scope::Plugin));
}

#[test]
fn ask_beats_allow_across_levels() {
    let global = config(None, &[], &["write_file(./src/**)"], &[]);
    let plugin = config(None, &["write_file"], &[], &[]);
    let p = Permissions::new(&global, Some(&plugin)).unwrap();
    assert_eq!(verdict(&p, &plain_write(), "src/main.rs"), "ask");
    assert_eq!(verdict(&p, &plain_write(), "docs/x.md"), "allow");
}

#[test]
fn ask_rules_apply_even_in_bypass_mode() {
    let p = Permissions::new(
        &config(Some(Mode::Bypass), &[], &["delete_file"], &[]),
        None,
    )
    .unwrap();
    assert_eq!(verdict(&p, &destructive(), "a"), "ask");
}

#[test]
fn allow_rules_do_not_lift_plan_mode() {
    let p = Permissions::new(&config(Some(Mode::Plan), &["write_file"], &[], &[]), None).unwrap();
    let decision = p.decide(&plain_write(), &input("a.txt"));
    assert_eq!(
        decision.reason(),
        "plan mode allows read-only tools only; `write_file` is not read-only"
    );
    assert_eq!(verdict(&p, &read_only(), "a.txt"), "allow");
}

#[test]
fn plugin_mode_overrides_global_mode() {
    let global = config(Some(Mode::Plan), &[], &[], &[]);
    let plugin = config(Some(Mode::Bypass), &[], &[], &[]);
    assert_eq!(
        Permissions::new(&global, Some(&plugin)).unwrap().mode(),
        Mode::Bypass
    );
    let plugin = config(None, &["read_file"], &[], &[]);
    assert_eq!(
        Permissions::new(&global, Some(&plugin)).unwrap().mode(),
        Mode::Plan
    );
    assert_eq!(
        with_mode(Mode::Plan).with_mode(Mode::Default).mode(),
        Mode::Default
    );
}

#[test]
fn allow_rules_do_not_follow_traversal_out_of_their_directory() {
    let p = Permissions::new(&config(None, &["write_file(./src/**)"], &[], &[]), None).unwrap();
    assert_eq!(verdict(&p, &plain_write(), "src/x.rs"), "allow");
    assert_eq!(verdict(&p, &plain_write(), "./src/x.rs"), "allow");
    assert_eq!(verdict(&p, &plain_write(), "src/../../etc/passwd"), "ask");
    assert_eq!(verdict(&p, &plain_write(), "src/../secret"), "ask");
    assert_eq!(verdict(&p, &plain_write(), "/src/x.rs"), "ask");
}

#[test]
fn shell_prefix_rules_match_commands() {
    let shell = ToolSpec {
        permission_subject: Some("/command".to_owned()),
        ..tool("shell", Hints::default())
    };
    let p = Permissions::new(
        &config(None, &["shell(git commit*)"], &[], &["shell(git push*)"]),
        None,
    )
    .unwrap();
    let decide = |cmd: &str| p.decide(&shell, &json!({ "command": cmd }));
    assert!(matches!(
        decide("git commit -m wip"),
        Decision::Allow { .. }
    ));
    assert!(matches!(decide("git push --force"), Decision::Deny { .. }));
    let Decision::Ask { suggestion, .. } = decide("git status") else {
        panic!("git status should need approval");
    };
    assert_eq!(suggestion, "shell(git status)");
}

#[test]
fn pattern_rules_fail_closed_without_a_subject() {
    let p = Permissions::new(
        &config(None, &["write_file(**)"], &[], &["write_file(*)"]),
        None,
    )
    .unwrap();
    let t = plain_write();
    for input in [
        json!({}),
        json!({ "path": null }),
        json!({ "path": {"a": 1} }),
        json!({ "path": [] }),
    ] {
        let decision = p.decide(&t, &input);
        assert!(matches!(decision, Decision::Deny { .. }), "{input}");
    }
    let no_subject = ToolSpec {
        permission_subject: None,
        ..plain_write()
    };
    let decision = p.decide(&no_subject, &input("a"));
    assert_eq!(
        decision.reason(),
        "denied by rule `deny: write_file(*)` in the global policy \
         (the tool declares no permission subject, so the rule applies)"
    );
    let wildcard = Permissions::new(&config(None, &[], &[], &["*(./secrets/**)"]), None).unwrap();
    assert!(matches!(
        wildcard.decide(&no_subject, &input("a")),
        Decision::Ask { .. }
    ));
    assert!(matches!(
        wildcard.decide(&t, &json!({})),
        Decision::Deny { .. }
    ));
    let asks = Permissions::new(
        &config(None, &["write_file(**)"], &["write_file(./src/**)"], &[]),
        None,
    )
    .unwrap();
    assert!(matches!(asks.decide(&t, &json!({})), Decision::Ask { .. }));
}

fn tree() -> (tempfile::TempDir, Mounts) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::os::unix::fs::symlink("secrets", root.join("alias")).unwrap();
    std::os::unix::fs::symlink("src/deep", root.join("link")).unwrap();
    std::os::unix::fs::symlink("../..", root.join("src/up")).unwrap();
    let mounts = Mounts::new([(".", root)]);
    (dir, mounts)
}

#[test]
fn deny_rules_hold_against_every_spelling_of_the_path() {
    let (_dir, mounts) = tree();
    let p = Permissions::new(
        &config(Some(Mode::Bypass), &[], &[], &["write_file(./secrets/**)"]),
        None,
    )
    .unwrap()
    .with_files(mounts, Vec::new());
    for spelling in [
        "secrets/key",
        "/secrets/key",
        "./secrets//key",
        "src/../secrets/key",
        "alias/key",
        "link/../../secrets/key",
    ] {
        assert_eq!(verdict(&p, &plain_write(), spelling), "deny", "{spelling}");
    }
    for spelling in ["src/x", "/src/x", "~/secrets/key", "secretsx"] {
        assert_eq!(verdict(&p, &plain_write(), spelling), "allow", "{spelling}");
    }
    let decision = p.decide(&plain_write(), &input("src/up/etc/passwd"));
    assert_eq!(
        decision.reason(),
        "the path `src/up/etc/passwd` cannot be checked against the path rules: \
         a symbolic link in it leads out of the granted directory"
    );
    assert_eq!(verdict(&p, &plain_write(), "../x"), "deny");
}

#[test]
fn a_rule_on_a_folders_contents_covers_the_folder_itself() {
    let (_dir, mounts) = tree();
    let p = Permissions::new(
        &config(
            Some(Mode::Bypass),
            &[],
            &["write_file(./notes/**)"],
            &["write_file(./secrets/**)"],
        ),
        None,
    )
    .unwrap()
    .with_files(mounts, Vec::new());
    // Renaming or removing the folder would carry every file in it past the rule.
    for spelling in [
        "secrets",
        "./secrets/",
        "/secrets",
        "alias",
        "src/../secrets",
    ] {
        assert_eq!(verdict(&p, &plain_write(), spelling), "deny", "{spelling}");
    }
    assert_eq!(verdict(&p, &plain_write(), "notes"), "ask");
    for spelling in ["secretsx", "src", "."] {
        assert_eq!(verdict(&p, &plain_write(), spelling), "allow", "{spelling}");
    }
}

#[test]
fn the_sandbox_guard_closes_ask_areas_until_a_call_is_approved_there() {
    let (dir, mounts) = tree();
    let p = Permissions::new(
        &config(Some(Mode::Bypass), &[], &["write_file(./secrets/**)"], &[]),
        None,
    )
    .unwrap()
    .with_files(mounts, Vec::new());
    let guard = p.path_guard("write_file");
    assert!(guard.check_guest("secrets/key").is_err());
    assert!(guard.check_guest("src/x").is_ok());
    // Approved for `alias/key`: open where it leads, nowhere else in the area.
    let approved = p.approved_guard(&plain_write(), &input("alias/key"));
    assert!(approved.check_guest("secrets/key").is_ok());
    assert!(approved.check_guest("secrets/other").is_err());
    assert!(p.path_guard("read_file").is_open());
    drop(dir);
}

#[test]
fn allow_rules_follow_links_to_where_they_lead() {
    let (_dir, mounts) = tree();
    let p = Permissions::new(&config(None, &["write_file(./src/**)"], &[], &[]), None)
        .unwrap()
        .with_files(mounts, Vec::new());
    assert_eq!(verdict(&p, &plain_write(), "src/deep/x"), "allow");
    assert_eq!(verdict(&p, &plain_write(), "link/x"), "ask");
    std::fs::create_dir_all(_dir.path().join("src/deep")).unwrap();
    std::os::unix::fs::symlink("../secrets", _dir.path().join("src/to_secrets")).unwrap();
    assert_eq!(verdict(&p, &plain_write(), "src/to_secrets/key"), "ask");
}

#[test]
fn path_guard_carries_the_tools_deny_rules() {
    let (dir, mounts) = tree();
    let p = Permissions::new(
        &config(
            None,
            &[],
            &[],
            &[
                "write_file(./secrets/**)",
                "read_file(**/.env)",
                "shell(git push*)",
            ],
        ),
        None,
    )
    .unwrap()
    .with_files(mounts, Denial::exclude("", "src/deep").unwrap());
    let root = dir.path().canonicalize().unwrap();
    let guard = p.path_guard("write_file");
    assert!(guard.check_at(&root, "alias/key").is_err());
    assert!(guard.check_at(&root, "src/deep/x").is_err());
    assert!(guard.check_at(&root, "src/x").is_ok());
    let reader = p.path_guard("read_file");
    assert!(reader.check_at(&root, "alias/key").is_ok());
    assert!(reader.check_at(&root, "src/.env").is_err());
    assert!(
        !p.path_guard("shell").is_open(),
        "excludes apply to every tool"
    );
}

#[test]
fn tool_wildcards_match_several_tools() {
    let p = Permissions::new(&config(None, &[], &[], &["*_file"]), None).unwrap();
    assert_eq!(verdict(&p, &read_only(), "a"), "deny");
    assert_eq!(verdict(&p, &open_world(), "a"), "ask");
}

#[test]
fn unapproved_message_suggests_the_exact_rule() {
    let decision = Permissions::default().decide(&plain_write(), &input("notes/todo.md"));
    let Decision::Ask { suggestion, .. } = &decision else {
        panic!("should ask");
    };
    assert_eq!(suggestion, "write_file(./notes/todo.md)");
    assert_eq!(
        decision.unapproved_message().unwrap(),
        "`write_file` needs approval (`write_file` is not read-only and the mode is `default`) \
         and no approver is available; add `allow = [\"write_file(./notes/todo.md)\"]` to the \
         policy to allow it"
    );
    let asked = Permissions::new(&config(None, &[], &["write_file"], &[]), None).unwrap();
    let message = asked
        .decide(&plain_write(), &input("a"))
        .unapproved_message()
        .unwrap();
    assert!(
        message.contains("remove `write_file` from `ask` in the global policy"),
        "{message}"
    );
    assert_eq!(
        with_mode(Mode::Bypass)
            .decide(&plain_write(), &input("a"))
            .unapproved_message(),
        None
    );
}

#[test]
fn unapproved_message_quotes_awkward_subjects_for_toml() {
    let decision = Permissions::default().decide(&plain_write(), &input("a \"b\"\n"));
    let message = decision.unapproved_message().unwrap();
    assert!(
        message.contains(r#"allow = ["write_file(a \"b\"\n)"]"#),
        "{message}"
    );
}

#[test]
fn rule_errors_name_the_list_and_policy() {
    let plugin = config(None, &[], &[], &["write_file(./src/**"]);
    let err = Permissions::new(&PermissionConfig::default(), Some(&plugin)).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"invalid deny rule "write_file(./src/**" (plugin policy): missing ')'"#
    );
}

#[test]
fn modes_parse_from_strings_and_toml() {
    for mode in Mode::ALL {
        assert_eq!(mode.as_str().parse::<Mode>(), Ok(mode));
    }
    let err = "yolo".parse::<Mode>().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"unknown permission mode "yolo"; expected one of: plan, default, accept-edits, bypass"#
    );
    let config: PermissionConfig = serde_json::from_value(json!({
        "mode": "accept-edits",
        "allow": ["read_file"],
    }))
    .unwrap();
    assert_eq!(config.mode, Some(Mode::AcceptEdits));
    assert!(config.deny.is_empty());
    let typo = serde_json::from_value::<PermissionConfig>(json!({ "alow": ["x"] }));
    assert!(typo.is_err());
}
