use proptest::prelude::*;
use serde_json::json;
use toolhost_call::call::ErrorKind;

use super::*;
use crate::audit::BreakerNote;
use crate::audit::record::Outcome;
use crate::audit::record::tests::sample;

/// serde_json's encoding of the end line, the reference.
fn reference_end(record: &AuditRecord, keep_input: bool) -> Vec<u8> {
    let kept = AuditRecord {
        input: record.input.clone().filter(|_| keep_input),
        ..record.clone()
    };
    let mut line = serde_json::to_vec(&kept).unwrap();
    line.push(b'\n');
    line
}

/// serde_json's encoding of the begin line, through its owned record: the reference.
fn reference_begin(record: &AuditRecord, keep_input: bool) -> Vec<u8> {
    let owned: crate::audit::BeginRecord = AuditRecord {
        input: record.input.clone().filter(|_| keep_input),
        ..record.clone()
    }
    .begin_line();
    let mut line = serde_json::to_vec(&owned).unwrap();
    line.push(b'\n');
    line
}

/// Byte for byte, shown as text when they differ.
fn assert_same(record: &AuditRecord) {
    for keep in [false, true] {
        for (ours, theirs) in [
            (end(record, keep).unwrap(), reference_end(record, keep)),
            (begin(record, keep).unwrap(), reference_begin(record, keep)),
        ] {
            assert!(
                ours == theirs,
                "{}\n{}",
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs)
            );
        }
    }
}

const HOSTILE: &[&str] = &[
    "",
    "\"",
    "\\",
    "a\"b\\c",
    "line\nbreak\r\ttab",
    "\u{0}\u{1}\u{1f} controls",
    "\u{7f} DEL is not escaped",
    "\u{2028}\u{2029} separators",
    "é, 日本, 😀",
    "eight!!\"",
    "seven!!\\ and more after the first word",
    "\"},\"outcome\":\"ok\",\"x\":{\"",
];

#[test]
fn plain_is_exactly_what_serde_json_leaves_alone() {
    // Every byte, at every place in and around a word, in strings of every length to two words.
    for len in 1..=17 {
        for at in 0..len {
            for byte in 0..=255u8 {
                let mut bytes = vec![b'a'; len];
                bytes[at] = byte;
                let naive = bytes.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\');
                assert_eq!(is_plain(&bytes), naive, "{bytes:?}");
            }
        }
    }
    assert!(is_plain(b""));
}

#[test]
fn the_sample_is_written_as_serde_writes_it() {
    assert_same(&sample());
    // And it is the golden line.
    let lines = [
        begin(&sample(), false).unwrap(),
        end(&sample(), false).unwrap(),
    ]
    .concat();
    crate::audit::golden::check_text("audit/record.v2.jsonl", &String::from_utf8(lines).unwrap());
}

