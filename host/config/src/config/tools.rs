//! `[plugins.NAME.tools.TOOL]`: what the operator says about one tool, over what the plugin
//! declares. A generic plugin's plain WIT cannot declare hints or a permission subject and may
//! carry no docs, so this is where they come from; a contract plugin's may be corrected too.
//! Also the tool's own `breaker`, over the plugin's.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use toolhost_call::tool::{Hints, is_valid_name};
use toolhost_gate::breaker::BreakerPolicy;

use super::breaker::resolve_breaker;
use super::{ConfigError, RawBreaker, invalid};

/// The file's table, as written.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawToolOverride {
    /// Replaces the title.
    pub title: Option<String>,
    /// Replaces the description.
    pub description: Option<String>,
    /// The tool does not change its environment (so it needs no approval under `ask` defaults).
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data.
    pub destructive: Option<bool>,
    /// Calling it twice has no further effect.
    pub idempotent: Option<bool>,
    /// The tool talks to the open world.
    pub open_world: Option<bool>,
    /// The JSON pointer into the input that permission rules match.
    pub permission_subject: Option<String>,
    /// When this tool is suspended, over the plugin's breaker.
    pub breaker: Option<RawBreaker>,
    /// Each caller's share of this tool: calls per window, calls at once, fuel per window.
    pub quota: Option<toolhost_gate::quota::RawQuota>,
}

/// One tool's override, checked.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ToolOverride {
    raw: RawToolOverride,
    breaker: Option<BreakerPolicy>,
    quota: Option<toolhost_gate::quota::Quota>,
}

impl ToolOverride {
    /// Apply to what the plugin declared.
    pub fn apply(
        &self,
        title: &mut Option<String>,
        description: &mut String,
        hints: &mut Hints,
        permission_subject: &mut Option<String>,
    ) {
        let o = &self.raw;
        if let Some(t) = &o.title {
            *title = Some(t.clone());
        }
        if let Some(d) = &o.description {
            description.clone_from(d);
        }
        for (given, hint) in [
            (o.read_only, &mut hints.read_only),
            (o.destructive, &mut hints.destructive),
            (o.idempotent, &mut hints.idempotent),
            (o.open_world, &mut hints.open_world),
        ] {
            if let Some(on) = given {
                *hint = on;
            }
        }
        if let Some(p) = &o.permission_subject {
            *permission_subject = Some(p.clone());
        }
    }

    /// The tool's own breaker policy, when its table has a `breaker`.
    pub fn breaker(&self) -> Option<&BreakerPolicy> {
        self.breaker.as_ref()
    }

    /// Each caller's share of the tool, when its table has a `quota`.
    pub fn quota(&self) -> Option<&toolhost_gate::quota::Quota> {
        self.quota.as_ref()
    }
}

/// Check every override of a plugin (`key` is `plugins.NAME`), whose tools are suspended under
/// `breaker` unless they say otherwise, and whose calls may take up to `timeout`.
pub(super) fn resolve_tools(
    raw: &BTreeMap<String, RawToolOverride>,
    key: &str,
    breaker: &BreakerPolicy,
    timeout: Duration,
) -> Result<BTreeMap<String, ToolOverride>, ConfigError> {
    let mut out = BTreeMap::new();
    for (tool, o) in raw {
        let at = |field: &str| format!("{key}.tools.{tool}.{field}");
        if !is_valid_name(tool) {
            return Err(invalid(
                format!("{key}.tools"),
                format!("{tool:?} is not a tool name (1-64 letters, digits, '_' or '-')"),
            ));
        }
        if o.description
            .as_deref()
            .is_some_and(|d| d.trim().is_empty())
        {
            return Err(invalid(at("description"), "must not be empty"));
        }
        if o.read_only == Some(true) && o.destructive == Some(true) {
            return Err(invalid(
                at("read-only"),
                "a tool cannot be both read-only and destructive",
            ));
        }
        if let Some(p) = &o.permission_subject
            && !p.starts_with('/')
        {
            return Err(invalid(
                at("permission-subject"),
                "must be a JSON pointer into the input, e.g. \"/path\"",
            ));
        }
        let breaker = o
            .breaker
            .as_ref()
            .map(|b| resolve_breaker(b, breaker, timeout, &format!("{key}.tools.{tool}.breaker")))
            .transpose()?;
        let quota = o
            .quota
            .as_ref()
            .map(toolhost_gate::quota::Quota::new)
            .transpose()
            .map_err(|(field, why)| invalid(at(&format!("quota.{field}")), why))?;
        out.insert(
            tool.clone(),
            ToolOverride {
                raw: o.clone(),
                breaker,
                quota,
            },
        );
    }
    Ok(out)
}
