//! The wire formats of LLM APIs ([`batch`]): an assistant message's tool calls from the Anthropic
//! Messages, OpenAI Chat Completions or OpenAI Responses API in, whole or streamed, and the tool
//! results in that API's shape out.
//!
//! Pure: no wasmtime, no MCP, no async runtime, no I/O. The host's batch API reads and writes the
//! bytes; this crate only parses and shapes them.

#![forbid(unsafe_code)]

pub mod batch;
