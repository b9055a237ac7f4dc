//! The `fs` example plugin: read, list, search, write and edit files.
//!
//! The plugin does no confinement of its own: it uses `std::fs` with each path exactly as given,
//! and the host decides what the plugin can see by preopening directories (a granted directory is
//! normally mounted at the guest path `.`, so relative paths resolve against it). Every error names
//! the path and the OS error, so that a model can correct its call.
//!
//! One module per tool, each with its input, its call and its spec; `tool` holds what they share.

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "plugin",
});

mod edit_file;
mod grep;
mod lines;
mod list_dir;
mod read_file;
mod tool;
mod write_file;

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};

struct Fs;

impl Guest for Fs {
    fn describe() -> Vec<ToolSpec> {
        vec![
            read_file::describe(),
            list_dir::describe(),
            grep::describe(),
            write_file::describe(),
            edit_file::describe(),
        ]
    }

    fn call(name: String, input: String) -> Result<ToolOutput, ToolError> {
        match name.as_str() {
            "read_file" => read_file::call(&input),
            "list_dir" => list_dir::call(&input),
            "grep" => grep::call(&input),
            "write_file" => write_file::call(&input),
            "edit_file" => edit_file::call(&input),
            _ => Err(tool::invalid(format!(
                "unknown tool '{name}'; this plugin provides read_file, list_dir, grep, \
                 write_file and edit_file"
            ))),
        }
    }
}

export!(Fs);
