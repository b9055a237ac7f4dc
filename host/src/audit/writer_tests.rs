//! The audit writer's tests: round trips, inputs kept or dropped, concurrent and synced writers,
//! torn tails and write failures.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::audit::record::tests::sample;
use crate::audit::testdir::TestDir;

fn options(include_input: bool) -> AuditOptions {
    AuditOptions {
        include_input,
        ..AuditOptions::default()
    }
}

#[test]
fn round_trips_records_through_the_file() {
    let dir = TestDir::new();
    let path = dir.path().join("nested/dirs/audit.jsonl");
    let log = AuditLog::open(&path, options(true)).unwrap();
    let first = AuditRecord {
        input: Some(json!({"url": "https://example.com"})),
        ..sample()
    };
    let second = log.begin("id-2", "cli", "nope", &json!([1, 2]));
    log.write(&first).unwrap();
    log.write(&second).unwrap();
    let back: Vec<_> = crate::audit::read_records(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, vec![first, second]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn begin_lines_pair_with_their_end_and_keep_inputs_only_when_configured() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path, options(false)).unwrap();
    let mut record = log.begin("id-1", "mcp", "t", &json!({"secret": 1}));
    record.input = Some(json!({"secret": 1}));
    log.write_begin(&record).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""event":"begin""#), "{text}");
    assert!(!text.contains("secret"), "{text}");
    let read: Vec<_> = crate::audit::read_records(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(read[0].outcome, crate::audit::Outcome::Unfinished);
    record.finish(None, std::time::Duration::from_millis(1));
    log.write(&record).unwrap();
    let read: Vec<_> = crate::audit::read_records(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].outcome, crate::audit::Outcome::Ok);
}

#[test]
fn drops_inputs_unless_configured() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path, options(false)).unwrap();
    assert!(
        log.begin("id", "cli", "t", &json!({"secret": 1}))
            .input
            .is_none()
    );
    let record = AuditRecord {
        input: Some(json!({"secret": 1})),
        ..sample()
    };
    log.write(&record).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("secret") && !text.contains("\"input\""),
        "{text}"
    );
}

#[test]
fn concurrent_writers_never_interleave_lines() {
    const THREADS: usize = 16;
    const PER_THREAD: usize = 500;
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::open(&path, options(true)).unwrap());
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    // Lines of very different sizes, some larger than a pipe buffer.
                    let padding = "x".repeat((i * 37 + t * 101) % 9000);
                    let record = AuditRecord {
                        call_id: format!("{t}-{i}"),
                        input: Some(json!({ "padding": padding })),
                        ..sample()
                    };
                    log.write(&record).unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), THREADS * PER_THREAD);
    let mut ids = HashSet::new();
    for line in text.lines() {
        let record: AuditRecord = serde_json::from_str(line).unwrap();
        assert!(ids.insert(record.call_id), "duplicate record");
    }
    assert_eq!(ids.len(), THREADS * PER_THREAD);
}

#[test]
fn synced_writers_share_syncs_and_lose_no_record() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let log = Arc::new(
        AuditLog::open(
            &path,
            AuditOptions {
                sync: true,
                ..AuditOptions::default()
            },
        )
        .unwrap(),
    );
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..25 {
                    let record = AuditRecord {
                        call_id: format!("{t}-{i}"),
                        ..sample()
                    };
                    log.write(&record).unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let sink = log.sink.as_ref().unwrap();
    assert_eq!(*sink.synced.lock().unwrap(), 200);
    assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 200);
}

#[test]
fn starts_a_fresh_line_after_a_torn_tail() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    fs::write(&path, "{\"v\":1,\"call_id\":\"cut sh").unwrap();
    let log = AuditLog::open(&path, options(false)).unwrap();
    log.write(&sample()).unwrap();
    let results: Vec<_> = crate::audit::read_records(&path).unwrap().collect();
    assert_eq!(results.len(), 2);
    assert!(results[0].is_err());
    assert_eq!(results[1].as_ref().unwrap(), &sample());
}

#[test]
fn fails_to_open_under_a_file() {
    let dir = TestDir::new();
    let blocker = dir.path().join("not-a-dir");
    fs::write(&blocker, "").unwrap();
    let error = AuditLog::open(blocker.join("audit.jsonl"), options(false)).unwrap_err();
    assert!(matches!(error, AuditError::Open { .. }), "{error:?}");
}

#[cfg(target_os = "linux")]
#[test]
fn returns_and_counts_write_failures() {
    // /dev/full accepts the open and fails every write with ENOSPC, even for root.
    let log = AuditLog::open("/dev/full", AuditOptions::default()).unwrap();
    assert!(log.refuses_on_failure());
    let error = log.write(&sample()).unwrap_err();
    assert!(matches!(error, AuditError::Write { .. }), "{error:?}");
    assert!(log.write(&sample()).is_err());
    assert!(log.is_failing());
    assert_eq!(log.failures(), 2);
}

#[test]
fn disabled_log_accepts_everything_and_refuses_nothing() {
    let log = AuditLog::disabled();
    log.write(&sample()).unwrap();
    assert!(!log.refuses_on_failure() && !log.is_enabled() && log.path().is_none());
}

#[test]
fn options_deserialize_from_kebab_case_with_defaults() {
    let options: AuditOptions =
        serde_json::from_value(json!({"include-input": true, "on-failure": "continue"})).unwrap();
    assert_eq!(
        options,
        AuditOptions {
            include_input: true,
            sync: false,
            on_failure: OnFailure::Continue
        }
    );
    assert!(serde_json::from_value::<AuditOptions>(json!({"include_input": true})).is_err());
}
