//! The recorded streams of `tests/streams/`: the calls each gives, the same whatever the chunks,
//! line ends or framing, and what a cut, failed or malformed one gives.

use serde_json::json;

use super::*;
use crate::batch::{Format, parse};

/// The three calls every complete recording makes: echo, fs_write, echo.
fn three_calls(ids: [&str; 3]) -> Vec<Summary> {
    vec![
        ok(0, ids[0], "echo", json!({"text": "héllo, wörld"})),
        ok(
            1,
            ids[1],
            "fs_write",
            json!({"path": "out.txt", "content": "line one\nline two: \"quoted\" ✓\n"}),
        ),
        ok(2, ids[2], "echo", json!({"text": "saved"})),
    ]
}

const ANTHROPIC_IDS: [&str; 3] = [
    "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
    "toolu_01A09q90qw90lq917835lq9",
    "toolu_01Vh7SgdVAtsRYNvHHH6bLWv",
];
const CHAT_IDS: [&str; 3] = [
    "call_DdmO9pD3xa9XTPNJ32zg2hcA",
    "call_ABQpbVXL9lHfsd1S9GcmnB8T",
    "call_3TK3xWc0M4PoBgoOWeU1Xd6F",
];
const RESPONSES_IDS: [&str; 3] = [
    "call_unLAR8MvFNptuiZK6K6HCy5k",
    "call_9aJs3HKtbJGr7V3wEoMh2Qdx",
    "call_kT0zQ4b2Yh7WmN1pR5sV8xLc",
];

const ALL: [&str; 10] = [
    "anthropic.sse",
    "anthropic.ndjson",
    "anthropic-cut.sse",
    "anthropic-overloaded.sse",
    "anthropic-malformed.sse",
    "openai-chat.sse",
    "openai-chat-cut.sse",
    "openai-chat-malformed.sse",
    "openai-responses.sse",
    "openai-responses-cut.sse",
];

#[test]
fn reads_the_calls_of_each_recorded_stream() {
    let cases = [
        (
            "anthropic.sse",
            Format::Anthropic,
            ANTHROPIC_IDS,
            "tool_use",
        ),
        (
            "anthropic.ndjson",
            Format::Anthropic,
            ANTHROPIC_IDS,
            "tool_use",
        ),
        ("openai-chat.sse", Format::OpenAi, CHAT_IDS, "tool_calls"),
        (
            "openai-responses.sse",
            Format::OpenAiResponses,
            RESPONSES_IDS,
            "completed",
        ),
    ];
    for (name, format, ids, reason) in cases {
        for choice in [FormatChoice::Auto, FormatChoice::Named(format)] {
            let mut decoder = Decoder::new(choice);
            let mut events = decoder.push(&fixture(name)).unwrap();
            events.extend(decoder.finish().unwrap());
            check(&events);
            assert_eq!(decoder.format(), Some(format), "{name}");
            assert_eq!(
                summary(&events),
                (three_calls(ids), stopped(reason)),
                "{name}"
            );
        }
    }
}

#[test]
fn any_split_of_the_bytes_gives_the_same_frames() {
    let frames = |chunks: &[&[u8]]| {
        let mut framer = Framer::new(MAX_EVENT_BYTES);
        let mut frames: Vec<_> = chunks.iter().flat_map(|c| framer.push(c)).collect();
        frames.extend(framer.finish());
        frames
    };
    for name in ALL {
        let text = String::from_utf8(fixture(name)).unwrap();
        for text in [text.clone(), text.replace('\n', "\r\n")] {
            // Event by event (a framer starts each the same way), at every byte boundary, a
            // UTF-8 character's inner ones included: splitting the whole stream at every byte
            // would take minutes in a debug build.
            let end = match (name.ends_with(".ndjson"), text.contains('\r')) {
                (true, false) => "\n",
                (true, true) => "\r\n",
                (false, false) => "\n\n",
                (false, true) => "\r\n\r\n",
            };
            for event in text.split_inclusive(end) {
                let bytes = event.as_bytes();
                let whole = frames(&[bytes]);
                for at in 0..=bytes.len() {
                    let (a, b) = bytes.split_at(at);
                    assert_eq!(frames(&[a, b]), whole, "{name} {event:?} split at {at}");
                }
            }
        }
    }
}

