//! The pooling instance allocator: slots for instances, memories, tables and fiber stacks reserved once,
//! so that a call's fresh instance reuses a warm slot (its memory image mapped copy-on-write and reset in
//! place) instead of mapping, faulting in and unmapping memory and a stack on every call.

use toolhost_config::config::PoolOptions;
use wasmtime::{Enabled, PoolingAllocationConfig};

/// Core module instances a component may hold on average (Rust plugins have three or four; dynamically
/// linked Python ones more). Slots are counters, not memory, so this is generous.
const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
/// Linear memories per component on average: one for nearly every toolchain.
const MEMORIES_PER_COMPONENT: u32 = 2;
/// Tables per component on average: the main module's, and the shims the component tooling adds.
const TABLES_PER_COMPONENT: u32 = 4;
/// Elements per table: interpreters (Python, JS) have tables of tens of thousands of functions.
/// Reserved as address space only (8 bytes each).
const TABLE_ELEMENTS: usize = 100_000;
/// Defined memories and tables per core module: more than one is rare, but it exists.
const MEMORIES_PER_MODULE: u32 = 2;
const TABLES_PER_MODULE: u32 = 4;
/// Bytes of a finished instance's memory reset in place rather than dropped with `madvise`, so that the
/// next call in the slot does not fault them in again; where the kernel has `PAGEMAP_SCAN` (Linux 6.7+)
/// only the pages the call dirtied are reset. A Rust guest's stack and heap sit in its first megabyte or
/// two. Measured with echo: calls about 2x faster than with `madvise` alone (the guest's own run 4x).
const MEMORY_KEEP_RESIDENT: usize = 2 << 20;
/// The same for tables.
const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// The pooling configuration for `options`.
pub(crate) fn pooling_config(options: &PoolOptions) -> PoolingAllocationConfig {
    let n = options.instances;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(n)
        .total_core_instances(n.saturating_mul(CORE_INSTANCES_PER_COMPONENT))
        .total_memories(n.saturating_mul(MEMORIES_PER_COMPONENT))
        .total_tables(n.saturating_mul(TABLES_PER_COMPONENT))
        .total_stacks(n)
        .max_memory_size(options.memory_bytes)
        .max_memories_per_module(MEMORIES_PER_MODULE)
        .max_tables_per_module(TABLES_PER_MODULE)
        .table_elements(TABLE_ELEMENTS);
    // Without PAGEMAP_SCAN, resetting in place means a memset of the whole kept range after every call,
    // which costs more than the page faults it saves (measured: 1 MiB kept made echo calls 1.6x slower).
    if PoolingAllocationConfig::is_pagemap_scan_available() {
        pool.linear_memory_keep_resident(MEMORY_KEEP_RESIDENT)
            .table_keep_resident(TABLE_KEEP_RESIDENT)
            .pagemap_scan(Enabled::Yes);
    }
    pool
}
