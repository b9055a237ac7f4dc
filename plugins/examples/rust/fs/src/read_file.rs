//! `read_file`: a text file's content, whole or a range of lines.

use std::fs;

use serde::Deserialize;
use serde_json::json;

use crate::exports::toolhost::plugin::tool::{ToolError, ToolOutput, ToolSpec};
use crate::lines::looks_binary;
use crate::tool::{failed, invalid, io_failed, object_schema, parse, plural, spec, text_only};
use crate::toolhost::plugin::types::ToolHints;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFileInput {
    path: String,
    start_line: Option<u64>,
    end_line: Option<u64>,
}

pub(crate) fn call(input: &str) -> Result<ToolOutput, ToolError> {
    let ReadFileInput {
        path,
        start_line,
        end_line,
    } = parse("read_file", input)?;
    if start_line == Some(0) || end_line == Some(0) {
        return Err(invalid(
            "line numbers start at 1; 'start_line' and 'end_line' must be >= 1",
        ));
    }
    if let (Some(s), Some(e)) = (start_line, end_line)
        && e < s
    {
        return Err(invalid(format!(
            "'end_line' ({e}) is before 'start_line' ({s}); both are inclusive and 1-based"
        )));
    }
    let meta = fs::metadata(&path).map_err(|e| io_failed("read", &path, e))?;
    if meta.is_dir() {
        return Err(failed(format!(
            "cannot read '{path}': it is a directory; use list_dir to see its entries"
        )));
    }
    let bytes = fs::read(&path).map_err(|e| io_failed("read", &path, e))?;
    if looks_binary(&bytes) {
        return Err(failed(format!(
            "cannot read '{path}': it looks like a binary file ({} bytes, contains NUL bytes); \
             read_file only returns text",
            bytes.len()
        )));
    }
    let text = String::from_utf8_lossy(&bytes);
    if start_line.is_none() && end_line.is_none() {
        return Ok(text_only(text.into_owned()));
    }
    let total = text.split_inclusive('\n').count() as u64;
    let start = start_line.unwrap_or(1);
    if start > total {
        return Err(invalid(format!(
            "'start_line' {start} is past the end of '{path}', which has {}",
            plural(total, "line", "lines")
        )));
    }
    let end = end_line.unwrap_or(total).min(total);
    let selected: String = text
        .split_inclusive('\n')
        .skip((start - 1) as usize)
        .take((end - start + 1) as usize)
        .collect();
    Ok(text_only(selected))
}

pub(crate) fn describe() -> ToolSpec {
    spec(
        "read_file",
        "Read file",
        "Read a text file and return its content. Give start_line and/or end_line (1-based, \
         inclusive) to read only part of a large file.",
        object_schema(
            json!({
                "path": { "type": "string", "description": "Path of the file to read." },
                "start_line": {
                    "type": "integer", "minimum": 1,
                    "description": "First line to return (1-based, inclusive). Default: 1."
                },
                "end_line": {
                    "type": "integer", "minimum": 1,
                    "description": "Last line to return (1-based, inclusive). Default: the last line."
                }
            }),
            &["path"],
        ),
        ToolHints::READ_ONLY | ToolHints::IDEMPOTENT,
    )
}
