//! Each filter condition, and the parameters' messages, over logs written by the real line writer.

use std::io::Write;

use super::tests::{all_pages, append, log, newest_first, record};
use super::*;
use crate::audit::record::Outcome;
use crate::audit::testdir::TestDir;

/// Which of `record(0..n)` a filter keeps.
type Keep = fn(usize) -> bool;

#[test]
fn filters_by_each_condition() {
    let dir = TestDir::new();
    let path = log(&dir, 100);
    let base = record(0).ts_start;
    let cases: [(Params, Keep); 9] = [
        (
            Params {
                tool: Some("grep".into()),
                ..Params::default()
            },
            |i| i % 4 == 2,
        ),
        (
            Params {
                outcome: Some("ok".into()),
                ..Params::default()
            },
            |i| !i.is_multiple_of(5),
        ),
        (
            Params {
                outcome: Some("error".into()),
                ..Params::default()
            },
            |i| i.is_multiple_of(5),
        ),
        (
            Params {
                outcome: Some("timeout".into()),
                ..Params::default()
            },
            |i| i.is_multiple_of(5),
        ),
        (
            Params {
                outcome: Some("trap".into()),
                ..Params::default()
            },
            |_| false,
        ),
        (
            Params {
                caller: Some("lic".into()),
                ..Params::default()
            },
            |i| i.is_multiple_of(2),
        ),
        (
            Params {
                decision: Some("denied".into()),
                ..Params::default()
            },
            |i| i.is_multiple_of(5),
        ),
        (
            Params {
                since: Some((base + chrono::Duration::seconds(10)).to_rfc3339()),
                until: Some((base + chrono::Duration::seconds(20)).to_rfc3339()),
                ..Params::default()
            },
            |i| (10..20).contains(&i),
        ),
        (
            Params {
                q: Some("READ_FILE".into()),
                tool: Some("read_file".into()),
                caller: Some("bob".into()),
                ..Params::default()
            },
            |i| i % 4 == 1,
        ),
    ];
    for (params, keep) in cases {
        let request = params.parse().unwrap();
        let (found, _) = all_pages(&path, &request.filter, 1000, SCAN_BUDGET);
        assert_eq!(
            found,
            newest_first((0..100).filter(|&i| keep(i))),
            "{params:?}"
        );
    }
}

#[test]
fn matches_a_caller_subject_that_needs_escaping_and_v1_lines() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let mut quoted = record(1);
    quoted.caller.as_mut().unwrap().subject = "a \"quoted\" name".into();
    append(&path, [quoted]);
    let mut v1 = serde_json::to_value(record(3)).unwrap();
    v1.as_object_mut().unwrap().remove("event");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(format!("{v1}\n").as_bytes())
        .unwrap();
    let filter = Filter {
        caller: Some("\"quoted\"".into()),
        ..Filter::default()
    };
    assert_eq!(all_pages(&path, &filter, 10, SCAN_BUDGET).0, ["c1"]);
    assert_eq!(
        all_pages(&path, &Filter::default(), 10, SCAN_BUDGET).0,
        ["c3", "c1"]
    );
}

#[test]
fn explains_bad_parameters() {
    let error = |params: Params| params.parse().unwrap_err().to_string();
    let outcome = error(Params {
        outcome: Some("fine".into()),
        ..Params::default()
    });
    assert!(
        outcome.contains("ok, error") && outcome.contains("timeout"),
        "{outcome}"
    );
    let unfinished = error(Params {
        outcome: Some("unfinished".into()),
        ..Params::default()
    });
    assert!(unfinished.contains("live view"), "{unfinished}");
    let decision = error(Params {
        decision: Some("maybe".into()),
        ..Params::default()
    });
    assert!(
        decision.contains(
            "allowed, denied, asking, asked, unanswered, mismatched, deferred, not_reached"
        ),
        "{decision}"
    );
    let time = error(Params {
        since: Some("yesterday".into()),
        ..Params::default()
    });
    assert!(
        time.contains("since") && time.contains("RFC 3339"),
        "{time}"
    );
    let window = error(Params {
        since: Some("2025-06-01T12:00:00Z".into()),
        until: Some("2025-06-01T11:00:00Z".into()),
        ..Params::default()
    });
    assert!(window.contains("before until"), "{window}");
    for limit in ["0", "1001", "ten"] {
        assert!(
            error(Params {
                limit: Some(limit.into()),
                ..Params::default()
            })
            .contains("limit")
        );
    }
    assert!(
        error(Params {
            cursor: Some("abc".into()),
            ..Params::default()
        })
        .contains("cursor")
    );
    let fine = Params {
        tool: Some(String::new()),
        outcome: Some("cancelled".into()),
        ..Params::default()
    }
    .parse()
    .unwrap();
    assert_eq!(fine.limit, DEFAULT_LIMIT);
    assert_eq!(fine.filter.tool, None);
    assert_eq!(
        fine.filter.outcome,
        Some(OutcomeFilter::Outcome(Outcome::Cancelled))
    );
}
