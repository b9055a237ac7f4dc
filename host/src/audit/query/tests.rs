//! Paging, cursors and exports over logs written by the real line writer; the helpers that write
//! such logs. Filters and parameters: `filter_tests.rs`.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolhost_call::call::ErrorKind;

use super::*;
use crate::audit::line;
use crate::audit::record::tests::sample;
use crate::audit::record::{Decision, Outcome};
use crate::audit::testdir::TestDir;

/// The `i`th call of a varied log: four tools, every fifth call a timeout, callers alice and bob.
pub(crate) fn record(i: usize) -> AuditRecord {
    let mut record = sample();
    record.call_id = format!("c{i}");
    record.tool = ["fetch_url", "read_file", "grep", "echo"][i % 4].into();
    record.ts_start += chrono::Duration::seconds(i as i64);
    record.ts_end = record.ts_start;
    if let Some(caller) = &mut record.caller {
        caller.subject = if i.is_multiple_of(2) { "alice" } else { "bob" }.into();
    }
    if i.is_multiple_of(5) {
        record.outcome = Outcome::Error;
        record.error_kind = Some(ErrorKind::Timeout);
        record.decision = Decision::Denied { by: "rule".into() };
    }
    record
}

/// Appends each record's begin line (every other call) and end line, as the writer does.
pub(super) fn append(path: &Path, records: impl IntoIterator<Item = AuditRecord>) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for record in records {
        if record
            .call_id
            .trim_start_matches('c')
            .parse::<usize>()
            .unwrap_or(1)
            .is_multiple_of(2)
        {
            file.write_all(&line::begin(&record, false).unwrap())
                .unwrap();
        }
        file.write_all(&line::end(&record, false).unwrap()).unwrap();
    }
}

pub(super) fn log(dir: &TestDir, n: usize) -> PathBuf {
    let path = dir.path().join("audit.jsonl");
    append(&path, (0..n).map(record));
    path
}

