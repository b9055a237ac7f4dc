//! What the commands print: the tool table, a component's inspection, the audit log. Every name
//! and text that comes from a plugin or a file is escaped before it reaches the terminal.

use std::io::Write;

use serde_json::Value;

use super::{Failure, print_json, usage};
use toolhost::audit::{self, Filter};
use toolhost::host::Host;
use toolhost::registry::{PluginStatus, Registry};
use toolhost_policy::config::Config;
use toolhost_policy::text::one_line;

/// `list`: the tools with their plugin, hints and grants, then every rejected plugin and hidden tool.
pub(super) fn list(registry: &Registry, json: bool) -> Result<u8, Failure> {
    let catalog = registry.catalog();
    let config = registry.config();
    if json {
        let tools: Vec<Value> = catalog
            .tools
            .values()
            .map(|t| {
                let p = &t.plugin.policy;
                serde_json::json!({
                    "name": t.spec.name,
                    "plugin": t.plugin.name,
                    "title": t.spec.title,
                    "description": t.spec.description,
                    "hints": t.spec.hints,
                    "permission_subject": t.spec.permission_subject,
                    "input_schema": t.spec.input_schema,
                    "output_schema": t.spec.output_schema,
                    "grants": {
                        "dirs": p.grants.dirs.iter().map(|d| serde_json::json!({
                            "host": d.host, "guest": d.guest, "read_only": d.read_only,
                        })).collect::<Vec<_>>(),
                        "env": p.grants.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                    },
                })
            })
            .collect();
        let out = serde_json::json!({ "tools": tools, "plugins": catalog.plugins });
        print_json(&out)?;
        return Ok(0);
    }
    let mut out = String::new();
    for t in catalog.tools.values() {
        let h = t.spec.hints;
        let hints: Vec<&str> = [
            (h.read_only, "read-only"),
            (h.destructive, "destructive"),
            (h.idempotent, "idempotent"),
            (h.open_world, "open-world"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        let grants: Vec<String> = t
            .plugin
            .policy
            .grants
            .dirs
            .iter()
            .map(|d| {
                format!(
                    "{}:{}",
                    one_line(&d.host.display().to_string()),
                    if d.read_only { "ro" } else { "rw" }
                )
            })
            .chain(
                t.plugin
                    .policy
                    .grants
                    .env
                    .iter()
                    .map(|(k, _)| format!("env:{}", one_line(k))),
            )
            .collect();
        out.push_str(&format!(
            "{:<20} {:<10} [{}] grants: {}\n    {}\n",
            t.spec.name,
            one_line(&t.plugin.name),
            hints.join(", "),
            if grants.is_empty() {
                "none".into()
            } else {
                grants.join(", ")
            },
            one_line(t.spec.description.lines().next().unwrap_or_default())
        ));
    }
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
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    Ok(0)
}

/// `inspect`: a component's imports and exports, whether it loads, and for a generic component the
/// tools (with their schemas) its exported functions become and the functions that cannot be tools.
pub(super) fn inspect(file: &std::path::Path) -> Result<u8, Failure> {
    let bytes = std::fs::read(file).map_err(|source| Failure::Read {
        what: file.display().to_string(),
        source,
    })?;
    let mut out = std::io::stdout().lock();
    // Every name here comes from the file: shown escaped.
    let shown = file.display().to_string();
    let shown = one_line(&shown);
    match Host::inspect(&bytes)? {
        Err(e) => {
            writeln!(out, "{shown}: {}", one_line(&e.to_string()))?;
            Ok(1)
        }
        Ok(i) => {
            writeln!(out, "{shown}")?;
            writeln!(out, "imports:")?;
            for name in &i.imports {
                writeln!(out, "  {}", one_line(name))?;
            }
            writeln!(out, "exports:")?;
            for name in &i.exports {
                writeln!(out, "  {}", one_line(name))?;
            }
            for s in &i.skipped {
                writeln!(
                    out,
                    "not a tool: {}: {}",
                    one_line(&s.export),
                    one_line(&s.reason)
                )?;
            }
            match &i.problem {
                None if i.tools.is_empty() => {
                    writeln!(out, "fits the toolhost:plugin@0.1.0 contract")?;
                    Ok(0)
                }
                None => {
                    writeln!(out, "a generic component: each exported function is a tool")?;
                    for t in &i.tools {
                        writeln!(out, "tool {} ({})", t.name, one_line(&t.export.path()))?;
                        writeln!(out, "  {}", one_line(&t.description))?;
                        let schema =
                            |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
                        writeln!(
                            out,
                            "  input schema: {}",
                            schema(&t.input_schema).replace('\n', "\n  ")
                        )?;
                        if let Some(output) = &t.output_schema {
                            let shown = schema(output).replace('\n', "\n  ");
                            writeln!(out, "  output schema: {shown}")?;
                        }
                    }
                    Ok(0)
                }
                Some(p) => {
                    writeln!(out, "does not load: {}", one_line(p))?;
                    Ok(1)
                }
            }
        }
    }
}

/// `audit`: matching records as JSONL, or the per-tool summary.
pub(super) fn show_audit(
    config: &Config,
    filter: &Filter,
    records: bool,
    json: bool,
) -> Result<u8, Failure> {
    let path = config
        .audit_path
        .as_ref()
        .ok_or_else(|| usage("the audit log is disabled in the config"))?;
    let reader = audit::read_records(path)?;
    let mut kept = Vec::new();
    for r in reader {
        match r {
            Ok(rec) if filter.matches(&rec) => kept.push(rec),
            Ok(_) => {}
            Err(e) => tracing::warn!("{}", one_line(&e.to_string())),
        }
    }
    let mut out = std::io::stdout().lock();
    if records {
        for r in &kept {
            let line = serde_json::to_string(r).map_err(Failure::Render)?;
            writeln!(out, "{line}")?;
        }
    } else {
        let summary = audit::summarize(kept.iter());
        if json {
            let text = serde_json::to_string_pretty(&summary).map_err(Failure::Render)?;
            writeln!(out, "{text}")?;
        } else {
            write!(out, "{}", audit::render_table(&summary))?;
        }
    }
    out.flush()?;
    Ok(0)
}
