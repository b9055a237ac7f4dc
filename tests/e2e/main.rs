//! End-to-end tests: the real `toolhost` binary (and library), real plugins compiled from
//! `plugins/examples` and `tests/plugins` by `scripts/build-plugins.sh`.

mod harness;

mod cli;
mod pipeline;
mod sandbox;
