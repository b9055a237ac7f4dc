//! The LLM batch parser on arbitrary text, in each of its four modes (auto, anthropic, openai,
//! openai-responses): it must never panic, and what it returns must hold together: the named
//! format is kept, ids of runnable calls are unique, every runnable call has an id and a name,
//! auto-detection agrees with `detect`, the answer has one item per call, and the run plan covers
//! every call exactly once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolhost_wire::batch::{
    self, BatchReport, CallResult, Format, FormatChoice, MAX_CALLS, Sharing, partition,
};
use toolhost_call::call::{CallOutcome, ErrorKind};

const CHOICES: [FormatChoice; 4] = [
    FormatChoice::Auto,
    FormatChoice::Named(Format::Anthropic),
    FormatChoice::Named(Format::OpenAi),
    FormatChoice::Named(Format::OpenAiResponses),
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let choice = CHOICES[usize::from(selector) % CHOICES.len()];
    let Ok(batch) = batch::parse_text(&text, choice) else {
        return;
    };

    assert!(
        batch.calls.len() <= MAX_CALLS,
        "{} calls",
        batch.calls.len()
    );
    if let FormatChoice::Named(f) = choice {
        assert_eq!(batch.format, f);
    } else {
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(batch::detect(&value), Ok(batch.format));
    }
    let mut ids = std::collections::HashSet::new();
    for call in batch.calls.iter().flatten() {
        assert!(
            !call.id.is_empty() && !call.name.is_empty(),
            "a runnable call has an id and a name"
        );
        assert!(
            ids.insert(call.id.clone()),
            "duplicate id {} left runnable",
            call.id
        );
    }

    // Answer every call (errors where the parser said so) and check the shape of the answer.
    let results: Vec<CallResult> = batch
        .calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let (id, name) = batch::id_and_name(call);
            CallResult {
                index,
                id: id.map(str::to_owned),
                name: name.map(str::to_owned),
                outcome: match call {
                    Ok(c) => CallOutcome::ok(format!("c{index}"), c.input.to_string(), None),
                    Err(b) => CallOutcome::failed(
                        format!("c{index}"),
                        ErrorKind::InvalidInput,
                        b.error.to_string(),
                    ),
                },
            }
        })
        .collect();
    let report = BatchReport {
        batch_id: "b".into(),
        format: batch.format,
        results,
    };
    let answer = report.answer();
    let items = match batch.format {
        Format::Anthropic => answer["content"].as_array().unwrap().len(),
        Format::OpenAi | Format::OpenAiResponses => answer.as_array().unwrap().len(),
    };
    assert_eq!(items, batch.calls.len());
    let reparsed: Value = serde_json::from_str(&answer.to_string()).unwrap();
    assert_eq!(reparsed, answer);

    // The plan: every call exactly once, in order, groups within the limit.
    let sharing: Vec<Sharing> = batch
        .calls
        .iter()
        .map(
            |c| match batch::id_and_name(c).1.map(str::len).unwrap_or(0) % 2 {
                0 => Sharing::Shared,
                _ => Sharing::Exclusive,
            },
        )
        .collect();
    let limit = usize::from(selector >> 2) % 9;
    let groups = partition(&sharing, limit);
    let mut next = 0;
    for g in &groups {
        assert_eq!(g.start, next);
        assert!(!g.is_empty() && g.len() <= limit.max(1));
        if g.len() > 1 {
            assert!(sharing[g.clone()].iter().all(|s| *s == Sharing::Shared));
        }
        next = g.end;
    }
    assert_eq!(next, batch.calls.len());
});
