//! A WASI 0.3 plugin for the host's tests: `toolhost:plugin@0.2.0`, whose `call` is async.
//!
//! - `echo {text}`: the text back.
//! - `stream {parts}`: streams each part as partial output, then returns them all.
//! - `progress {steps}`: streams progress `1..=steps` of `steps`, then returns "done".
//! - `flood {text}`: writes partial updates of `text` until the host stops reading; returns how
//!   many it took.
//! - `twice`: hands the host two streams; returns whether the second one was read.
//! - `wait {ms, tasks}`: `tasks` waits of `ms` each, at once (WASI 0.3 clocks); returns the time
//!   they took together, in ms.
//! - `spin`: never returns, never waits.
//! - `print {text}`: writes the text to stdout, returns nothing.
//! - `leak {name, split}`: streams the env var `name` as partial output (in two halves with
//!   `split`) and returns it.
//! - `grow {mb}`: holds `mb` MiB at once, then returns.
//! - `read {path}`: the file's text (std's filesystem, which is WASI 0.2's, behind the host's guard).

wit_bindgen::generate!({
    path: "../../../wit/v0.2",
    world: "plugin",
});

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use serde_json::{Value, json};
use toolhost::plugin::host;
use toolhost::plugin::types::{Progress, ToolHints, Update};
use wasip3::clocks::monotonic_clock;

struct Fixture;

fn spec(name: &str, properties: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: None,
        description: format!("async fixture: {name}"),
        input_schema: json!({ "type": "object", "properties": properties }).to_string(),
        output_schema: None,
        hints: ToolHints::READ_ONLY,
        permission_subject: None,
    }
}

fn out(content: impl Into<String>) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput {
        content: content.into(),
        structured: None,
    })
}

impl Guest for Fixture {
    fn describe() -> Vec<ToolSpec> {
        vec![
            spec("echo", json!({ "text": { "type": "string" } })),
            spec("stream", json!({ "parts": { "type": "integer" } })),
            spec("progress", json!({ "steps": { "type": "integer" } })),
            spec("flood", json!({ "text": { "type": "string" } })),
            spec("twice", json!({})),
            spec(
                "wait",
                json!({ "ms": { "type": "integer" }, "tasks": { "type": "integer" } }),
            ),
            spec("spin", json!({})),
            spec("print", json!({ "text": { "type": "string" } })),
            spec(
                "leak",
                json!({ "name": { "type": "string" }, "split": { "type": "boolean" } }),
            ),
            spec("grow", json!({ "mb": { "type": "integer" } })),
            spec("read", json!({ "path": { "type": "string" } })),
        ]
    }

    async fn call(name: String, input: String) -> Result<ToolOutput, ToolError> {
        let input: Value =
            serde_json::from_str(&input).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
        let number = |key: &str, default: u64| input[key].as_u64().unwrap_or(default);
        let text = input["text"].as_str().unwrap_or_default().to_owned();
        match name.as_str() {
            "echo" => out(text),
            "stream" => {
                let (mut tx, rx) = wit_stream::new::<Update>();
                host::updates(rx);
                let mut whole = String::new();
                for i in 0..number("parts", 3) {
                    let part = format!("part {i};");
                    whole.push_str(&part);
                    tx.write_one(Update::Partial(part)).await;
                }
                out(whole)
            }
            "progress" => {
                let (mut tx, rx) = wit_stream::new::<Update>();
                host::updates(rx);
                let steps = number("steps", 3);
                for done in 1..=steps {
                    let p = Progress {
                        done,
                        total: Some(steps),
                        message: format!("step {done}"),
                    };
                    tx.write_one(Update::Progress(p)).await;
                }
                out("done")
            }
            "flood" => {
                let (mut tx, rx) = wit_stream::new::<Update>();
                host::updates(rx);
                let mut taken = 0u64;
                while tx.write_one(Update::Partial(text.clone())).await.is_none() {
                    taken += 1;
                    if taken > 1_000_000 {
                        return Err(ToolError::Failed("the host never stopped reading".into()));
                    }
                }
                out(taken.to_string())
            }
            "twice" => {
                let (_first, rx) = wit_stream::new::<Update>();
                host::updates(rx);
                let (mut second, rx) = wit_stream::new::<Update>();
                host::updates(rx);
                let refused = second.write_one(Update::Partial("again".into())).await;
                out(if refused.is_some() {
                    "second refused"
                } else {
                    "second read"
                })
            }
            "wait" => {
                let ms = number("ms", 100);
                let started = monotonic_clock::now();
                let waits =
                    (0..number("tasks", 1)).map(|_| monotonic_clock::wait_for(ms * 1_000_000));
                futures::future::join_all(waits).await;
                out(((monotonic_clock::now() - started) / 1_000_000).to_string())
            }
            "spin" => {
                let mut n = 0u64;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "print" => {
                println!("{text}");
                out("")
            }
            "leak" => {
                let value =
                    std::env::var(input["name"].as_str().unwrap_or_default()).unwrap_or_default();
                let (mut tx, rx) = wit_stream::new::<Update>();
                host::updates(rx);
                if input["split"].as_bool() == Some(true) {
                    // In two halves, as a plugin getting around a per-update redaction would.
                    let (first, second) = value.split_at(value.len() / 2);
                    tx.write_one(Update::Partial(first.to_owned())).await;
                    tx.write_one(Update::Partial(second.to_owned())).await;
                } else {
                    tx.write_one(Update::Partial(value.clone())).await;
                }
                out(value)
            }
            "grow" => {
                let held = vec![1u8; (number("mb", 1) as usize) << 20];
                out(std::hint::black_box(held).len().to_string())
            }
            "read" => std::fs::read_to_string(input["path"].as_str().unwrap_or_default())
                .map_err(|e| ToolError::Failed(e.to_string()))
                .and_then(out),
            other => Err(ToolError::InvalidInput(format!("no tool {other}"))),
        }
    }
}

export!(Fixture);