pub(super) fn ids(page: &Page) -> Vec<String> {
    page.records
        .iter()
        .map(|raw| {
            let value: Value = serde_json::from_str(raw.get()).unwrap();
            value["call_id"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// Every page from the end to the start: the call ids in order, and how many pages it took.
pub(super) fn all_pages(
    path: &Path,
    filter: &Filter,
    limit: usize,
    budget: u64,
) -> (Vec<String>, usize) {
    let (mut found, mut pages, mut cursor) = (Vec::new(), 0, None);
    loop {
        let page = query_within(path, filter, cursor, limit, budget).unwrap();
        found.extend(ids(&page));
        pages += 1;
        match page.next {
            Some(next) => cursor = Some(next),
            None => return (found, pages),
        }
    }
}

pub(super) fn newest_first(range: impl DoubleEndedIterator<Item = usize>) -> Vec<String> {
    range.rev().map(|i| format!("c{i}")).collect()
}

#[test]
fn pages_through_every_end_record_once_newest_first() {
    let dir = TestDir::new();
    let path = log(&dir, 3000);
    let (found, pages) = all_pages(&path, &Filter::default(), 7, SCAN_BUDGET);
    assert_eq!(found, newest_first(0..3000));
    assert_eq!(pages, 3000usize.div_ceil(7));
}

#[test]
fn returns_records_exactly_as_written() {
    let dir = TestDir::new();
    let path = log(&dir, 3);
    let page = query(&path, &Filter::default(), None, 1).unwrap();
    let written = line::end(&record(2), false).unwrap();
    assert_eq!(
        page.records[0].get().as_bytes(),
        &written[..written.len() - 1]
    );
    let json = serde_json::to_value(&page).unwrap();
    assert_eq!(json["next"], page.next.unwrap().to_string());
    assert!(json.get("malformed").is_none());
}

#[test]
fn reads_lines_longer_than_a_block() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let long = |i: usize| AuditRecord {
        detail: Some(format!("{i}").repeat(backward::BLOCK * 2 + i * 1000)),
        ..record(i)
    };
    append(&path, (0..6).map(long));
    for budget in [1, SCAN_BUDGET] {
        let (found, _) = all_pages(&path, &Filter::default(), 1, budget);
        assert_eq!(found, newest_first(0..6), "budget {budget}");
    }
}

#[test]
fn stops_at_the_scan_budget_and_resumes_from_its_cursor() {
    let dir = TestDir::new();
    let path = log(&dir, 2000);
    let rare = Filter {
        tool: Some("echo".into()),
        since: Some(record(1990).ts_start),
        ..Filter::default()
    };
    let first = query_within(&path, &Filter::default(), None, 1000, 10_000).unwrap();
    assert!(first.records.len() < 20, "{}", first.records.len());
    assert!(first.scanned_bytes >= 10_000 && first.scanned_bytes < 12_000);
    let (found, pages) = all_pages(&path, &rare, 100, 100_000);
    assert_eq!(found, newest_first((1990..2000).filter(|i| i % 4 == 3)));
    let size = std::fs::metadata(&path).unwrap().len();
    // Every page but the last reads at least the budget.
    assert!(
        pages >= 2 && pages as u64 <= size.div_ceil(100_000),
        "{pages} pages of {size} bytes"
    );
}

#[test]
fn skips_a_torn_last_line_and_counts_it() {
    let dir = TestDir::new();
    let path = log(&dir, 5);
    let torn = line::end(&record(5), false).unwrap();
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(&torn[..torn.len() - 1]).unwrap();
    let page = query(&path, &Filter::default(), None, 100).unwrap();
    assert_eq!(ids(&page), newest_first(0..5));
    assert_eq!(page.malformed, 1);
    // Once the line is finished, it is the newest record.
    file.write_all(b"\n").unwrap();
    let page = query(&path, &Filter::default(), None, 1).unwrap();
    assert_eq!(ids(&page), ["c5"]);
}

#[test]
fn skips_and_counts_malformed_and_blank_lines() {
    let dir = TestDir::new();
    let path = log(&dir, 2);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"garbage\n\n{\"v\":2,\"event\":\"end\"}\n")
        .unwrap();
    append(&path, [record(2)]);
    let page = query(&path, &Filter::default(), None, 100).unwrap();
    assert_eq!(ids(&page), newest_first(0..3));
    assert_eq!(page.malformed, 2);
}

#[test]
fn answers_an_empty_log_with_an_empty_last_page() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, "").unwrap();
    let page = query(&path, &Filter::default(), None, 10).unwrap();
    assert!(page.records.is_empty() && page.next.is_none());
    assert_eq!(page.scanned_bytes, 0);
    let missing = query(&dir.path().join("none"), &Filter::default(), None, 10);
    assert!(matches!(missing, Err(QueryError::Open { .. })));
}

#[test]
fn a_record_appended_between_pages_does_not_shift_the_cursor() {
    let dir = TestDir::new();
    let path = log(&dir, 10);
    let first = query(&path, &Filter::default(), None, 4).unwrap();
    append(&path, [record(10)]);
    let second = query(&path, &Filter::default(), first.next, 4).unwrap();
    assert_eq!(ids(&first), newest_first(6..10));
    assert_eq!(ids(&second), newest_first(2..6));
    let newest = query(&path, &Filter::default(), None, 1).unwrap();
    assert_eq!(ids(&newest), ["c10"]);
}

