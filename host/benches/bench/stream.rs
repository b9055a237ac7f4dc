//! Part `stream`: time to the last tool result when the model's streaming response is run as it
//! arrives (each call starting once its arguments are complete) against collecting the whole
//! message first and then running it as a batch, on the same stream with the same token timing,
//! in-process, rounds interleaved.
//!
//! The stream is an Anthropic Messages one, as the API sends it: the model writes a few sentences
//! before each of three tool calls, one event every [`GAP`] (about 40 events a second, ~3 tokens
//! each: a fast model). Three kinds of tool: `sleep` (the hostile fixture's, 250 ms in a host call:
//! a tool that waits on I/O, as `fetch` does), the same declared not read-only (so that each call
//! runs alone, as writes do), and `echo` (done in microseconds).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost::batch::stream::{Decoder, StreamEvent};
use toolhost::batch::{self, BatchOptions, FormatChoice};
use toolhost::exec::Pipeline;

use crate::Options;
use crate::report::{Report, Row, Section, us};
use crate::setup::{Workspace, pipeline as build_pipeline, plugin_file};

/// Between two events of the stream.
const GAP: Duration = Duration::from_millis(25);

/// Text deltas the model writes before each call.
const SENTENCES: usize = 12;

/// An Anthropic stream with one call per input, each after some text; SSE events in order.
fn recording(tool: &str, inputs: &[Value]) -> Vec<String> {
    let sse = |e: Value| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap());
    let mut events = vec![sse(json!({"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "content": [],
        "model": "claude-sonnet-4-5", "stop_reason": null, "usage": {"input_tokens": 900, "output_tokens": 1}
    }}))];
    let mut index = 0;
    for (i, input) in inputs.iter().enumerate() {
        events.push(sse(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}})));
        for _ in 0..SENTENCES {
            events.push(sse(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": "Let me look "}})));
        }
        events.push(sse(json!({"type": "content_block_stop", "index": index})));
        index += 1;
        events.push(sse(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": tool, "input": {}}})));
        let text = input.to_string();
        let cut = text.len() / 2;
        for part in [&text[..cut], &text[cut..]] {
            events.push(sse(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": part}})));
        }
        events.push(sse(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    events.push(sse(json!({"type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 120}})));
    events.push(sse(json!({"type": "message_stop"})));
    events
}

/// The recording as a body that arrives one event every [`GAP`], starting now.
fn arriving(
    events: Vec<String>,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Unpin + Send {
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    tokio::spawn(async move {
        for event in events {
            tokio::time::sleep(GAP).await;
            if tx.send(Ok(bytes::Bytes::from(event))).await.is_err() {
                return;
            }
        }
    });
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Run as it arrives: from the first event's send to the last result.
async fn streamed(p: &Arc<Pipeline>, events: Vec<String>) -> Result<Duration, String> {
    let started = Instant::now();
    let opened = batch::open(Decoder::new(FormatChoice::Auto), arriving(events))
        .await
        .map_err(|e| e.to_string())?;
    let options = BatchOptions::default();
    let done = opened
        .run(
            p,
            &batch::new_batch_id(),
            &options,
            &CancellationToken::new(),
            |_| {},
        )
        .await;
    check(&done.report)?;
    Ok(started.elapsed())
}

/// Collect the whole message, then run it as a batch.
async fn collected(p: &Arc<Pipeline>, events: Vec<String>) -> Result<Duration, String> {
    use futures_util::StreamExt;
    let started = Instant::now();
    let mut body = arriving(events);
    let mut decoder = Decoder::new(FormatChoice::Auto);
    let mut ready = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        ready.extend(decoder.push(&chunk).map_err(|e| e.to_string())?);
    }
    ready.extend(decoder.finish().map_err(|e| e.to_string())?);
    let format = decoder.format().ok_or("no format")?;
    let calls = ready.into_iter().filter_map(|e| match e {
        StreamEvent::Ready { index, call } => Some((index, call)),
        _ => None,
    });
    let whole = toolhost::batch::stream::batch(format, calls);
    let report = batch::run(
        p,
        &batch::new_batch_id(),
        whole,
        &BatchOptions::default(),
        &CancellationToken::new(),
        |_| {},
    )
    .await;
    check(&report)?;
    Ok(started.elapsed())
}

fn check(report: &batch::BatchReport) -> Result<(), String> {
    match report.results.iter().find(|r| r.outcome.is_error()) {
        Some(r) => Err(format!("a call failed: {}", r.outcome.content)),
        None if report.results.len() == 3 => Ok(()),
        None => Err(format!("{} results, not 3", report.results.len())),
    }
}

/// One scenario: its label, extra config, the tool and its inputs.
struct Case {
    label: &'static str,
    toml: &'static str,
    tool: &'static str,
    input: Value,
}

/// Part `stream`.
pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let cases = [
        Case {
            label: "3 reads of a 250 ms tool (I/O-bound, as fetch)",
            toml: "",
            tool: "sleep",
            input: json!({"ms": 250}),
        },
        Case {
            label: "3 writes of a 250 ms tool (each runs alone)",
            toml: "[plugins.hostile.tools.sleep]\nread-only = false\n",
            tool: "sleep",
            input: json!({"ms": 250}),
        },
        Case {
            label: "3 calls of echo (microseconds)",
            toml: "",
            tool: "echo",
            input: json!({"text": "hello, world"}),
        },
    ];
    let events = recording("echo", &vec![json!({}); 3]).len();
    let mut s = Section::new(format!(
        "7. Streamed batches: time to the last result, run as the stream arrives vs collected first ({events} events, one every {} ms; {} rounds, interleaved)",
        GAP.as_millis(),
        o.rounds
    ));
    for case in &cases {
        let ws = Workspace::new(
            &[
                ("echo", plugin_file("echo")),
                ("hostile", plugin_file("hostile")),
            ],
            &format!("[permissions]\nmode = \"bypass\"\n{}", case.toml),
        )?;
        let p = build_pipeline(&ws).await?;
        let inputs = vec![case.input.clone(); 3];
        let (mut run_as_it_comes, mut collect_first) = (Vec::new(), Vec::new());
        for _ in 0..o.rounds {
            run_as_it_comes.push(us(streamed(&p, recording(case.tool, &inputs)).await?) / 1000.0);
            collect_first.push(us(collected(&p, recording(case.tool, &inputs)).await?) / 1000.0);
        }
        s.row(
            Row::new(format!("{}: streamed", case.label), "ms", run_as_it_comes)
                .vs("collected first", collect_first.clone()),
        );
        s.row(Row::new(
            format!("{}: collected first", case.label),
            "ms",
            collect_first,
        ));
    }
    s.note(format!(
        "Both start the clock when the stream starts; the stream itself takes about {} ms. \
         Streamed, each call runs while the model writes the next one, so a tool's time hides \
         behind the generation; collected, every call waits for the whole message.",
        (events as u64) * GAP.as_millis() as u64
    ));
    report.add(s);
    Ok(())
}
