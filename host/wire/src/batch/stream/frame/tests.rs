use serde_json::json;

use super::*;

/// Every frame of `bytes`, pushed in chunks of `size`, then finished.
fn frames(bytes: &[u8], size: usize) -> Vec<Result<Frame, FrameError>> {
    let mut framer = Framer::new(1 << 20);
    let mut out: Vec<_> = bytes
        .chunks(size.max(1))
        .flat_map(|c| framer.push(c))
        .collect();
    out.extend(framer.finish());
    out
}

fn event(v: serde_json::Value) -> Result<Frame, FrameError> {
    Ok(Frame::Event(v))
}

#[test]
fn reads_sse_events_comments_and_done() {
    let sse = b": a comment\nevent: message_start\ndata: {\"type\":\"a\"}\n\n\
                id: 7\nretry: 10\ndata:{\"type\":\"b\"}\n\ndata: [DONE]\n\n";
    assert_eq!(
        frames(sse, 1 << 20),
        vec![
            event(json!({"type": "a"})),
            event(json!({"type": "b"})),
            Ok(Frame::Done)
        ]
    );
}

#[test]
fn joins_the_data_lines_of_one_event() {
    let sse = b"data: {\"type\":\ndata: \"a\"}\n\n";
    assert_eq!(frames(sse, 1 << 20), vec![event(json!({"type": "a"}))]);
}

#[test]
fn reads_crlf_and_cr_line_ends() {
    let crlf = b"event: x\r\ndata: {\"n\":1}\r\n\r\ndata: {\"n\":2}\r\rdata: [DONE]\r\n\r\n";
    let want = vec![
        event(json!({"n": 1})),
        event(json!({"n": 2})),
        Ok(Frame::Done),
    ];
    for size in 1..crlf.len() {
        assert_eq!(frames(crlf, size), want, "chunks of {size}");
    }
}

#[test]
fn reads_ndjson_from_its_first_line() {
    let nd = "\n{\"n\":1}\r\n\n  {\"t\":\"é\"}\n{\"n\":3}";
    let want = vec![
        event(json!({"n": 1})),
        event(json!({"t": "é"})),
        event(json!({"n": 3})),
    ];
    for size in 1..nd.len() {
        let mut framer = Framer::new(1 << 20);
        let mut out: Vec<_> = nd
            .as_bytes()
            .chunks(size)
            .flat_map(|c| framer.push(c))
            .collect();
        out.extend(framer.finish());
        assert_eq!(out, want, "chunks of {size}");
        assert_eq!(framer.framing(), Some(Framing::Ndjson));
    }
}

#[test]
fn a_character_split_between_chunks_is_read_whole() {
    let sse = "data: {\"t\":\"日本 🦀\"}\n\n".as_bytes();
    for size in 1..sse.len() {
        assert_eq!(frames(sse, size), vec![event(json!({"t": "日本 🦀"}))]);
    }
}

#[test]
fn a_byte_order_mark_is_dropped() {
    assert_eq!(
        frames(b"\xEF\xBB\xBFdata: {}\n\n", 1),
        vec![event(json!({}))]
    );
    assert_eq!(frames(b"\xEF\xBB\xBF{}\n", 2), vec![event(json!({}))]);
}

#[test]
fn data_that_is_not_json_is_an_error_and_the_stream_goes_on() {
    let out = frames(b"data: {oops\n\ndata: {}\n\n", 3);
    assert!(matches!(out[0], Err(FrameError::NotJson { .. })), "{out:?}");
    assert_eq!(out[1], event(json!({})));
    let out = frames(b"{\"a\":1}\nnope\n{}\n", 5);
    assert!(matches!(out[1], Err(FrameError::NotJson { .. })), "{out:?}");
    assert_eq!(out.len(), 3);
}

#[test]
fn an_event_cut_at_the_end_is_dropped_and_a_whole_one_kept() {
    assert_eq!(
        frames(b"data: {}\n\ndata: {\"type\":\"con", 4),
        vec![event(json!({}))]
    );
    assert_eq!(
        frames(b"data: {}\n\ndata: {\"n\":2}", 4),
        vec![event(json!({})), event(json!({"n": 2}))]
    );
    assert_eq!(frames(b"{}\n{\"n\":", 1), vec![event(json!({}))]);
}

#[test]
fn lines_and_events_over_the_limit_are_skipped_and_reported_once() {
    let mut framer = Framer::new(16);
    let mut out = framer.push(b"event: big\ndata: {\"text\":\"0123456789");
    out.extend(framer.push(b"0123456789\"}\n\ndata: {}\n\n"));
    assert_eq!(
        out,
        vec![
            Err(FrameError::TooLarge {
                max: 16,
                event: Some("big".into())
            }),
            event(json!({}))
        ]
    );
    // Two data lines, each short enough, together too long.
    let mut framer = Framer::new(16);
    let out = framer.push(b"data: [1,2,3,4,5,\ndata: 6,7,8,9]\n\ndata: 1\n\n");
    assert!(
        matches!(out[0], Err(FrameError::TooLarge { .. })),
        "{out:?}"
    );
    assert_eq!(out[1], event(json!(1)));
    // NDJSON: the long line, and only it.
    let mut framer = Framer::with_framing(Framing::Ndjson, 8);
    let out = framer.push(b"{\"a\":\"0123456789\"}\n{}\n");
    assert_eq!(
        out,
        vec![
            Err(FrameError::TooLarge {
                max: 8,
                event: None
            }),
            event(json!({}))
        ]
    );
}

#[test]
fn memory_stays_within_the_limit_for_an_endless_line() {
    let mut framer = Framer::new(1024);
    for _ in 0..1000 {
        assert!(framer.push(&[b'x'; 4096]).is_empty());
        assert!(framer.line.capacity() <= 2 * 1024 + 4096);
    }
}

#[test]
fn never_panics_on_odd_bytes() {
    let odd: [&[u8]; 8] = [
        b"\xff\xfe\n\n",
        b"data\n\n",
        b":\n",
        b"data: \xc3\n\n",
        b"\r\r\r\n\n",
        b"event:\ndata:\n\n",
        b"[1,2]\n",
        b"\xEF\xBB",
    ];
    for bytes in odd {
        for size in 1..=bytes.len() {
            let _ = frames(bytes, size);
        }
    }
}
