//! `list_dir`: a directory's entries, sorted by name, as text and as structured output.

use std::fs;

use serde::Deserialize;
use serde_json::json;

use crate::exports::toolhost::plugin::tool::{ToolError, ToolOutput, ToolSpec};
use crate::tool::{failed, io_failed, object_schema, parse, spec};
use crate::toolhost::plugin::types::ToolHints;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDirInput {
    #[serde(default = "crate::tool::dot")]
    path: String,
}

pub(crate) fn call(input: &str) -> Result<ToolOutput, ToolError> {
    let ListDirInput { path } = parse("list_dir", input)?;
    let meta = fs::metadata(&path).map_err(|e| io_failed("list", &path, e))?;
    if !meta.is_dir() {
        return Err(failed(format!(
            "cannot list '{path}': it is a file, not a directory; use read_file to read it"
        )));
    }
    let mut entries = Vec::new();
    for entry in fs::read_dir(&path).map_err(|e| io_failed("list", &path, e))? {
        let entry = entry.map_err(|e| io_failed("list", &path, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let file_type = entry
            .file_type()
            .map_err(|e| io_failed("inspect", entry.path(), e))?;
        let (kind, size, target) = if file_type.is_dir() {
            ("dir", None, None)
        } else if file_type.is_symlink() {
            let target = fs::read_link(entry.path())
                .ok()
                .map(|t| t.to_string_lossy().into_owned());
            ("symlink", None, target)
        } else if file_type.is_file() {
            ("file", entry.metadata().ok().map(|m| m.len()), None)
        } else {
            ("other", None, None)
        };
        entries.push((name, kind, size, target));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));

    let mut content = String::new();
    let mut structured = Vec::with_capacity(entries.len());
    for (name, kind, size, target) in &entries {
        match (*kind, size, target) {
            ("dir", _, _) => content.push_str(&format!("{name}/\n")),
            ("file", Some(size), _) => content.push_str(&format!("{name}  ({size} bytes)\n")),
            ("symlink", _, Some(target)) => content.push_str(&format!("{name} -> {target}\n")),
            _ => content.push_str(&format!("{name}\n")),
        }
        let mut item = json!({ "name": name, "type": kind });
        if let Some(size) = size {
            item["size"] = json!(size);
        }
        if let Some(target) = target {
            item["target"] = json!(target);
        }
        structured.push(item);
    }
    if entries.is_empty() {
        content = format!("'{path}' is an empty directory\n");
    }
    Ok(ToolOutput {
        content,
        structured: Some(json!({ "path": path, "entries": structured }).to_string()),
    })
}

pub(crate) fn describe() -> ToolSpec {
    let output = json!({
        "type": "object",
        "properties": {
            "path": { "type": "string", "description": "The directory listed, as given." },
            "entries": {
                "type": "array",
                "description": "The directory's entries, sorted by name.",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "description": "The entry's file name." },
                        "type": {
                            "type": "string",
                            "enum": ["file", "dir", "symlink", "other"],
                            "description": "The kind of entry (symbolic links are not followed)."
                        },
                        "size": { "type": "integer", "description": "Size in bytes (files only)." },
                        "target": { "type": "string", "description": "Where a symbolic link points." }
                    },
                    "required": ["name", "type"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["path", "entries"],
        "additionalProperties": false
    });
    ToolSpec {
        output_schema: Some(output.to_string()),
        ..spec(
            "list_dir",
            "List directory",
            "List the entries of a directory, one per line: directories end with '/', files \
             show their size, symbolic links show their target.",
            object_schema(
                json!({
                    "path": {
                        "type": "string", "default": ".",
                        "description": "Path of the directory to list. Default: \".\"."
                    }
                }),
                &[],
            ),
            ToolHints::READ_ONLY | ToolHints::IDEMPOTENT,
        )
    }
}