#[test]
fn every_decision_outcome_and_absent_field_is_written_as_serde_writes_it() {
    let decisions = [
        Decision::Allowed {
            by: "mode: trust".into(),
        },
        Decision::Denied {
            by: "rule deny: x".into(),
        },
        Decision::Asking,
        Decision::Asked {
            answer: true,
            operator: None,
        },
        Decision::Asked {
            answer: false,
            operator: Some("sub=\"m\u{e9}\\\"lo\"".into()),
        },
        Decision::Unanswered {
            why: "the question timed out after 60 s".into(),
        },
        Decision::Mismatched,
        Decision::Deferred,
        Decision::NotReached,
    ];
    let kinds = [
        None,
        Some(ErrorKind::UnknownTool),
        Some(ErrorKind::InvalidInput),
        Some(ErrorKind::Denied),
        Some(ErrorKind::Timeout),
        Some(ErrorKind::OutOfFuel),
        Some(ErrorKind::MemoryLimit),
        Some(ErrorKind::Trap),
        Some(ErrorKind::ToolFailed),
        Some(ErrorKind::BadOutput),
        Some(ErrorKind::Cancelled),
        Some(ErrorKind::InputRequired),
        Some(ErrorKind::Busy),
        Some(ErrorKind::Suspended),
        Some(ErrorKind::AuditUnavailable),
        Some(ErrorKind::Internal),
    ];
    for decision in decisions {
        for error_kind in kinds {
            assert_same(&AuditRecord {
                decision: decision.clone(),
                error_kind,
                outcome: Outcome::from_error_kind(error_kind),
                ..sample()
            });
        }
    }
    assert_same(&AuditRecord {
        event: Event::End,
        parent_id: None,
        plugin: None,
        plugin_digest: None,
        plugin_source: None,
        caller: None,
        input: Some(json!({"text": "hi", "n": [1, 2.5, null], "q": "\"\\\n"})),
        coercions: Vec::new(),
        fuel_used: None,
        peak_memory_bytes: None,
        truncated: true,
        outcome: Outcome::Unfinished,
        breaker: vec![
            BreakerNote {
                event: "refused".into(),
                kind: Some(ErrorKind::Trap),
                failures: Some(3),
                retry_in_s: Some(30),
            },
            BreakerNote {
                event: "closed".into(),
                kind: None,
                failures: None,
                retry_in_s: None,
            },
        ],
        ..sample()
    });
    // Every field set at once.
    assert_same(&AuditRecord {
        input: Some(json!({"url": "https://example.com"})),
        detail: Some("cannot open granted directory '/srv/x': No such file".into()),
        refused: vec!["no directory grant covers /etc/hosts; grant it with [plugins.fs] …".into()],
        credentials: vec!["token: profile alice's secret 'github'".into()],
        breaker: vec![BreakerNote {
            event: "opened".into(),
            kind: Some(ErrorKind::Timeout),
            failures: Some(5),
            retry_in_s: Some(60),
        }],
        ..sample()
    });
    assert_same(&AuditRecord {
        input: Some(json!(null)),
        v: 1,
        duration_us: u64::MAX,
        output_bytes: 0,
        ..sample()
    });
}

#[test]
fn timestamps_chrono_writes_itself_are_written_as_serde_writes_them() {
    let far: DateTime<Utc> = "+10000-01-01T00:00:00.5Z".parse().unwrap();
    let leap = DateTime::<Utc>::from_timestamp(1_483_228_799, 1_500_000_000).unwrap();
    for t in [far, leap] {
        assert!(rfc3339_micros::digits(&t).is_none());
        assert_same(&AuditRecord {
            ts_start: t,
            ts_end: t,
            ..sample()
        });
    }
}

#[test]
fn hostile_strings_are_escaped_as_serde_escapes_them() {
    for &s in HOSTILE {
        assert_same(&AuditRecord {
            call_id: s.into(),
            parent_id: Some(s.into()),
            origin: s.into(),
            tool: s.into(),
            plugin: Some(s.into()),
            plugin_digest: Some(s.into()),
            plugin_source: Some(s.into()),
            input_sha256: s.into(),
            decision: Decision::Denied { by: s.into() },
            coercions: vec![s.into(), s.into()],
            detail: Some(s.into()),
            refused: vec![s.into(), s.into()],
            ..sample()
        });
    }
}

proptest! {
    #[test]
    fn any_strings_are_written_as_serde_writes_them(
        strings in proptest::collection::vec(any::<String>(), 6),
        coercions in proptest::collection::vec(any::<String>(), 0..3),
    ) {
        let record = AuditRecord {
            call_id: strings[0].clone(),
            origin: strings[1].clone(),
            tool: strings[2].clone(),
            plugin_source: Some(strings[3].clone()),
            decision: Decision::Allowed { by: strings[4].clone() },
            input: Some(json!({ strings[5].clone(): strings[5] })),
            coercions,
            ..sample()
        };
        for keep in [false, true] {
            prop_assert_eq!(end(&record, keep).unwrap(), reference_end(&record, keep));
            prop_assert_eq!(begin(&record, keep).unwrap(), reference_begin(&record, keep));
        }
    }
}

#[test]
fn a_callers_token_is_never_written() {
    let record = sample();
    assert!(record.caller.as_ref().unwrap().token.is_some());
    for keep in [false, true] {
        for line in [end(&record, keep).unwrap(), begin(&record, keep).unwrap()] {
            let text = String::from_utf8(line).unwrap();
            assert!(
                !text.contains("never.written") && text.contains("alice"),
                "{text}"
            );
        }
    }
}
