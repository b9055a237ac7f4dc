//! Each format's rules on events made here: detection, when a call is complete, and the odd
//! events a reader must survive.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::batch::Format;

/// Every event of `events`, read one by one, then finished.
fn assemble(choice: FormatChoice, events: &[Value]) -> Result<Vec<StreamEvent>, StreamError> {
    let mut assembler = Assembler::new(choice);
    let mut out = Vec::new();
    for event in events {
        out.extend(assembler.push_event(event.clone())?);
    }
    out.extend(assembler.finish()?);
    check(&out);
    Ok(out)
}

fn chat(tool_calls: Value) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": tool_calls}}]})
}

fn chat_finish(reason: &str) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

#[test]
fn tells_the_format_from_the_first_event_that_shows_one() {
    let ping = json!({"type": "ping"});
    let cases = [
        (
            json!({"type": "message_start", "message": {}}),
            Format::Anthropic,
        ),
        (json!({"choices": []}), Format::OpenAi),
        (json!({"object": "chat.completion.chunk"}), Format::OpenAi),
        (
            json!({"type": "response.created", "response": {}}),
            Format::OpenAiResponses,
        ),
    ];
    for (first, format) in cases {
        let mut assembler = Assembler::new(FormatChoice::Auto);
        assert_eq!(assembler.push(Ok(Frame::Done)), Ok(vec![]));
        assert_eq!(assembler.push_event(ping.clone()), Ok(vec![]));
        assert_eq!(assembler.format(), None);
        assembler.push_event(first.clone()).unwrap();
        assert_eq!(assembler.format(), Some(format), "{first}");
        // A named format must match.
        let other = Format::ALL.into_iter().find(|f| *f != format).unwrap();
        let e = assemble(FormatChoice::Named(other), std::slice::from_ref(&first)).unwrap_err();
        assert_eq!(
            e,
            StreamError::Shape {
                format: other,
                found: Some(format)
            }
        );
    }
}

#[test]
fn refuses_a_stream_of_no_format_before_any_call() {
    assert_eq!(assemble(FormatChoice::Auto, &[]), Err(StreamError::Empty));
    assert_eq!(
        assemble(
            FormatChoice::Auto,
            &[json!({"role": "assistant", "content": []})]
        ),
        Err(StreamError::Undetected)
    );
    let e = assemble(FormatChoice::Named(Format::OpenAi), &[json!([1])]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not an OpenAI Chat Completions stream: its first event is of no known format"
    );
    // SSE ignores lines it does not know: plain text holds no event.
    assert_eq!(
        decode(b"hello world\n\n", FormatChoice::Auto),
        Err(StreamError::Empty)
    );
    for bytes in [&b"data: hello\n\n"[..], b"{oops}\n"] {
        let e = decode(bytes, FormatChoice::Auto).unwrap_err();
        assert!(
            matches!(e, StreamError::NotAStream(FrameError::NotJson { .. })),
            "{e}"
        );
    }
    let e = decode(b"data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", FormatChoice::Auto);
    assert_eq!(
        e,
        Err(StreamError::Failed {
            message: "Overloaded".into()
        })
    );
    // A refused stream stays refused.
    let mut decoder = Decoder::new(FormatChoice::Auto);
    let e = decoder.push(b"{\"x\":1}\n").unwrap_err();
    assert_eq!(decoder.push(&fixture("openai-chat.sse")), Err(e.clone()));
    assert_eq!(decoder.finish(), Err(e));
}

#[test]
fn a_chat_call_is_complete_when_a_later_one_starts() {
    let mut assembler = Assembler::new(FormatChoice::Auto);
    let start = |i: u64, id: &str| {
        chat(
            json!([{"index": i, "id": id, "type": "function", "function": {"name": "echo", "arguments": ""}}]),
        )
    };
    let args = |i: u64, a: &str| chat(json!([{"index": i, "function": {"arguments": a}}]));
    assembler.push_event(start(0, "a")).unwrap();
    let events = assembler.push_event(args(0, "{\"text\": \"x\"}")).unwrap();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Ready { .. }))
    );
    let events = assembler.push_event(start(1, "b")).unwrap();
    assert!(
        matches!(&events[0], StreamEvent::Ready { index: 0, call: Ok(c) } if c.input == json!({"text": "x"}))
    );
    // A fragment for a call already complete cannot change it.
    assert_eq!(assembler.push_event(args(0, "garbage")).unwrap(), vec![]);
    let events = assembler.push_event(chat_finish("tool_calls")).unwrap();
    assert!(
        matches!(&events[0], StreamEvent::Ready { index: 1, call: Ok(c) } if c.input == json!({}))
    );
    let end = assembler.push(Ok(Frame::Done)).unwrap();
    assert_eq!(
        end,
        vec![StreamEvent::Ended(Ending::Stopped {
            reason: Some("tool_calls".into())
        })]
    );
}