#[test]
fn chunks_of_any_size_give_the_same_events() {
    for name in ALL {
        let bytes = fixture(name);
        let whole = decode(&bytes, FormatChoice::Auto).unwrap();
        // The assembler sees the same frames, whatever the chunks: a sample of splits suffices.
        for at in (0..=bytes.len()).step_by(17) {
            let (a, b) = bytes.split_at(at);
            let split = decode_chunks(Decoder::new(FormatChoice::Auto), [a, b]).unwrap();
            assert_eq!(split, whole, "{name} split at {at}");
        }
        for size in [1, 2, 3, 5, 64, 1000] {
            let chunked = decode_chunks(Decoder::new(FormatChoice::Auto), bytes.chunks(size));
            assert_eq!(chunked.unwrap(), whole, "{name} in chunks of {size}");
        }
    }
}

#[test]
fn crlf_line_ends_and_comments_change_nothing() {
    for name in ALL.into_iter().filter(|n| n.ends_with(".sse")) {
        let bytes = fixture(name);
        let whole = decode(&bytes, FormatChoice::Auto).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let crlf = text.replace('\n', "\r\n");
        assert_eq!(
            decode(crlf.as_bytes(), FormatChoice::Auto).unwrap(),
            whole,
            "{name}"
        );
        let commented = format!(
            ": OPENROUTER PROCESSING\n\n{}",
            text.replace("\n\n", "\n: keep-alive\n\n")
        );
        assert_eq!(
            decode(commented.as_bytes(), FormatChoice::Auto).unwrap(),
            whole,
            "{name}"
        );
    }
}

#[test]
fn sse_and_ndjson_of_the_same_events_read_the_same() {
    assert_eq!(
        decode(&fixture("anthropic.sse"), FormatChoice::Auto).unwrap(),
        decode(&fixture("anthropic.ndjson"), FormatChoice::Auto).unwrap()
    );
}

