//! Batches of LLM tool calls: the wire formats are `toolhost_wire`'s ([`toolhost_wire::batch`],
//! re-exported here); [`run()`] sends each call through the [`Pipeline`](crate::exec::Pipeline)
//! with the batch as its audit parent, reads together and writes alone. Front ends (`toolhost
//! batch`, `POST /v1/tool-calls`) only move bytes; they must not reach past this module into the
//! pipeline. A batch streamed as the model writes it is run by [`open`] and [`Opened::run`]: each
//! call starts when its arguments are complete.

mod events;
mod run;
mod streamed;

pub use self::events::{answer_event, progress_event, result_event};
pub use self::run::{
    BatchOptions, DEFAULT_CONCURRENCY, ORIGIN, OnCallProgress, cut_short, new_batch_id, run,
};
pub use self::streamed::{Opened, Progress, StreamReport, open};
pub use toolhost_wire::batch::*;
