use super::*;
use std::io::Read as _;

/// A queue whose writer writes into a pipe; the pipe's read end for the test.
fn queue_on_a_pipe() -> (Arc<Queue>, io::PipeReader) {
    let (reader, writer) = io::pipe().unwrap();
    let queue = Arc::new(Queue::new());
    let writing = queue.clone();
    std::thread::spawn(move || writing.write_to(writer));
    (queue, reader)
}

/// Everything the pipe gives until `done` holds of it (or 10 s).
fn read_until(reader: &mut io::PipeReader, done: impl Fn(&str) -> bool) -> String {
    let mut text = String::new();
    let mut buf = vec![0u8; 1 << 16];
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done(&text) && Instant::now() < deadline {
        let n = reader.read(&mut buf).unwrap();
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    text
}

/// (lines written, lines the notices say were dropped)
fn count(text: &str, line: &[u8]) -> (u64, u64) {
    let (mut kept, mut told) = (0, 0);
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("toolhost: ") {
            let (count, what) = rest.split_once(' ').unwrap();
            assert!(what.starts_with("log line(s) dropped"), "{l}");
            told += count.parse::<u64>().unwrap();
        } else {
            assert_eq!(l.as_bytes(), &line[..line.len() - 1], "only whole lines");
            kept += 1;
        }
    }
    (kept, told)
}

#[test]
fn a_reader_that_stops_reading_costs_lines_not_waits_and_hears_of_them_when_it_reads_again() {
    let (queue, mut reader) = queue_on_a_pipe();
    let line = [b'x'; 99].iter().chain(b"\n").copied().collect::<Vec<u8>>();
    // Far more than the pipe (64 KiB) and the queue hold, and nobody reading: none of it waits.
    let began = Instant::now();
    for _ in 0..10_000 {
        queue.push(&line, false);
    }
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
    let lost = queue.dropped.load(Ordering::Relaxed);
    assert!(lost > 5000, "{lost}");
    // The reader comes back: the queue drains, and a notice follows without another line.
    let text = read_until(&mut reader, |t| {
        let (kept, told) = count(t.rsplit_once('\n').map_or("", |(whole, _)| whole), &line);
        kept + told == 10_000
    });
    let (kept, told) = count(&text, &line);
    assert_eq!(told, lost, "the notice counts every drop");
    assert_eq!(kept + told, 10_000, "every line written or counted");
}

#[test]
fn a_closed_pipe_drops_lines_without_failing() {
    let (queue, reader) = queue_on_a_pipe();
    drop(reader);
    queue.push(b"gone\n", false);
    queue.push(b"gone again\n", false);
    queue.drain(Instant::now() + Duration::from_secs(10));
    // Both lines, and the notice that tried to say so.
    assert!(queue.dropped.load(Ordering::Relaxed) >= 2);
}

#[test]
fn what_is_said_for_a_person_has_room_past_a_full_queue() {
    let (queue, mut reader) = queue_on_a_pipe();
    let line = [b'x'; 99].iter().chain(b"\n").copied().collect::<Vec<u8>>();
    for _ in 0..10_000 {
        queue.push(&line, false);
    }
    let before = queue.dropped.load(Ordering::Relaxed);
    queue.push(
        b"toolhost: serving 1 tools over MCP at http://127.0.0.1:1/mcp\n",
        true,
    );
    assert_eq!(
        queue.dropped.load(Ordering::Relaxed),
        before,
        "the said line was kept"
    );
    let text = read_until(&mut reader, |t| t.contains("/mcp\n"));
    assert!(text.contains("at http://127.0.0.1:1/mcp"), "{text}");
}

#[test]
fn drain_waits_for_the_writer_and_no_longer_than_its_deadline() {
    let (queue, mut reader) = queue_on_a_pipe();
    queue.push(b"last words\n", true);
    queue.drain(Instant::now() + Duration::from_secs(10));
    assert!(!queue.lock().writing && queue.lock().lines.is_empty());
    let mut buf = [0u8; 64];
    let n = reader.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"last words\n");
    // A reader that stops reading: drain gives up at its deadline.
    for _ in 0..2000 {
        queue.push(&[b'y'; 1000], false);
    }
    let began = Instant::now();
    queue.drain(Instant::now() + Duration::from_millis(200));
    let took = began.elapsed();
    assert!(
        took >= Duration::from_millis(190) && took < Duration::from_secs(2),
        "{took:?}"
    );
}
