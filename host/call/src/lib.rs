//! The types every tool call shares, from the front ends through the pipeline to the audit log:
//! outcomes, error kinds and progress ([`call`]), text made safe to show ([`text`]), tool specs and
//! hints ([`tool`]), JSON Pointer paths ([`pointer`](mod@pointer)), and generic plugins' WIT types
//! and values ([`wit`]).
//!
//! Pure: no wasmtime, no MCP, no async runtime, no I/O. Every other toolhost crate builds on this one,
//! so it depends on none of them.

#![forbid(unsafe_code)]

pub mod call;
pub mod pointer;
pub mod text;
pub mod tool;
pub mod wit;
