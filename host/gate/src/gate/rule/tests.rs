//! Rules: parsing, error messages, matching a call's tool and subject, and suggestions.

use super::*;
use serde_json::json;

fn rule(text: &str) -> Rule {
    text.parse()
        .unwrap_or_else(|e| panic!("{text} should parse: {e}"))
}

fn problem(text: &str) -> RuleProblem {
    text.parse::<Rule>()
        .expect_err("rule should be rejected")
        .problem
}

fn matches(rule_text: &str, subject: &str, reach: Reach) -> bool {
    let input = json!({ "s": subject });
    let subject = Subject::of(&input, Some("/s"));
    let tool = rule_text.split('(').next().unwrap_or_default();
    rule(rule_text).matches(tool, &subject, reach)
}

fn allows(rule_text: &str, subject: &str) -> bool {
    matches(rule_text, subject, Reach::Narrow)
}

fn denies(rule_text: &str, subject: &str) -> bool {
    matches(rule_text, subject, Reach::Wide)
}

#[test]
fn dot_slash_is_optional_on_both_sides() {
    assert!(allows("write_file(./src/**)", "src/x.rs"));
    assert!(allows("write_file(./src/**)", "./src/x.rs"));
    assert!(allows("write_file(src/**)", "./src/a/b.rs"));
    assert!(allows("write_file(./src/**)", "src/./a//b.rs"));
}

#[test]
fn traversal_does_not_slip_past_allow_rules() {
    assert!(!allows("write_file(./src/**)", "src/../../etc/passwd"));
    assert!(!allows("write_file(./src/**)", "src/../secret"));
    assert!(!allows("write_file(./src/**)", "../src/x.rs"));
    assert!(!allows("write_file(**)", "../etc/passwd"));
    assert!(!allows("write_file(**)", "a/../../etc/passwd"));
    assert!(!allows("write_file(**)", "/etc/passwd"));
    assert!(!allows("write_file(**)", "~/.ssh/id_rsa"));
    assert!(!allows("write_file(~/**)", "~/../other/.ssh/id_rsa"));
    assert!(allows("write_file(**)", "src/a/../b.rs"));
}

#[test]
fn patterns_that_climb_match_only_that_far() {
    assert!(allows("read_file(../shared/**)", "../shared/x"));
    assert!(allows("read_file(../shared/**)", "src/../../shared/x"));
    assert!(!allows("read_file(../shared/**)", "../../shared/x"));
    assert!(allows("read_file(../**)", "../x"));
    assert!(!allows("read_file(../**)", "x"));
}

#[test]
fn absolute_and_home_patterns_need_the_same_anchor() {
    assert!(allows("read_file(/etc/*.conf)", "/etc/app.conf"));
    assert!(allows("read_file(/etc/*.conf)", "/tmp/../etc/app.conf"));
    assert!(!allows("read_file(/etc/*.conf)", "etc/app.conf"));
    assert!(allows("read_file(~/notes/**)", "~/notes/a.md"));
    assert!(!allows("read_file(~/notes/**)", "/home/u/notes/a.md"));
}

#[test]
fn single_star_stays_within_a_segment_in_path_patterns() {
    assert!(allows("read_file(src/*.rs)", "src/main.rs"));
    assert!(!allows("read_file(src/*.rs)", "src/gate/rule.rs"));
    assert!(allows("read_file(src/**/*.rs)", "src/gate/rule.rs"));
    assert!(!allows("read_file(./src/*)", "src/../../etc/passwd"));
}

#[test]
fn deny_rules_reach_wide() {
    assert!(denies("read_file(**/.env)", "/home/u/.env"));
    assert!(denies("read_file(**/.env)", "../.env"));
    assert!(denies("read_file(**/.env)", "a/b/../.env"));
    assert!(denies("write_file(./secrets/**)", "src/../secrets/key"));
    assert!(denies("write_file(./secrets/**)", "./secrets//key"));
    assert!(denies("write_file(~/**)", "~/../other"));
    assert!(!denies("write_file(./secrets/**)", "secretsx/key"));
}

