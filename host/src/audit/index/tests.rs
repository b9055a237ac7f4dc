//! Shipping a real log (the line writer's lines) to an index: end records only, each once, whole
//! lines only; what a failed round could not keep is shipped the next; a rotated log is read from
//! its start; a daemon starting on a long log ships only its tail again.

use std::io::Write;
use std::sync::atomic::Ordering;

use super::memory::Memory;
use super::*;
use crate::audit::line;
use crate::audit::query::tests::record;
use crate::audit::testdir::TestDir;

fn append(path: &std::path::Path, range: std::ops::Range<usize>) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for i in range {
        let r = record(i);
        file.write_all(&line::begin(&r, false).unwrap()).unwrap();
        file.write_all(&line::end(&r, false).unwrap()).unwrap();
    }
}

async fn round(tail: &mut Tail, index: &Memory) -> bool {
    let records = tail.read().unwrap();
    for batch in records.chunks(BATCH) {
        if index.add(batch).await.is_err() {
            tail.rewind();
            return false;
        }
    }
    tail.commit();
    true
}

#[tokio::test]
async fn end_records_are_shipped_once_and_whole_lines_only() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let index = Memory::of("d1");
    let mut tail = Tail::from_now(path.clone());
    assert!(
        round(&mut tail, &index).await,
        "no log yet is nothing to ship"
    );
    append(&path, 0..3);
    // A torn last line waits for the rest of it.
    let torn = line::end(&record(3), false).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(&torn[..10]).unwrap();
    round(&mut tail, &index).await;
    assert_eq!(index.ids(), ["c0", "c1", "c2"]);
    file.write_all(&torn[10..]).unwrap();
    round(&mut tail, &index).await;
    round(&mut tail, &index).await;
    assert_eq!(index.ids(), ["c0", "c1", "c2", "c3"], "each once");
    let kept = index.rows.lock().unwrap();
    let first = kept.values().next().unwrap();
    assert_eq!(first.daemon, "d1");
    assert!(first.record.line.contains("\"event\":\"end\""));
}

#[tokio::test]
async fn a_failed_round_is_shipped_again_and_a_rotated_log_from_its_start() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let index = Memory::of("d1");
    let mut tail = Tail::from_now(path.clone());
    append(&path, 0..2);
    index.down.store(true, Ordering::Release);
    assert!(!round(&mut tail, &index).await);
    index.down.store(false, Ordering::Release);
    assert!(round(&mut tail, &index).await);
    assert_eq!(index.ids(), ["c0", "c1"]);
    // Rotated: a new file under the same name.
    std::fs::rename(&path, dir.path().join("audit.jsonl.1")).unwrap();
    append(&path, 2..3);
    round(&mut tail, &index).await;
    assert_eq!(index.ids(), ["c0", "c1", "c2"]);
}

#[tokio::test]
async fn a_start_on_a_long_log_ships_its_tail_again() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    // Well over the tail shipped again: about 2.5 MB.
    append(&path, 0..2000);
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 2 * RESHIPPED_ON_START, "{len}");
    let index = Memory::of("d2");
    let mut tail = Tail::from_now(path.clone());
    round(&mut tail, &index).await;
    let ids = index.ids();
    assert!(!ids.is_empty() && ids.len() < 2000, "{}", ids.len());
    assert!(ids.contains(&"c1999".to_owned()), "the newest are shipped");
    assert!(!ids.contains(&"c0".to_owned()), "the oldest are not");
}

#[tokio::test]
async fn ship_keeps_going_until_stopped_and_ships_a_last_round() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let index = Arc::new(Memory::of("d1"));
    let stop = CancellationToken::new();
    let shipping = tokio::spawn(ship(
        Tail::from_now(path.clone()),
        index.clone(),
        stop.clone(),
    ));
    append(&path, 0..2);
    stop.cancel();
    shipping.await.unwrap();
    assert_eq!(index.ids(), ["c0", "c1"]);
}

#[tokio::test]
async fn a_line_longer_than_a_round_reads_is_skipped_not_stuck_on() {
    let dir = TestDir::new();
    let path = dir.path().join("audit.jsonl");
    let index = Memory::of("d1");
    let mut tail = Tail::from_now(path.clone());
    let long = vec![b'x'; usize::try_from(READ_AT_MOST).unwrap() + 10];
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(&long).unwrap();
    file.write_all(b"\n").unwrap();
    append(&path, 0..1);
    for _ in 0..3 {
        round(&mut tail, &index).await;
    }
    assert_eq!(index.ids(), ["c0"], "the record after it is shipped");
}
