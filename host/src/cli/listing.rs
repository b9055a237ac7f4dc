//! `toolhost list`: each tool with its plugin, hints, everything its plugin is granted (directories
//! with their mode, network destinations, env and secret names, never values) and what the gate
//! decides for it under the configured mode ([`Permissions::preview`], the pipeline's own
//! decision); then every rejected plugin and hidden tool. Every name and text that comes from a
//! plugin or a file is escaped before it reaches the terminal.

use std::io::Write;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Failure, print_json};
use toolhost::registry::{PluginStatus, Registry, Tool};
use toolhost_call::text::one_line;
use toolhost_gate::gate::{Decision, Preview};
use toolhost_gate::grants::Grants;

/// `list`, as a table or (`json`) one document.
pub(super) fn list(registry: &Registry, json: bool) -> Result<u8, Failure> {
    let catalog = registry.catalog();
    if json {
        let tools: Vec<Value> = catalog.tools.values().map(tool_json).collect();
        let out = json!({ "tools": tools, "plugins": catalog.plugins });
        print_json(&out)?;
        return Ok(0);
    }
    let mut out = String::new();
    for t in catalog.tools.values() {
        let grants = grant_words(&t.plugin.policy.grants);
        out.push_str(&format!(
            "{:<20} {:<10} [{}] gate: {} grants: {}\n    {}\n",
            t.spec.name,
            one_line(&t.plugin.name),
            hint_words(t).join(", "),
            gate_words(&t.plugin.policy.permissions.preview(&t.spec)),
            if grants.is_empty() {
                "none".into()
            } else {
                grants.join(", ")
            },
            one_line(t.spec.description.lines().next().unwrap_or_default())
        ));
    }
    plugin_lines(registry, &mut out);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    Ok(0)
}

/// One tool of `list --json`.
fn tool_json(t: &Arc<Tool>) -> Value {
    let p = &t.plugin.policy;
    let g = &p.grants;
    let preview = p.permissions.preview(&t.spec);
    json!({
        "name": t.spec.name,
        "plugin": t.plugin.name,
        "title": t.spec.title,
        "description": t.spec.description,
        "hints": t.spec.hints,
        "permission_subject": t.spec.permission_subject,
        "input_schema": t.spec.input_schema,
        "output_schema": t.spec.output_schema,
        "gate": {
            "mode": p.permissions.mode().as_str(),
            "decision": decision_word(&preview.decision),
            "reason": preview.decision.reason(),
            "except": preview.except,
        },
        "grants": {
            "dirs": g.dirs.iter().map(|d| json!({
                "host": d.host, "guest": d.guest, "read_only": d.read_only,
                "mode": if d.read_only { "ro" } else { "rw" }, "exclude": d.exclude,
            })).collect::<Vec<_>>(),
            "env": g.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            "network": g.network.as_ref().map(|n| json!({
                "allow": n.allow.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "allow_private": n.allow_private,
            })),
            "secrets": g.secrets.iter().map(|s| json!({
                "name": s.name,
                "env": s.env,
                "header": s.header.as_ref().map(|h| &h.name),
            })).collect::<Vec<_>>(),
            "caller_secrets": g.caller_secrets.iter().map(|s| json!({
                "name": s.name,
                "from": from_caller(s),
                "header": s.header,
            })).collect::<Vec<_>>(),
            "calls": g.calls.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        },
    })
}

