use serde_json::json;

use super::*;
use crate::batch::calls::MAX_CALLS;

pub(in crate::batch) fn auto(v: Value) -> Batch {
    parse(&v, FormatChoice::Auto).unwrap()
}

/// (id, name, input) of every call.
pub(in crate::batch) type Summary<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Result<&'a Value, &'a CallError>,
);

pub(in crate::batch) fn summary(b: &Batch) -> Vec<Summary<'_>> {
    b.calls
        .iter()
        .map(|c| {
            let (id, name) = id_and_name(c);
            (id, name, c.as_ref().map(|c| &c.input).map_err(|b| &b.error))
        })
        .collect()
}

#[test]
fn a_repeated_id_is_not_run_twice() {
    let b = auto(json!([
        {"type": "tool_use", "id": "x", "name": "write", "input": {}},
        {"type": "tool_use", "id": "x", "name": "write", "input": {}}
    ]));
    assert!(b.calls[0].is_ok());
    assert_eq!(
        b.calls[1].as_ref().map_err(|b| &b.error).err(),
        Some(&CallError::DuplicateId { id: "x".into() })
    );
}

#[test]
fn detection_needs_a_mark_and_refuses_mixtures() {
    for v in [
        json!({}),
        json!([]),
        json!(null),
        json!("text"),
        json!({"role": "assistant", "content": "hi"}),
    ] {
        assert_eq!(
            parse(&v, FormatChoice::Auto),
            Err(ParseError::Undetected),
            "{v}"
        );
    }
    let mixed = json!([{"type": "tool_use"}, {"type": "function_call"}]);
    assert!(matches!(
        parse(&mixed, FormatChoice::Auto),
        Err(ParseError::Ambiguous { .. })
    ));
}

#[test]
fn a_named_format_reads_messages_without_calls_and_refuses_other_shapes() {
    let text_only = json!({"role": "assistant", "content": "done"});
    assert!(
        parse(&text_only, FormatChoice::Named(Format::Anthropic))
            .unwrap()
            .calls
            .is_empty()
    );
    assert!(
        parse(&text_only, FormatChoice::Named(Format::OpenAi))
            .unwrap()
            .calls
            .is_empty()
    );
    let e = parse(&text_only, FormatChoice::Named(Format::OpenAiResponses)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not an OpenAI Responses message: expected an array of output items, or a response object with an `output` array"
    );
    assert!(parse(&json!(3), FormatChoice::Named(Format::Anthropic)).is_err());
    assert!(parse(&json!({"choices": []}), FormatChoice::Named(Format::OpenAi)).is_err());
}

#[test]
fn refuses_more_than_the_maximum_of_calls() {
    let block = json!({"type": "function_call", "call_id": "c", "name": "echo"});
    let items = Value::Array(vec![block; MAX_CALLS + 1]);
    assert_eq!(
        parse(&items, FormatChoice::Auto),
        Err(ParseError::TooManyCalls { max: MAX_CALLS })
    );
}

#[test]
fn invalid_json_text_is_a_parse_error() {
    assert!(matches!(
        parse_text("{", FormatChoice::Auto),
        Err(ParseError::NotJson(_))
    ));
    let deep = "[".repeat(10_000);
    assert!(matches!(
        parse_text(&deep, FormatChoice::Auto),
        Err(ParseError::NotJson(_))
    ));
}

#[test]
fn never_panics_on_odd_values() {
    let odd = [
        json!({"content": [null, 1, "x", {"type": "tool_use"}, {"type": "tool_use", "id": 5, "name": ["x"]}]}),
        json!({"tool_calls": [{"id": "a", "function": "calc"}, {"id": "b", "type": 3, "function": {"name": "x", "arguments": 4}}]}),
        json!({"choices": [1]}),
        json!({"choices": {"0": {}}}),
        json!({"output": [{"type": "function_call", "call_id": "", "name": ""}]}),
        json!([{"type": "function", "function": {}}]),
    ];
    for v in odd {
        for choice in ["auto", "anthropic", "openai", "openai-responses"] {
            let _ = parse(&v, choice.parse().unwrap());
        }
    }
}