#[test]
fn chat_reads_odd_but_known_shapes() {
    let events = assemble(
        FormatChoice::Auto,
        &[
            // Several calls in one chunk, arguments as an object, no index, a custom tool.
            chat(json!([
                {"id": "a", "type": "function", "function": {"name": "echo", "arguments": {"text": "obj"}}},
                {"id": "b", "type": "custom", "custom": {"name": "x", "input": "y"}},
            ])),
            chat(json!([{"index": 2, "id": "c", "function": {"name": "echo", "arguments": "{}"}}])),
            // The same index with a new id: another call.
            chat(json!([{"index": 2, "id": "d", "function": {"name": "echo", "arguments": "{}"}}])),
            json!({"choices": [{"index": 1, "delta": {"tool_calls": [{"index": 0, "id": "other-choice"}]}}]}),
            json!({"choices": [], "usage": {"total_tokens": 3}}),
        ],
    )
    .unwrap();
    let (calls, ending) = summary(&events);
    assert_eq!(calls[0], ok(0, "a", "echo", json!({"text": "obj"})));
    assert_eq!(
        calls[1].3,
        Err(CallError::UnsupportedType {
            kind: "custom".into()
        })
    );
    assert_eq!(calls[2], ok(2, "c", "echo", json!({})));
    // No `[DONE]` nor `finish_reason`: the last call is cut.
    assert!(
        matches!(calls[3].3, Err(CallError::IncompleteArguments { .. })),
        "{calls:?}"
    );
    assert_eq!((calls.len(), ending), (4, Some(Ending::Cut)));
}

#[test]
fn a_chat_error_chunk_fails_the_stream() {
    let events = assemble(
        FormatChoice::Auto,
        &[
            chat(json!([{"index": 0, "id": "a", "type": "function", "function": {"name": "echo", "arguments": "{\"te"}}])),
            json!({"error": {"message": "The server had an error.", "type": "server_error"}}),
        ],
    )
    .unwrap();
    let (calls, ending) = summary(&events);
    assert!(matches!(
        calls[0].3,
        Err(CallError::IncompleteArguments { .. })
    ));
    assert_eq!(
        ending,
        Some(Ending::Failed {
            message: "The server had an error.".into()
        })
    );
}

#[test]
fn responses_runs_the_arguments_done_gives_and_finds_items_by_id() {
    let added = json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "echo", "arguments": ""}});
    let events = assemble(
        FormatChoice::Auto,
        &[
            added,
            // A delta naming its item by id only.
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"text\":"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 0, "arguments": "{\"text\": \"whole\"}"}),
            // Done again by `output_item.done`: already ready.
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "echo", "arguments": "{}"}}),
            // An item seen only whole.
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "echo", "arguments": "{\"text\": \"late\"}"}}),
            json!({"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}),
        ],
    )
    .unwrap();
    assert_eq!(
        summary(&events),
        (
            vec![
                ok(0, "call_1", "echo", json!({"text": "whole"})),
                ok(1, "call_2", "echo", json!({"text": "late"}))
            ],
            stopped("max_output_tokens")
        )
    );
}

#[test]
fn a_responses_end_too_large_to_read_still_ends_the_stream() {
    let limits = Limits {
        max_event_bytes: 300,
        ..Limits::default()
    };
    let mut decoder = Decoder::with_limits(FormatChoice::Auto, limits);
    let big = "x".repeat(400);
    let sse = format!(
        "event: response.created\ndata: {{\"type\":\"response.created\",\"response\":{{}}}}\n\n\
         event: response.completed\ndata: {{\"type\":\"response.completed\",\"response\":{{\"output\":\"{big}\"}}}}\n\n"
    );
    let mut events = decoder.push(sse.as_bytes()).unwrap();
    events.extend(decoder.finish().unwrap());
    assert_eq!(
        events,
        vec![StreamEvent::Ended(Ending::Stopped {
            reason: Some("completed".into())
        })]
    );
}

