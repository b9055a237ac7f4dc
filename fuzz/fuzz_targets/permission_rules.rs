//! The permission rule parser and matcher: arbitrary rule texts, modes, tools and subjects. Nothing
//! may panic, a parsed rule prints as written, and three promises of the docs hold whatever the
//! input: a bare `deny` rule for a tool denies it; plan mode never allows a tool that is not
//! read-only; an allow rule `./**` never lets a path climb out of the working directory or become
//! absolute, and a deny rule `**/.env` catches every path whose last segment is `.env`.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use toolhost_gate::gate::{Decision, Mode, PermissionConfig, Permissions, Rule};
use toolhost_call::tool::{Hints, ToolSpec};

#[derive(Arbitrary, Debug)]
struct Input {
    deny: Vec<String>,
    ask: Vec<String>,
    allow: Vec<String>,
    plugin_allow: Vec<String>,
    plugin_deny: Vec<String>,
    mode: u8,
    plugin_mode: Option<u8>,
    tool: String,
    read_only: bool,
    destructive: bool,
    open_world: bool,
    subject: String,
    numeric: Option<i64>,
}

fn mode(m: u8) -> Mode {
    [Mode::Plan, Mode::Default, Mode::AcceptEdits, Mode::Bypass][usize::from(m) % 4]
}

fn spec(name: &str, hints: Hints) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: None,
        description: "fuzz".into(),
        input_schema: json!({ "type": "object" }),
        output_schema: None,
        hints,
        permission_subject: Some("/path".into()),
    }
}

/// How a path subject normalises, lexically: (anchored at `/` or `~`, climbs above its anchor,
/// last segment).
fn normalise(path: &str) -> (bool, bool, Option<String>) {
    let anchored = path.starts_with('/') || path == "~" || path.starts_with("~/");
    let mut depth: i64 = 0;
    let mut climbed = false;
    let mut segments: Vec<&str> = Vec::new();
    let body = path
        .strip_prefix('~')
        .filter(|_| path.starts_with("~/") || path == "~")
        .unwrap_or(path);
    for seg in body.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    depth -= 1;
                    if depth < 0 && !body.starts_with('/') {
                        climbed = true;
                    }
                }
            }
            s => segments.push(s),
        }
    }
    (anchored, climbed, segments.last().map(|s| s.to_string()))
}

/// The tool and the two fixed policies the path promises are checked with, compiled once.
fn fixed() -> &'static (ToolSpec, Permissions, Permissions) {
    static FIXED: OnceLock<(ToolSpec, Permissions, Permissions)> = OnceLock::new();
    FIXED.get_or_init(|| {
        let allow = PermissionConfig {
            mode: Some(Mode::Default),
            allow: vec!["write_file(./**)".into()],
            ..PermissionConfig::default()
        };
        let deny = PermissionConfig {
            mode: Some(Mode::Bypass),
            deny: vec!["write_file(**/.env)".into()],
            ..PermissionConfig::default()
        };
        (
            spec("write_file", Hints::default()),
            Permissions::new(&allow, None).unwrap(),
            Permissions::new(&deny, None).unwrap(),
        )
    })
}

fuzz_target!(|input: Input| {
    for text in input.deny.iter().chain(&input.ask).chain(&input.allow) {
        if let Ok(rule) = text.parse::<Rule>() {
            assert_eq!(rule.to_string(), *text);
            assert!(rule.as_str().parse::<Rule>().is_ok());
        }
    }
    let hints = Hints {
        read_only: input.read_only,
        destructive: input.destructive,
        idempotent: false,
        open_world: input.open_world,
    };
    let subject = match input.numeric {
        Some(n) => json!({ "path": n }),
        None => json!({ "path": input.subject }),
    };
    let global = PermissionConfig {
        mode: Some(mode(input.mode)),
        allow: input.allow.clone(),
        ask: input.ask.clone(),
        deny: input.deny.clone(),
    };
    let plugin = PermissionConfig {
        mode: input.plugin_mode.map(mode),
        allow: input.plugin_allow.clone(),
        ask: Vec::new(),
        deny: input.plugin_deny.clone(),
    };
    if let Ok(p) = Permissions::new(&global, Some(&plugin)) {
        let decision = p.decide(&spec(&input.tool, hints), &subject);
        let _ = (
            decision.reason(),
            decision.rule(),
            decision.unapproved_message(),
        );
        if input
            .deny
            .iter()
            .any(|d| *d == input.tool && d.parse::<Rule>().is_ok())
        {
            assert!(
                matches!(decision, Decision::Deny { .. }),
                "bare deny {} did not deny: {decision:?}",
                input.tool
            );
        }
        let read_only = hints.read_only && !hints.destructive;
        if p.mode() == Mode::Plan && !read_only {
            assert!(
                !matches!(decision, Decision::Allow { .. }),
                "plan mode allowed {}",
                input.tool
            );
        }
    }

    // The documented path promises, with a fixed policy and the fuzzed subject.
    if input.numeric.is_some() {
        return;
    }
    let (anchored, climbed, last) = normalise(&input.subject);
    let (writer, allow, deny) = fixed();
    let decision = allow.decide(writer, &subject);
    if anchored || climbed {
        assert!(
            !matches!(decision, Decision::Allow { .. }),
            "`./**` allowed {:?}, which leaves the working directory",
            input.subject
        );
    }
    let decision = deny.decide(writer, &subject);
    if last.as_deref() == Some(".env") {
        assert!(
            matches!(decision, Decision::Deny { .. }),
            "`**/.env` missed {:?}",
            input.subject
        );
    }
});
