//! The audit log: append-only JSONL, a line when a call starts running and one when it ends. It
//! records; it never decides.
//!
//! A call that passes the gate gets a [`BeginRecord`] line before its plugin runs (so a daemon killed
//! mid-call still shows what was running), and every call, run or refused, gets one [`AuditRecord`]
//! line when it ends, `"v"` first, every field present except `input`:
//!
//! ```text
//! {"v":2,"event":"end","call_id":"0190a5c4-7d2e-7b3a-9c1f-2f6f0e4b8a11","parent_id":"batch-7","origin":"mcp",
//!  "ts_start":"2025-06-01T12:00:00.000123Z","ts_end":"2025-06-01T12:00:00.042123Z",
//!  "tool":"fetch_url","plugin":"net-tools","plugin_digest":"sha256:…","plugin_source":"plugins/net-tools.wasm",
//!  "input_sha256":"…64 hex digits…",
//!  "decision":{"kind":"allowed","by":"rule allow: net.example.com"},
//!  "coercions":["timeout: \"5\" -> 5"],"outcome":"ok","error_kind":null,"duration_us":42000,
//!  "fuel_used":1250000,"peak_memory_bytes":2097152,"output_bytes":1024,"truncated":false}
//! ```
//!
//! (shown wrapped; on disk it is one line: `tests/golden/audit/record.v2.jsonl` is the golden copy of a
//! begin and an end line, refreshed with `BLESS=1`; v1 logs, end lines without `event`, still read).
//! `plugin_digest` and `plugin_source` name exactly which component ran: its `sha256:` digest and its
//! `source` (`oci://…`, `https://…`) or file; lines written before they existed read them as null.
//! Writers: [`AuditLog`]. Readers: [`read_records`] (which pairs the lines of a call and reports a
//! begin line without its end as outcome `unfinished`), [`Filter`], [`summarize`], [`render_table`];
//! and [`query`], which pages the log newest first for the console without reading all of it.

mod begin;
mod breaker;
mod hash;
pub mod index;
mod line;
pub mod query;
mod reader;
mod record;
mod summary;
mod writer;

#[cfg(test)]
#[path = "../../tests/e2e/golden.rs"]
#[allow(
    dead_code,
    reason = "the e2e suite's golden-file module; the audit tests use part of it"
)]
mod golden;

pub use self::begin::BeginRecord;
pub use self::breaker::BreakerNote;
pub use self::hash::{canonical_json, input_sha256};
pub use self::reader::{Filter, ReadError, Records, read_records};
pub use self::record::{AuditRecord, Decision, Event, Outcome, SCHEMA_VERSION, UnknownOutcome};
pub use self::summary::{Summary, ToolSummary, render_table, summarize};
pub use self::writer::{AuditError, AuditLog};

#[cfg(test)]
mod testdir {
    use std::path::{Path, PathBuf};

    /// A fresh directory under the system temp dir, removed on drop.
    pub(super) struct TestDir(PathBuf);

    impl TestDir {
        pub(super) fn new() -> Self {
            let path =
                std::env::temp_dir().join(format!("toolhost-audit-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }

        pub(super) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TestDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