/// The plugins' lines: where each loaded plugin is from, each rejected one and why, hidden tools
/// and functions not served; or that the folder has no tools.
fn plugin_lines(registry: &Registry, out: &mut String) {
    let catalog = registry.catalog();
    let config = registry.config();
    for (name, status) in &catalog.plugins {
        match status {
            PluginStatus::Rejected { reason, .. } => {
                out.push_str(&format!(
                    "plugin {} rejected: {}\n",
                    one_line(name),
                    one_line(reason)
                ));
            }
            PluginStatus::Loaded {
                hidden,
                provenance,
                skipped,
                ..
            } => {
                let signature = provenance
                    .signature
                    .as_ref()
                    .map(|s| format!(", {s}"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "plugin {} from {} {}{signature}\n",
                    one_line(name),
                    one_line(&provenance.source),
                    provenance.digest
                ));
                for (tool, owner) in hidden {
                    out.push_str(&format!(
                        "plugin {}: tool {tool} hidden (plugin {} provides it; set a prefix)\n",
                        one_line(name),
                        one_line(owner)
                    ));
                }
                for s in skipped {
                    out.push_str(&format!(
                        "plugin {}: function {} not served: {}\n",
                        one_line(name),
                        one_line(&s.export),
                        one_line(&s.reason)
                    ));
                }
            }
        }
    }
    if catalog.tools.is_empty() {
        let dir = config.plugins_dir.display().to_string();
        out.push_str(&format!("no tools in {}\n", one_line(&dir)));
    }
}

fn hint_words(t: &Tool) -> Vec<&'static str> {
    let h = t.spec.hints;
    [
        (h.read_only, "read-only"),
        (h.destructive, "destructive"),
        (h.idempotent, "idempotent"),
        (h.open_world, "open-world"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect()
}

fn decision_word(d: &Decision) -> &'static str {
    match d {
        Decision::Allow { .. } => "allow",
        Decision::Ask { .. } => "ask",
        Decision::Deny { .. } => "deny",
    }
}

/// `allow`, or `ask (except: deny `write_file(./secret/**)`)` when rules depend on the input.
fn gate_words(p: &Preview) -> String {
    let word = decision_word(&p.decision);
    if p.except.is_empty() {
        return word.to_owned();
    }
    format!("{word} (except: {})", one_line(&p.except.join(", ")))
}

/// Every grant in a few words: `work:rw`, `work:ro at /data`, `env:LANG`,
/// `net:https://api.github.com:443`, `net:private`, `secret:token (env TOKEN, header authorization)`.
pub(super) fn grant_words(g: &Grants) -> Vec<String> {
    let mut words = Vec::new();
    for d in &g.dirs {
        let mode = if d.read_only { "ro" } else { "rw" };
        let host = d.host.display().to_string();
        let host = one_line(&host);
        words.push(match d.guest.as_str() {
            "." => format!("{host}:{mode}"),
            guest => format!("{host}:{mode} at {}", one_line(guest)),
        });
    }
    words.extend(g.env.iter().map(|(k, _)| format!("env:{}", one_line(k))));
    if let Some(n) = &g.network {
        words.extend(
            n.allow
                .iter()
                .map(|d| format!("net:{}", one_line(&d.to_string()))),
        );
        if n.allow_private {
            words.push("net:private".to_owned());
        }
    }
    for s in &g.secrets {
        let mut how = Vec::new();
        if let Some(env) = &s.env {
            how.push(format!("env {}", one_line(env)));
        }
        if let Some(h) = &s.header {
            how.push(format!("header {}", one_line(&h.name)));
        }
        words.push(format!("secret:{} ({})", one_line(&s.name), how.join(", ")));
    }
    for s in &g.caller_secrets {
        words.push(format!(
            "secret:{} ({}, header {})",
            one_line(&s.name),
            one_line(&from_caller(s)),
            one_line(&s.header)
        ));
    }
    words.extend(g.calls.iter().map(|p| format!("calls:{}", p.as_str())));
    words
}

/// Where a caller's credential comes from: `caller's github` or `exchanged for AUDIENCE`.
fn from_caller(s: &toolhost_gate::network::CallerSecret) -> String {
    match &s.source {
        toolhost_gate::network::CallerSource::Profile(name) => format!("caller's {name}"),
        toolhost_gate::network::CallerSource::Exchange(x) => format!(
            "exchanged for {}",
            x.audience
                .as_deref()
                .or(x.resource.as_deref())
                .unwrap_or_default()
        ),
    }
}
