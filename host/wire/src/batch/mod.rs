//! Batches of LLM tool calls, as wire formats: an assistant message from the Anthropic Messages,
//! OpenAI Chat Completions or OpenAI Responses API in, the tool results in that API's shape out.
//!
//! [`parse()`] reads the calls (a broken call is an error result for that call alone),
//! [`partition`] groups them (consecutive read-only calls run together, anything else alone), and
//! [`BatchReport::answer`] writes the results back in the order of the calls. [`definitions`]
//! declares the tools to each API. Each API's shapes (its calls, its answer, its tool declarations)
//! are in one module: `anthropic`, `openai` (Chat Completions), `responses` (OpenAI Responses);
//! what they share (the batch, its errors, detection, the plan) is apart. Running a batch is the
//! host's (`toolhost::batch::run`).
//!
//! A batch can also arrive as the model writes it: [`stream`] reads the APIs' streaming responses
//! and gives each call as soon as it is complete, with [`stream::Schedule`] to start it by the
//! same rule.

mod answer;
mod anthropic;
mod calls;
mod format;
mod openai;
mod parse;
mod plan;
mod responses;
mod result;
pub mod stream;
mod tools;

pub use self::answer::{BatchReport, item};
pub use self::calls::{
    Batch, BrokenCall, Call, CallError, MAX_CALLS, ParseError, ParsedCall, id_and_name,
};
pub use self::format::{Format, FormatChoice, UnknownFormat};
pub use self::parse::{detect, parse, parse_text};
pub use self::plan::{Sharing, partition};
pub use self::result::CallResult;
pub use self::tools::{definition, definitions};
