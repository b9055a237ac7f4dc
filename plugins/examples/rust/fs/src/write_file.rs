//! `write_file`: create a file or replace its whole content.

use std::fs;
use std::io;
use std::path::Path;

use serde::Deserialize;
use serde_json::json;

use crate::exports::toolhost::plugin::tool::{ToolError, ToolOutput, ToolSpec};
use crate::tool::{failed, invalid, io_failed, object_schema, parse, plural, spec, text_only};
use crate::toolhost::plugin::types::ToolHints;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteFileInput {
    path: String,
    content: String,
}

pub(crate) fn call(input: &str) -> Result<ToolOutput, ToolError> {
    let WriteFileInput { path, content } = parse("write_file", input)?;
    if path.is_empty() {
        return Err(invalid("'path' must not be empty"));
    }
    let existed = match fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            return Err(failed(format!(
                "cannot write '{path}': it is a directory; give the path of a file"
            )));
        }
        Ok(_) => true,
        Err(_) => false,
    };
    if let Some(parent) = Path::new(&path).parent()
        && !parent.as_os_str().is_empty()
    {
        match fs::metadata(parent) {
            Ok(meta) if !meta.is_dir() => {
                return Err(failed(format!(
                    "cannot write '{path}': '{}' is not a directory",
                    parent.display()
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(failed(format!(
                    "cannot write '{path}': the parent directory '{}' does not exist \
                     (write_file does not create directories)",
                    parent.display()
                )));
            }
            _ => {}
        }
    }
    fs::write(&path, content.as_bytes()).map_err(|e| io_failed("write", &path, e))?;
    Ok(text_only(format!(
        "wrote {} to '{path}' ({})",
        plural(content.len() as u64, "byte", "bytes"),
        if existed {
            "replaced the existing file"
        } else {
            "created a new file"
        }
    )))
}

pub(crate) fn describe() -> ToolSpec {
    spec(
        "write_file",
        "Write file",
        "Create a file, or replace the whole content of an existing one, with the given text. \
         The parent directory must already exist. To change part of a file use edit_file.",
        object_schema(
            json!({
                "path": { "type": "string", "minLength": 1, "description": "Path of the file to write." },
                "content": { "type": "string", "description": "The file's complete new content." }
            }),
            &["path", "content"],
        ),
        ToolHints::DESTRUCTIVE | ToolHints::IDEMPOTENT,
    )
}