#[test]
fn plain_patterns_match_the_subject_as_given() {
    assert!(allows("shell(git commit*)", "git commit -m 'x'"));
    assert!(allows("shell(git commit*)", "git commit"));
    assert!(!allows("shell(git commit*)", "git push"));
    assert!(!allows("shell(git commit*)", " git commit"));
    assert!(allows("shell(git commit*)", "git commit -m x\nrm -rf /"));
    assert!(allows(
        "fetch(https://example.com/*)",
        "https://example.com/a/b"
    ));
    assert!(allows("shell(rm -rf /*)", "rm -rf /home/u"));
    assert!(allows("shell(npm run *)", "npm run a/../../x"));
}

#[test]
fn bare_words_are_paths_too() {
    assert!(allows("write_file(*.md)", "notes.md"));
    assert!(!allows("write_file(*.md)", "../../etc/x.md"));
    assert!(!allows("write_file(*.md)", "/etc/x.md"));
    assert!(allows("shell(ls)", "ls"));
    assert!(!allows("shell(ls)", "ls -la"));
    assert!(allows("shell(make*)", "make -j4"));
    assert!(denies("read_file(.env)", "./.env"));
    assert!(denies("read_file(.env)", "x/../.env"));
}

#[test]
fn tool_names_may_use_a_wildcard() {
    let input = json!({});
    let none = Subject::of(&input, None);
    let fs = rule("fs_*");
    assert!(fs.matches("fs_read", &none, Reach::Narrow));
    assert!(!fs.matches("net_fetch", &none, Reach::Narrow));
    assert!(rule("*").matches("anything", &none, Reach::Narrow));
    assert!(!rule("read_file").matches("read_files", &none, Reach::Narrow));
}

#[test]
fn unjudgeable_subjects_fail_closed() {
    let r = rule("write_file(**)");
    let input = json!({ "path": "a.txt", "n": 7, "flag": true, "obj": {}, "nil": null,
        "empty": [], "nested": ["a", ["b"]] });
    for pointer in [
        None,
        Some("/missing"),
        Some("/obj"),
        Some("/nil"),
        Some("/empty"),
        Some("/nested"),
    ] {
        let subject = Subject::of(&input, pointer);
        assert!(
            r.matches("write_file", &subject, Reach::Wide),
            "{pointer:?}"
        );
        assert!(
            !r.matches("write_file", &subject, Reach::Narrow),
            "{pointer:?}"
        );
    }
    assert!(r.matches(
        "write_file",
        &Subject::of(&input, Some("/path")),
        Reach::Narrow
    ));
    let n = Subject::of(&input, Some("/n"));
    assert!(rule("set(7)").matches("set", &n, Reach::Narrow));
    let flag = Subject::of(&input, Some("/flag"));
    assert!(rule("set(true)").matches("set", &flag, Reach::Narrow));
    assert!(rule("write_file").matches("write_file", &Subject::of(&input, None), Reach::Narrow));
}

#[test]
fn every_element_of_an_array_subject_is_judged() {
    let input = json!({ "paths": ["src/a.rs", "secrets/key"] });
    let subject = Subject::of(&input, Some("/paths"));
    assert!(rule("read_file(./secrets/**)").matches("read_file", &subject, Reach::Wide));
    assert!(!rule("read_file(./src/**)").matches("read_file", &subject, Reach::Narrow));
    let input = json!({ "paths": ["src/a.rs", "src/b.rs"] });
    let subject = Subject::of(&input, Some("/paths"));
    assert!(rule("read_file(./src/**)").matches("read_file", &subject, Reach::Narrow));
    assert!(!rule("read_file(./secrets/**)").matches("read_file", &subject, Reach::Wide));
}

#[test]
fn absolute_and_home_spellings_reach_relative_deny_rules() {
    // In the guest, `/x` and `x` are the same file: `/` is the granted directory.
    assert!(denies("write_file(./secrets/**)", "/secrets/key"));
    assert!(denies("write_file(/secrets/**)", "secrets/key"));
    assert!(denies("write_file(~/.ssh/**)", "~/.ssh/id"));
    assert!(!denies("write_file(./secrets/**)", "/other/key"));
}

