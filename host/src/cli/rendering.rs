//! What the commands print: a component's inspection, the audit log (the tool table is `listing`'s). Every name
//! and text that comes from a plugin or a file is escaped before it reaches the terminal.

use std::io::Write;

use serde_json::Value;

use super::{Failure, usage};
use toolhost::audit::{self, Filter};
use toolhost::host::Host;
use toolhost_call::text::one_line;
use toolhost_config::config::Config;

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
                    let contract = i.contract.unwrap_or("toolhost:plugin@0.1.0");
                    writeln!(out, "fits the {contract} contract")?;
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
