//! End-to-end tests: the real `toolhost` binary (and library), real plugins compiled from
//! `plugins/examples` and `tests/plugins` by `scripts/build-plugins.sh`.

mod daemon;
mod harness;

mod batch;
mod cli;
mod languages;
mod network;
mod pipeline;
mod sandbox;
mod soak;

// Not yet part of the suite: several of their tests failed in the last landing's run (issue 7 stays open).
// mod clients;
// mod hostile;
