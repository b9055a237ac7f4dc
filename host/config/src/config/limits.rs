//! `[limits]` and `[plugins.NAME.limits]`: the sandbox's limits, the result and input bounds, and
//! how far nested tool calls may go, each checked once (a bad value is a config error, exit 2).
//! A plugin's section starts from the global one.

use std::time::Duration;

use toolhost_gate::gate::InputLimits;
use toolhost_gate::grants::{Limits, Nesting};

use super::{ConfigError, RawLimits, invalid};
use crate::config::PluginPolicy;

/// One `limits` table, resolved.
pub(super) struct Resolved {
    pub(super) limits: Limits,
    pub(super) output_bytes: usize,
    pub(super) input: InputLimits,
    pub(super) nesting: Nesting,
}

/// `raw` over `parent`'s limits (the global ones for a plugin; the defaults for the global ones);
/// `key` names the table in errors.
pub(super) fn resolve_limits(
    raw: &RawLimits,
    parent: Option<&PluginPolicy>,
    key: &str,
) -> Result<Resolved, ConfigError> {
    let mut r = match parent {
        Some(p) => Resolved {
            limits: p.limits,
            output_bytes: p.output_bytes,
            input: p.input,
            nesting: p.nesting,
        },
        None => Resolved {
            limits: Limits::default(),
            output_bytes: 256 << 10,
            input: InputLimits::default(),
            nesting: Nesting::default(),
        },
    };
    let positive = |v: u64, field: &str| {
        if v == 0 {
            Err(invalid(format!("{key}.{field}"), "must be greater than 0"))
        } else {
            Ok(v)
        }
    };
    if let Some(v) = raw.timeout_ms {
        r.limits.timeout = Duration::from_millis(positive(v, "timeout-ms")?);
    }
    if let Some(v) = raw.fuel {
        r.limits.fuel = positive(v, "fuel")?;
    }
    if let Some(v) = raw.memory_mb {
        if !(1..=4096).contains(&v) {
            return Err(invalid(
                format!("{key}.memory-mb"),
                "must be between 1 and 4096",
            ));
        }
        r.limits.memory_bytes = (v as usize) << 20;
    }
    if let Some(v) = raw.stdio_kb {
        r.limits.stdio_bytes = (v as usize) << 10;
    }
    if let Some(v) = raw.output_kb {
        r.output_bytes = (positive(v, "output-kb")? as usize) << 10;
    }
    if let Some(v) = raw.max_input_kb {
        r.input.max_bytes = (positive(v, "max-input-kb")? as usize) << 10;
    }
    if let Some(v) = raw.max_input_depth {
        r.input.max_depth = positive(v as u64, "max-input-depth")? as usize;
    }
    if let Some(v) = raw.nested_calls {
        if v > 10_000 {
            return Err(invalid(
                format!("{key}.nested-calls"),
                "must be at most 10000 (0 forbids nested calls)",
            ));
        }
        r.nesting.calls = v;
    }
    if let Some(v) = raw.nesting_depth {
        if v > 8 {
            return Err(invalid(
                format!("{key}.nesting-depth"),
                "must be at most 8 (0 forbids nested calls)",
            ));
        }
        r.nesting.depth = v;
    }
    Ok(r)
}

impl super::Config {
    /// How deep the deepest tree of nested calls may grow: the largest `nesting-depth` of a plugin
    /// granted `call-tools` (0 when none is). A front end that runs `n` calls at once needs
    /// `n * (1 + this)` sandboxes for them, since a calling call waits in its own.
    pub fn deepest_nesting(&self) -> u32 {
        self.plugins
            .values()
            .filter(|p| !p.grants.calls.is_empty())
            .map(|p| p.nesting.depth)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests;
