//! The bounds a stream is read within, each answered where it is crossed.

use serde_json::json;

use super::*;

#[test]
fn arguments_over_the_limit_answer_that_call_alone() {
    let limits = Limits {
        max_argument_bytes: 30,
        ..Limits::default()
    };
    let events = decode_chunks(
        Decoder::with_limits(FormatChoice::Auto, limits),
        [&fixture("anthropic.sse")[..]],
    )
    .unwrap();
    let (calls, ending) = summary(&events);
    assert_eq!(ending, stopped("tool_use"));
    assert!(calls[0].3.is_ok());
    assert_eq!(
        calls[1].3,
        Err(CallError::ArgumentsTooLarge {
            tool: "fs_write".into(),
            max: 30
        })
    );
    // Answered as soon as it is over, before its block ends.
    let ready_1 = events
        .iter()
        .position(|e| matches!(e, StreamEvent::Ready { index: 1, .. }));
    let pendings_1 = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Pending(p) if p.index == 1))
        .count();
    assert!(ready_1.is_some() && pendings_1 < 6, "{events:#?}");
    assert!(calls[2].3.is_ok());
    assert!(
        CallError::ArgumentsTooLarge {
            tool: "fs_write".into(),
            max: 30
        }
        .to_string()
        .contains("larger than 30 bytes")
    );
}

#[test]
fn the_calls_over_the_limit_end_the_stream() {
    let limits = Limits {
        max_calls: 2,
        ..Limits::default()
    };
    for name in ["anthropic.sse", "openai-chat.sse", "openai-responses.sse"] {
        let events = decode_chunks(
            Decoder::with_limits(FormatChoice::Auto, limits),
            [&fixture(name)[..]],
        )
        .unwrap();
        let (calls, ending) = summary(&events);
        assert_eq!(calls.len(), 2, "{name}");
        assert!(calls.iter().all(|c| c.3.is_ok()), "{name}: {calls:?}");
        assert_eq!(ending, Some(Ending::TooManyCalls { max: 2 }), "{name}");
    }
}

#[test]
fn calls_arriving_together_share_one_bound() {
    let limits = Limits {
        max_buffered_bytes: 64,
        ..Limits::default()
    };
    let start = |i: u64| json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": format!("t{i}"), "name": "echo", "input": {}}});
    let delta = |i: u64| json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": "{\"text\": \"0123456789012345678901234567890"}});
    let mut assembler = Assembler::with_limits(FormatChoice::Auto, limits);
    let mut events = Vec::new();
    for event in [start(0), start(1), delta(0), delta(1)] {
        events.extend(assembler.push_event(event).unwrap());
    }
    let (calls, _) = summary(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, 1);
    let Err(CallError::BrokenStream { reason, .. }) = &calls[0].3 else {
        panic!("{calls:?}")
    };
    assert_eq!(reason, "the calls arriving at once held more than 64 bytes");
}

#[test]
fn an_event_over_the_limit_breaks_the_open_calls_only() {
    let limits = Limits {
        max_event_bytes: 200,
        ..Limits::default()
    };
    let sse = format!(
        "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: {}\n\ndata: {}\n\ndata: {}\n\n",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t0", "name": "echo", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "echo", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "x".repeat(300)}}),
        json!({"type": "message_stop"}),
    );
    let events = decode_chunks(
        Decoder::with_limits(FormatChoice::Auto, limits),
        [sse.as_bytes()],
    )
    .unwrap();
    let (calls, ending) = summary(&events);
    assert_eq!(calls[0], ok(0, "t0", "echo", json!({})));
    let Err(CallError::BrokenStream { reason, .. }) = &calls[1].3 else {
        panic!("{calls:?}")
    };
    assert_eq!(reason, "an event of the stream is longer than 200 bytes");
    assert_eq!(ending, Some(Ending::Stopped { reason: None }));
}

#[test]
fn pending_input_stops_past_its_bound_and_stays_sparse() {
    let text = "y".repeat(MAX_PENDING_INPUT_BYTES * 2);
    let args = format!("{{\"text\": \"{text}\"}}");
    let mut assembler = Assembler::new(FormatChoice::Auto);
    let mut events = assembler
        .push_event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "echo", "input": {}}}))
        .unwrap();
    for piece in args.as_bytes().chunks(8) {
        let piece = std::str::from_utf8(piece).unwrap();
        let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}});
        events.extend(assembler.push_event(delta).unwrap());
    }
    let shown: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Pending(p) => Some(
                p.input
                    .as_ref()
                    .map_or(0, |i| i["text"].as_str().map_or(0, str::len)),
            ),
            _ => None,
        })
        .collect();
    // 16 000 fragments, a few dozen shown, none past the bound.
    assert!(shown.len() < 100, "{}", shown.len());
    assert!(shown.iter().all(|n| *n <= MAX_PENDING_INPUT_BYTES));
    assert!(*shown.iter().max().unwrap() > MAX_PENDING_INPUT_BYTES / 2);
}