#[test]
fn refuses_a_cursor_from_another_file_or_a_rewritten_one() {
    let dir = TestDir::new();
    let path = log(&dir, 10);
    let other = dir.path().join("other.jsonl");
    append(&other, (0..10).map(record));
    let next = query(&path, &Filter::default(), None, 3).unwrap().next;
    let moved = query(&other, &Filter::default(), next, 3);
    assert!(matches!(moved, Err(QueryError::StaleCursor)), "{moved:?}");
    // Rewritten in place: the same inode, other bytes before the offset.
    let mut text = std::fs::read(&path).unwrap();
    let at = next.unwrap().offset as usize;
    text[at - 40..at - 30].copy_from_slice(b"0123456789");
    std::fs::write(&path, &text).unwrap();
    assert!(matches!(
        query(&path, &Filter::default(), next, 3),
        Err(QueryError::StaleCursor)
    ));
    let parsed: Cursor = next.unwrap().to_string().parse().unwrap();
    assert_eq!(Some(parsed), next);
    for bad in ["", "12", "0.1.2", "x.1.2", "1.2.3.4", "-1.2.3", "+1.2.3"] {
        assert!(bad.parse::<Cursor>().is_err(), "{bad}");
    }
}

#[test]
fn exports_every_match_newest_first_in_chunks() {
    let dir = TestDir::new();
    let path = log(&dir, 2500);
    let mut out = Vec::new();
    let filter = Filter {
        outcome: Some(OutcomeFilter::Outcome(Outcome::Ok)),
        ..Filter::default()
    };
    assert_eq!(export(&path, &filter, &mut out).unwrap(), 2000);
    let found: Vec<String> = out
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice::<Value>(l).unwrap()["call_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        found,
        newest_first((0..2500usize).filter(|i| !i.is_multiple_of(5)))
    );
    let chunks: Vec<Vec<u8>> = Export::new(&path, filter)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(chunks.len(), 2);
    assert!(chunks.iter().all(|c| !c.is_empty()));
    assert_eq!(chunks.concat(), out);
}

/// Not a test: the figures for the console's doc. Writes 1,000,000 end records with the real line
/// writer, then times the first page, a filtered page for a rare tool, and a full export.
/// `cargo test --release -p toolhost --lib audit::query::tests::measure -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, not a test: about 800 MB of disk"]
fn measure_a_million_records() {
    use std::time::Instant;
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let started = Instant::now();
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..1_000_000 {
        let mut r = record(i);
        if i == 1000 {
            r.tool = "rare_tool".into();
        }
        file.write_all(&line::end(&r, false).unwrap()).unwrap();
    }
    file.flush().unwrap();
    drop(file);
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "wrote 1,000,000 records, {size} bytes, in {:?}",
        started.elapsed()
    );
    let time = |what: &str, f: &dyn Fn() -> String| {
        let started = Instant::now();
        let said = f();
        println!("{what}: {:?} ({said})", started.elapsed());
    };
    time("first page, no filter, 100", &|| {
        let page = query(&path, &Filter::default(), None, 100).unwrap();
        format!(
            "{} records, {} bytes scanned",
            page.records.len(),
            page.scanned_bytes
        )
    });
    let rare = Filter {
        tool: Some("rare_tool".into()),
        ..Filter::default()
    };
    time("first page, rare tool", &|| {
        let page = query(&path, &rare, None, 100).unwrap();
        format!(
            "{} records, {} bytes scanned, next {:?}",
            page.records.len(),
            page.scanned_bytes,
            page.next.is_some()
        )
    });
    time("every page, rare tool", &|| {
        format!(
            "{} records",
            all_pages(&path, &rare, 100, SCAN_BUDGET).0.len()
        )
    });
    let q = Filter {
        q: Some(Needle::new("RARE_TOOL")),
        ..Filter::default()
    };
    time("first page, q=RARE_TOOL", &|| {
        let page = query(&path, &q, None, 100).unwrap();
        format!(
            "{} records, {} bytes scanned",
            page.records.len(),
            page.scanned_bytes
        )
    });
    time("export, no filter", &|| {
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(dir.path().join("out")).unwrap());
        format!(
            "{} records",
            export(&path, &Filter::default(), &mut out).unwrap()
        )
    });
    time("export, rare tool", &|| {
        format!("{} records", export(&path, &rare, std::io::sink()).unwrap())
    });
}
