//! Where a call sits in a tree of nested calls, and the budget the tree shares: at most
//! `[limits] nested-calls` calls in all and `nesting-depth` levels, both read from the root's
//! plugin. Carried on a [`CallRequest`](super::CallRequest); [`super::nested`] grows the tree.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use toolhost_gate::grants::Nesting;

/// Where a call sits in a tree of nested calls: how deep, and the budget the tree shares. Set by
/// the pipeline on the calls it runs for a plugin; a front end leaves it unset (a root).
#[derive(Clone)]
pub struct Nested {
    depth: u32,
    tree: Arc<Tree>,
}

/// What a tree of nested calls may still do.
struct Tree {
    limits: Nesting,
    /// Calls the tree may still make.
    left: AtomicU32,
}

impl Nested {
    /// The root of a tree whose budget is `limits`.
    pub(super) fn root(limits: Nesting) -> Self {
        Self {
            depth: 0,
            tree: Arc::new(Tree {
                limits,
                left: AtomicU32::new(limits.calls),
            }),
        }
    }

    /// How deep this call is: 0 for a call from a front end.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// A place for one more call below this one, or why the tree may not grow.
    pub(super) fn child(&self) -> Result<Self, String> {
        let limits = self.tree.limits;
        if self.depth >= limits.depth {
            return Err(format!(
                "Refused: tool calls from inside a tool may nest {} level(s) deep \
                 (`nesting-depth` in [limits] of toolhost.toml), and this call is already that deep",
                limits.depth
            ));
        }
        let took = self
            .tree
            .left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        if took.is_err() {
            return Err(format!(
                "Refused: this call and the calls under it already made {} tool calls, the budget \
                 (`nested-calls` in [limits] of toolhost.toml); return what you have",
                limits.calls
            ));
        }
        Ok(Self {
            depth: self.depth + 1,
            tree: self.tree.clone(),
        })
    }
}