#[test]
fn shows_each_call_while_it_arrives_then_makes_it_ready() {
    let events = decode(&fixture("openai-responses.sse"), FormatChoice::Auto).unwrap();
    let of_call = |index: usize| -> Vec<&StreamEvent> {
        events
            .iter()
            .filter(|e| match e {
                StreamEvent::Pending(p) => p.index == index,
                StreamEvent::Ready { index: i, .. } => *i == index,
                StreamEvent::Ended(_) => false,
            })
            .collect()
    };
    let write = of_call(1);
    let StreamEvent::Pending(first) = write[0] else {
        panic!("{write:?}")
    };
    assert_eq!(
        (first.id.as_deref(), first.name.as_deref(), &first.input),
        (Some(RESPONSES_IDS[1]), Some("fs_write"), &None)
    );
    let inputs: Vec<&Value> = write
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Pending(p) => p.input.as_ref(),
            _ => None,
        })
        .collect();
    assert!(inputs.contains(&&json!({"path": "out.txt"})), "{inputs:?}");
    assert!(
        inputs.iter().any(|i| i["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("line one") && c.len() < 20)),
        "{inputs:?}"
    );
    assert!(matches!(write.last(), Some(StreamEvent::Ready { .. })));
    // The first call is ready before the second is shown: it can run while the model writes.
    let ready_0 = events
        .iter()
        .position(|e| matches!(e, StreamEvent::Ready { index: 0, .. }));
    let shown_1 = events
        .iter()
        .position(|e| matches!(e, StreamEvent::Pending(p) if p.index == 1));
    assert!(ready_0 < shown_1);
}

#[test]
fn a_cut_stream_runs_the_complete_calls_and_answers_the_open_one() {
    for (name, ids) in [
        ("anthropic-cut.sse", ANTHROPIC_IDS),
        ("openai-chat-cut.sse", CHAT_IDS),
        ("openai-responses-cut.sse", RESPONSES_IDS),
    ] {
        let events = decode(&fixture(name), FormatChoice::Auto).unwrap();
        let incomplete = CallError::IncompleteArguments {
            tool: "fs_write".into(),
        };
        let mut want = three_calls(ids);
        want.truncate(1);
        want.push(err(1, Some(ids[1]), Some("fs_write"), incomplete.clone()));
        assert_eq!(summary(&events), (want, Some(Ending::Cut)), "{name}");
        assert_eq!(
            incomplete.to_string(),
            "The arguments of this call to 'fs_write' were cut off before they were complete; it \
             was not run. Send the call again with its complete arguments."
        );
    }
}

#[test]
fn a_failed_stream_runs_the_complete_calls_and_says_why_it_ended() {
    let events = decode(&fixture("anthropic-overloaded.sse"), FormatChoice::Auto).unwrap();
    let (calls, ending) = summary(&events);
    assert_eq!(calls[0], three_calls(ANTHROPIC_IDS)[0]);
    assert!(matches!(
        calls[1].3,
        Err(CallError::IncompleteArguments { .. })
    ));
    assert_eq!(
        ending,
        Some(Ending::Failed {
            message: "Overloaded".into()
        })
    );
}

#[test]
fn malformed_calls_are_answered_one_by_one() {
    let events = decode(&fixture("anthropic-malformed.sse"), FormatChoice::Auto).unwrap();
    let (calls, ending) = summary(&events);
    assert_eq!(ending, stopped("tool_use"));
    let errors: Vec<Option<&CallError>> = calls.iter().map(|c| c.3.as_ref().err()).collect();
    assert_eq!(calls[0], ok(0, "toolu_01", "echo", json!({"text": "fine"})));
    assert_eq!(errors[1], Some(&CallError::MissingId { field: "id" }));
    assert!(matches!(errors[2], Some(CallError::ArgumentsNotJson { tool, .. }) if tool == "echo"));
    assert_eq!(
        errors[3],
        Some(&CallError::DuplicateId {
            id: "toolu_01".into()
        })
    );
    // The delta for a block that never started: a call with no id.
    assert_eq!((calls[4].1.as_ref(), calls[4].2.as_ref()), (None, None));
    assert_eq!(errors[4], Some(&CallError::MissingId { field: "id" }));
    // Open when a line that is not JSON came: part of its arguments may be lost.
    let Some(CallError::BrokenStream { tool, reason }) = errors[5] else {
        panic!("{:?}", errors[5])
    };
    assert_eq!(tool, "echo");
    assert!(
        reason.starts_with("an event of the stream is not JSON"),
        "{reason}"
    );
    assert_eq!(
        calls[6],
        ok(6, "toolu_06", "echo", json!({"text": "still runs"}))
    );

    let events = decode(&fixture("openai-chat-malformed.sse"), FormatChoice::Auto).unwrap();
    let (calls, ending) = summary(&events);
    assert_eq!(ending, stopped("tool_calls"));
    let errors: Vec<Option<&CallError>> = calls.iter().map(|c| c.3.as_ref().err()).collect();
    assert_eq!(errors[0], None);
    assert_eq!(errors[1], Some(&CallError::MissingId { field: "id" }));
    assert!(matches!(
        errors[2],
        Some(CallError::ArgumentsNotJson { .. })
    ));
    assert_eq!(
        errors[3],
        Some(&CallError::MissingName {
            field: "function.name"
        })
    );
    assert_eq!(
        calls[4],
        ok(4, "call_5", "echo", json!({"text": "still runs"}))
    );
}

#[test]
fn the_calls_of_a_stream_are_the_batch_of_its_final_message() {
    // `response.completed` repeats the whole output: read whole, it is the same batch.
    let bytes = fixture("openai-responses.sse");
    let text = String::from_utf8(bytes.clone()).unwrap();
    let completed = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|e| e["type"] == "response.completed")
        .unwrap();
    let whole = parse(&completed["response"], FormatChoice::Auto).unwrap();
    let events = decode(&bytes, FormatChoice::Auto).unwrap();
    let ready = events.into_iter().filter_map(|e| match e {
        StreamEvent::Ready { index, call } => Some((index, call)),
        _ => None,
    });
    let mut ready: Vec<_> = ready.collect();
    ready.reverse();
    assert_eq!(batch(Format::OpenAiResponses, ready), whole);
}