#[test]
fn empty_pattern_matches_only_the_empty_subject() {
    assert!(allows("shell()", ""));
    assert!(!allows("shell()", "ls"));
}

#[test]
fn reports_precise_parse_errors() {
    assert_eq!(problem("write_file(./src/**"), RuleProblem::MissingParen);
    assert_eq!(problem("write_file(a)b"), RuleProblem::MissingParen);
    assert_eq!(problem("write_file)"), RuleProblem::UnopenedParen);
    assert_eq!(problem(""), RuleProblem::EmptyTool);
    assert_eq!(problem("(./x)"), RuleProblem::EmptyTool);
    assert_eq!(problem("write file"), RuleProblem::ToolChar(' '));
    assert_eq!(problem("write_file (x)"), RuleProblem::ToolChar(' '));
    assert_eq!(problem("src/../x"), RuleProblem::ToolChar('/'));
    assert_eq!(problem("read_file(src/../x)"), RuleProblem::InnerParent);
    assert_eq!(problem("read_file(/../x)"), RuleProblem::InnerParent);
    assert!(matches!(
        problem("read_file(src/[a)"),
        RuleProblem::Glob { .. }
    ));
    assert!(matches!(
        problem("shell(echo {a)"),
        RuleProblem::Glob { .. }
    ));
}

#[test]
fn error_messages_quote_the_rule() {
    let err = "write_file(./src/**".parse::<Rule>().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"invalid rule "write_file(./src/**": missing ')'"#
    );
    let err = "read_file(src/[a)".parse::<Rule>().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"invalid rule "read_file(src/[a)": bad glob "src/[a": unclosed character class; missing ']'"#
    );
    let placed = RuleError {
        list: Some(RuleKind::Deny),
        scope: Some(Scope::Plugin),
        ..err
    };
    assert!(
        placed
            .to_string()
            .starts_with(r#"invalid deny rule "read_file(src/[a)" (plugin policy): "#)
    );
}

#[test]
fn parentheses_inside_the_pattern_are_literal() {
    assert!(allows("shell(echo (hi))", "echo (hi)"));
    assert_eq!(rule("shell(echo (hi))").as_str(), "shell(echo (hi))");
}

#[test]
fn suggestions_parse_and_allow_exactly_the_call() {
    let subjects = [
        "notes/todo.md",
        "./notes/todo.md",
        "src/../notes/x.md",
        "../up/x",
        "/etc/hosts",
        "~/notes",
        "~",
        "",
        ".",
        "git commit -m \"wip\" *",
        "a[1]{2}?*\\",
        "echo (x)",
        "docs/My File.md",
        "https://example.com/a?b=*",
        "ls",
        "./~",
        "./My File.md",
    ];
    for raw in subjects {
        let input = json!({ "s": raw });
        let subject = Subject::of(&input, Some("/s"));
        let text = suggest("tool", &subject);
        let parsed = rule(&text);
        assert!(
            parsed.matches("tool", &subject, Reach::Narrow),
            "{text} should allow {raw:?}"
        );
        let other = json!({ "s": format!("{raw}x") });
        let other = Subject::of(&other, Some("/s"));
        assert!(
            !parsed.matches("tool", &other, Reach::Narrow),
            "{text} is too broad"
        );
    }
    let input = json!({ "s": "notes/todo.md" });
    assert_eq!(
        suggest("write_file", &Subject::of(&input, Some("/s"))),
        "write_file(./notes/todo.md)"
    );
    assert_eq!(
        suggest("write_file", &Subject::of(&input, None)),
        "write_file"
    );
    let input = json!({ "s": "git commit -m x" });
    assert_eq!(
        suggest("shell", &Subject::of(&input, Some("/s"))),
        "shell(git commit -m x)"
    );
    let input = json!({ "s": "ls" });
    assert_eq!(
        suggest("shell", &Subject::of(&input, Some("/s"))),
        "shell(ls)"
    );
}
