//! End-to-end tests: the real `toolhost` binary (and library), real plugins compiled from
//! `plugins/examples` and `tests/plugins` by `scripts/build-plugins.sh`.

mod daemon;
#[allow(
    dead_code,
    reason = "shared with the host's unit tests (audit), which use other parts of it"
)]
mod golden;
mod grants;
mod harness;
#[allow(
    dead_code,
    reason = "a test issuer: not every test uses every forgery it can make"
)]
mod issuer;

mod attendance;
mod auth;
mod batch;
mod breaker;
mod budgets;
mod cli;
mod clients;
mod console;
mod credentials;
mod deadlines;
mod declarations;
mod disclosure;
mod fleet;
mod generic;
mod grep_lines;
mod host_state;
mod hostile;
mod languages;
mod layout;
mod ledger;
mod lifecycle;
mod messages;
mod network;
mod oci;
mod outcomes;
mod paths;
mod pipeline;
mod prometheus;
mod provider;
mod quotas;
mod renames;
mod sandbox;
mod scripts;
mod services;
mod sessions;
mod soak;
mod start;
mod state;
mod stderr;
mod streaming;
mod tasks;
mod telemetry;
mod wasi3;