#[test]
fn anthropic_ignores_server_tools_text_and_late_deltas() {
    let delta = |i: u64, json: &str| json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": json}});
    let events = assemble(
        FormatChoice::Auto,
        &[
            json!({"type": "message_start", "message": {}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}}),
            delta(0, "{\"query\": \"x\"}"),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "echo", "input": {}}}),
            json!({"type": "content_block_stop", "index": 1}),
            delta(1, "late"),
            // A tool_use block whose input came whole, no deltas.
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "t2", "name": "echo", "input": {"text": "given"}}}),
            json!({"type": "content_block_stop", "index": 2}),
            // Two blocks open at once, and a repeated start.
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "t3", "name": "echo", "input": {}}}),
            json!({"type": "content_block_start", "index": 4, "content_block": {"type": "tool_use", "id": "t4", "name": "echo", "input": {}}}),
            delta(4, "{}"),
            delta(3, "{\"text\": \"three\"}"),
            json!({"type": "content_block_start", "index": 4, "content_block": {"type": "tool_use", "id": "t5", "name": "echo", "input": {}}}),
            json!({"type": "content_block_stop", "index": 3}),
            json!({"type": "content_block_stop", "index": 4}),
            json!({"type": "message_stop"}),
        ],
    )
    .unwrap();
    let (calls, ending) = summary(&events);
    assert_eq!(ending, Some(Ending::Stopped { reason: None }));
    assert_eq!(calls[0], ok(0, "t1", "echo", json!({})));
    assert_eq!(calls[1], ok(1, "t2", "echo", json!({"text": "given"})));
    assert!(
        matches!(&calls[2].3, Err(CallError::BrokenStream { .. })),
        "{calls:?}"
    );
    assert_eq!(calls[2].1.as_deref(), Some("t4"));
    assert_eq!(calls[3], ok(2, "t3", "echo", json!({"text": "three"})));
    assert_eq!(calls[4], ok(4, "t5", "echo", json!({})));
}

#[test]
fn a_reused_content_block_index_runs_no_second_call() {
    let start = |i: u64, id: &str| json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": id, "name": "echo", "input": {}}});
    let delta = |i: u64, json: &str| json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": json}});
    let stop = |i: u64| json!({"type": "content_block_stop", "index": i});
    let events = assemble(
        FormatChoice::Named(Format::Anthropic),
        &[
            start(0, "t1"),
            delta(0, "{\"text\": \"once\"}"),
            stop(0),
            // Index 0 again, after its call ended: a second call must not run.
            start(0, "t2"),
            delta(0, "{\"text\": \"twice\"}"),
            stop(0),
            start(1, "t3"),
            stop(1),
            json!({"type": "message_stop"}),
        ],
    )
    .unwrap();
    let (calls, _) = summary(&events);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[0], ok(0, "t1", "echo", json!({"text": "once"})));
    assert_eq!(
        calls[1],
        err(
            1,
            Some("t2"),
            Some("echo"),
            CallError::BrokenStream {
                tool: "echo".into(),
                reason: "the stream reused index 0".into()
            }
        )
    );
    assert!(
        calls[1]
            .3
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("reused index 0")
    );
    assert_eq!(calls[2], ok(2, "t3", "echo", json!({})));
}

#[test]
fn a_reused_output_index_runs_no_second_call() {
    let added = |i: u64, id: &str| json!({"type": "response.output_item.added", "output_index": i, "item": {"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": "echo", "arguments": ""}});
    let done = |i: u64, args: &str| json!({"type": "response.function_call_arguments.done", "output_index": i, "arguments": args});
    let events = assemble(
        FormatChoice::Named(Format::OpenAiResponses),
        &[
            json!({"type": "response.created", "response": {}}),
            added(0, "c1"),
            done(0, "{}"),
            added(0, "c2"),
            done(0, "{}"),
            json!({"type": "response.completed", "response": {"status": "completed"}}),
        ],
    )
    .unwrap();
    let (calls, _) = summary(&events);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0], ok(0, "c1", "echo", json!({})));
    assert!(
        matches!(&calls[1].3, Err(CallError::BrokenStream { reason, .. }) if reason == "the stream reused index 0"),
        "{calls:?}"
    );
}

#[test]
fn a_message_stop_with_a_block_open_cuts_it() {
    let events = assemble(
        FormatChoice::Named(Format::Anthropic),
        &[
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "echo", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"text\""}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}}),
            json!({"type": "message_stop"}),
        ],
    )
    .unwrap();
    let (calls, ending) = summary(&events);
    assert_eq!(
        calls[0].3,
        Err(CallError::IncompleteArguments {
            tool: "echo".into()
        })
    );
    assert_eq!(ending, stopped("max_tokens"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Bytes of the recorded streams with bytes flipped, dropped or repeated: never a panic,
    /// and every call that starts is answered once.
    #[test]
    fn damaged_recordings_never_panic(
        which in 0usize..4,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
        size in 1usize..200,
    ) {
        let name = ["anthropic.sse", "openai-chat.sse", "openai-responses.sse", "anthropic.ndjson"][which];
        let mut bytes = fixture(name);
        for (at, byte, op) in edits {
            let at = at.index(bytes.len());
            match op {
                0 => bytes[at] = byte,
                1 => { bytes.remove(at); }
                _ => bytes.insert(at, byte),
            }
        }
        let limits = Limits { max_calls: 2, max_argument_bytes: 40, ..Limits::default() };
        if let Ok(events) = decode_chunks(Decoder::with_limits(FormatChoice::Auto, limits), bytes.chunks(size)) {
            check(&events);
        }
    }

    /// Any bytes at all.
    #[test]
    fn any_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&bytes, FormatChoice::Auto);
    }
}
