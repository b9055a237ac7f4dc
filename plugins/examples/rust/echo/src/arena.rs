//! The allocator of the build without WASI (`wasm32-unknown-unknown`, see `scripts/build-plugins.sh`).
//!
//! toolhost runs every call in a fresh instance and throws it away afterwards, so nothing needs
//! to be freed for reuse: allocations are carved one after another out of an arena the module
//! declares up front, and a free inside it is a no-op. Rust's default allocator on this target
//! instead takes its first chunk with `memory.grow` in every fresh instance, which costs the host
//! a change of page protection when the memory grows and another when its slot is reset
//! (BENCHMARKS-history.md, "the same echo without WASI"). What does not fit goes to that allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, UnsafeCell};

/// Bytes served from the arena: a few pages of the module's initial memory, zeroed like the rest.
const SIZE: usize = 256 << 10;

#[repr(C, align(16))]
struct Arena {
    bytes: UnsafeCell<[u8; SIZE]>,
    /// Offset of the first free byte.
    next: Cell<usize>,
}

// SAFETY: this target has no threads (no `atomics` feature), so the arena is only ever touched by
// the one thread of the instance.
unsafe impl Sync for Arena {}

static ARENA: Arena = Arena {
    bytes: UnsafeCell::new([0; SIZE]),
    next: Cell::new(0),
};

/// A bump allocator over [`ARENA`], then [`System`].
pub struct Bump;

impl Bump {
    fn holds(ptr: *mut u8) -> bool {
        let base = ARENA.bytes.get() as usize;
        (base..base + SIZE).contains(&(ptr as usize))
    }
}

// SAFETY: every pointer handed out is aligned as `layout` asks and lies within the arena with
// `layout.size()` bytes after it that no other allocation covers (the offset only grows), or comes
// from `System`, to which only its own pointers are given back.
unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = ARENA.bytes.get() as usize;
        let start = (base + ARENA.next.get()).next_multiple_of(layout.align());
        match start.checked_add(layout.size()) {
            Some(end) if end <= base + SIZE => {
                ARENA.next.set(end - base);
                start as *mut u8
            }
            // SAFETY: the caller's contract for `layout` is passed on unchanged.
            _ => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !Self::holds(ptr) {
            // SAFETY: not from the arena, so `System.alloc` made it, with this `layout`.
            unsafe { System.dealloc(ptr, layout) }
        }
    }
}
