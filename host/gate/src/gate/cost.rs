//! A static bound on what validating one JSON value against a schema can cost, computed when a
//! plugin loads. The validator re-evaluates a subschema once for every path that reaches it
//! (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`), so 2 KB of
//! nested alternatives over shared definitions can mean 2^40 evaluations of a single value.
//! Schemas whose bound passes [`MAX_EVALUATIONS`] are refused, and so are `$ref` cycles that never
//! descend into the value (the validator would recurse until the stack overflows).
//!
//! The bound over-estimates in most ways (every alternative is counted as evaluated, every pattern
//! as matching) and under-estimates in two: keyword work inside one evaluation (regexes,
//! `uniqueItems`) is not counted, and for an invalid value the validator re-walks failing `anyOf`
//! branches to describe them, at most once more per nesting level. The input size limits and the
//! check deadline in `exec` bound what is left. Pure code, no I/O.

mod graph;
#[cfg(test)]
mod tests;

use std::collections::HashSet;

use serde_json::Value;

use self::graph::{Graph, Profile, display};

/// Most subschema evaluations one value (one node of the input or output) may need. Ten thousand
/// is two orders of magnitude above the schemas of real tools (a few dozen, a few hundred for
/// large OpenAPI-derived ones) and keeps one value's validation under about a millisecond.
pub const MAX_EVALUATIONS: u64 = 10_000;

/// Deepest value considered: serde_json, which parses every input and output, stops at 128.
const MAX_DEPTH: usize = 128;

/// Distinct evaluation profiles explored exactly; beyond this they are merged (an upper bound).
const MAX_PROFILES: usize = 512;

/// Why a schema is too costly to validate against.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CostError {
    /// Too many subschema evaluations for one value.
    #[error(
        "validating one value could take {count} subschema evaluations (the limit is {MAX_EVALUATIONS}); \
         the subschema at {location} alone {times} times (for a value nested {depth} deep). Nested \
         anyOf/oneOf/allOf/not over $ref multiply: refer to shared definitions fewer times, or flatten \
         the alternatives"
    )]
    TooCostly {
        /// Evaluations counted (saturated).
        count: u64,
        /// A JSON pointer to the subschema evaluated most often.
        location: String,
        /// How often.
        times: u64,
        /// How deep in the value.
        depth: usize,
    },
    /// A cycle of references that applies to the same value forever.
    #[error(
        "the references {cycle} form a cycle that never descends into the value: validating would \
         recurse forever"
    )]
    Cycle {
        /// The subschemas of the cycle, as JSON pointers joined by ` -> `.
        cycle: String,
    },
}

/// The most subschema evaluations one value can need under `schema`, or why it is refused.
pub(super) fn estimate(schema: &Value) -> Result<u64, CostError> {
    let graph = Graph::build(schema);
    let order = graph.topological_order()?;
    let closure = |start: Profile| -> Profile { graph.closure(start, &order) };
    let mut worst = 0;
    let mut check = |p: &Profile, depth: usize| -> Result<(), CostError> {
        let count = p.values().fold(0u64, |a, &n| a.saturating_add(n));
        worst = worst.max(count);
        if count > MAX_EVALUATIONS {
            let (&node, &times) = p.iter().max_by_key(|(_, n)| **n).unwrap_or((&0, &0));
            return Err(CostError::TooCostly {
                count,
                location: display(&graph.nodes[node].location).to_owned(),
                times,
                depth,
            });
        }
        Ok(())
    };
    let start = closure(Profile::from([(0, 1)]));
    check(&start, 0)?;
    let mut seen: HashSet<Vec<(usize, u64)>> = HashSet::new();
    seen.insert(start.iter().map(|(&k, &v)| (k, v)).collect());
    let mut frontier = vec![start];
    for depth in 1..=MAX_DEPTH {
        let mut next = Vec::new();
        for profile in &frontier {
            for label in graph.labels(profile) {
                let stepped = closure(graph.step(profile, &label));
                if stepped.is_empty() {
                    continue;
                }
                check(&stepped, depth)?;
                if seen.insert(stepped.iter().map(|(&k, &v)| (k, v)).collect()) {
                    next.push(stepped);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        if seen.len() > MAX_PROFILES && next.len() > 1 {
            // Each profile is bounded by their element-wise maximum, and so are its descendants.
            let mut merged = Profile::new();
            for p in next {
                for (k, v) in p {
                    let slot = merged.entry(k).or_insert(0);
                    *slot = (*slot).max(v);
                }
            }
            next = vec![merged];
        }
        frontier = next;
    }
    Ok(worst)
}

/// Evaluations below which a check may run on the caller's thread: well under a millisecond.
/// Above it, `exec` moves the check to its validation pool, under a deadline.
pub const INLINE_EVALUATIONS: u64 = 20_000;

/// Whether checking `value` against a schema that costs `per_value` evaluations per value surely
/// stays under [`INLINE_EVALUATIONS`]. Every value and member name counts once, and a string once
/// more per 16 bytes: a coercion may parse it into values, a `pattern` scans it. Stops walking as
/// soon as the answer is no, so a huge value costs no more than a small one here.
pub(super) fn is_quick(per_value: u64, value: &Value) -> bool {
    let per_value = per_value.max(1);
    let budget = INLINE_EVALUATIONS / per_value;
    let mut weight = 0u64;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        weight += 1;
        match value {
            Value::String(s) => weight += s.len() as u64 / 16,
            Value::Array(items) => stack.extend(items),
            Value::Object(members) => {
                for (name, member) in members {
                    weight += 1 + name.len() as u64 / 16;
                    stack.push(member);
                }
            }
            _ => {}
        }
        if weight > budget {
            return false;
        }
    }
    true
}
