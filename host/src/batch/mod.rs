//! Batches of LLM tool calls: an assistant message from the Anthropic Messages, OpenAI Chat
//! Completions or OpenAI Responses API in, the tool results in that API's shape out.
//!
//! [`parse()`] reads the calls (pure; a broken call is an error result for that call alone),
//! [`partition`] groups them (consecutive read-only calls run together, anything else alone),
//! [`run()`] sends each through the [`Pipeline`](crate::exec::Pipeline) with the batch as its
//! audit parent, and [`BatchReport::answer`] writes the results back in the order of the calls.
//! [`definitions`] declares the tools to each API. Front ends (`toolhost batch`, `POST
//! /v1/tool-calls`) only move bytes; they must not reach past this module into the pipeline.

mod answer;
mod format;
mod parse;
mod plan;
mod run;
mod tools;

pub use self::answer::{BatchReport, CallResult, item};
pub use self::format::{Format, FormatChoice, UnknownFormat};
pub use self::parse::{
    Batch, CallError, MAX_CALLS, ParseError, ParsedCall, detect, parse, parse_text,
};
pub use self::plan::{Sharing, partition};
pub use self::run::{BatchOptions, DEFAULT_CONCURRENCY, ORIGIN, new_batch_id, run};
pub use self::tools::{definition, definitions};
