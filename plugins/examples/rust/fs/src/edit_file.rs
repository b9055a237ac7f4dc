//! `edit_file`: replace the one occurrence of a string in a text file.

use std::fs;
use std::io;

use serde::Deserialize;
use serde_json::json;

use crate::exports::toolhost::plugin::tool::{ToolError, ToolOutput, ToolSpec};
use crate::tool::{failed, invalid, io_failed, object_schema, parse, plural, spec, text_only};
use crate::toolhost::plugin::types::ToolHints;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditFileInput {
    path: String,
    old_string: String,
    new_string: String,
}

/// Counts occurrences, overlapping ones included, and returns the first one's byte offset.
fn occurrences(haystack: &str, needle: &str) -> (u64, Option<usize>) {
    let mut count = 0;
    let mut first = None;
    let mut from = 0;
    while let Some(i) = haystack[from..].find(needle) {
        let at = from + i;
        first.get_or_insert(at);
        count += 1;
        from = at + haystack[at..].chars().next().map_or(1, char::len_utf8);
    }
    (count, first)
}

pub(crate) fn call(input: &str) -> Result<ToolOutput, ToolError> {
    let EditFileInput {
        path,
        old_string,
        new_string,
    } = parse("edit_file", input)?;
    if old_string.is_empty() {
        return Err(invalid("'old_string' must not be empty"));
    }
    if old_string == new_string {
        return Err(invalid(
            "'old_string' and 'new_string' are identical, so there is nothing to change",
        ));
    }
    let text = fs::read_to_string(&path).map_err(|e| {
        if e.kind() == io::ErrorKind::InvalidData {
            failed(format!(
                "cannot edit '{path}': it is not valid UTF-8 text; edit_file only edits text files"
            ))
        } else {
            io_failed("read", &path, e)
        }
    })?;
    let at = match occurrences(&text, &old_string) {
        (1, Some(at)) => at,
        (0, _) => {
            return Err(invalid(format!(
                "'old_string' was not found in '{path}' (0 occurrences); it must match the file's \
                 text exactly, including whitespace and indentation: read the file first"
            )));
        }
        (n, _) => {
            return Err(invalid(format!(
                "'old_string' occurs {n} times in '{path}'; it must occur exactly once: include \
                 more of the surrounding text to make it unique"
            )));
        }
    };
    let mut edited = String::with_capacity(text.len() - old_string.len() + new_string.len());
    edited.push_str(&text[..at]);
    edited.push_str(&new_string);
    edited.push_str(&text[at + old_string.len()..]);
    fs::write(&path, edited.as_bytes()).map_err(|e| io_failed("write", &path, e))?;
    let line = text[..at].matches('\n').count() + 1;
    Ok(text_only(format!(
        "edited '{path}': replaced 1 occurrence at line {line} ({} removed, {} inserted)",
        plural(old_string.len() as u64, "byte", "bytes"),
        plural(new_string.len() as u64, "byte", "bytes"),
    )))
}

pub(crate) fn describe() -> ToolSpec {
    spec(
        "edit_file",
        "Edit file",
        "Replace one occurrence of old_string with new_string in a text file. old_string \
         must occur exactly once in the file: include enough surrounding text to make it \
         unique, with the exact whitespace and indentation.",
        object_schema(
            json!({
                "path": { "type": "string", "description": "Path of the file to edit." },
                "old_string": {
                    "type": "string", "minLength": 1,
                    "description": "The exact text to replace; it must occur exactly once in the file."
                },
                "new_string": {
                    "type": "string",
                    "description": "The text to put in its place (may be empty to delete old_string)."
                }
            }),
            &["path", "old_string", "new_string"],
        ),
        ToolHints::empty(),
    )
}
