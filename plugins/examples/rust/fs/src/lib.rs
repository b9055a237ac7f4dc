//! The `fs` example plugin: read, list, search, write and edit files.
//!
//! The plugin does no confinement of its own: it uses `std::fs` with each path exactly as given,
//! and the host decides what the plugin can see by preopening directories (a granted directory is
//! normally mounted at the guest path `.`, so relative paths resolve against it). Every error names
//! the path and the OS error, so that a model can correct its call.

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "plugin",
});

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};
use toolhost::plugin::host::{self, LogLevel};
use toolhost::plugin::types::ToolHints;

/// Matches are cut to this many characters so that one minified line cannot flood the output.
const MAX_LINE_CHARS: usize = 300;
/// A file with a NUL byte in its first bytes is treated as binary.
const BINARY_SNIFF_BYTES: usize = 8000;
/// grep reports progress after this many files.
const PROGRESS_EVERY: u64 = 25;
/// Directories grep does not descend into.
const SKIPPED_DIRS: [&str; 3] = [".git", ".hg", ".svn"];
const DEFAULT_MAX_MATCHES: u64 = 200;
const MAX_MAX_MATCHES: u64 = 10_000;

fn failed(msg: impl Into<String>) -> ToolError {
    ToolError::Failed(msg.into())
}

fn invalid(msg: impl Into<String>) -> ToolError {
    ToolError::InvalidInput(msg.into())
}

/// "cannot read 'x/y.txt': No such file or directory (os error 44)".
fn io_failed(verb: &str, path: impl AsRef<Path>, err: io::Error) -> ToolError {
    failed(format!(
        "cannot {verb} '{}': {err}",
        path.as_ref().display()
    ))
}

fn parse<'a, T: Deserialize<'a>>(tool: &str, input: &'a str) -> Result<T, ToolError> {
    serde_json::from_str(input).map_err(|e| invalid(format!("invalid input for '{tool}': {e}")))
}

fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

fn text_only(content: String) -> ToolOutput {
    ToolOutput {
        content,
        structured: None,
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

// ---------------------------------------------------------------------------------------------
// read_file

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFileInput {
    path: String,
    start_line: Option<u64>,
    end_line: Option<u64>,
}

fn read_file(input: &str) -> Result<ToolOutput, ToolError> {
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

// ---------------------------------------------------------------------------------------------
// list_dir

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDirInput {
    #[serde(default = "dot")]
    path: String,
}

fn dot() -> String {
    ".".into()
}

fn list_dir(input: &str) -> Result<ToolOutput, ToolError> {
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

// ---------------------------------------------------------------------------------------------
// grep

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepInput {
    pattern: String,
    #[serde(default = "dot")]
    path: String,
    #[serde(default = "default_max_matches")]
    max_matches: u64,
    #[serde(default)]
    literal: bool,
    #[serde(default)]
    ignore_case: bool,
}

fn default_max_matches() -> u64 {
    DEFAULT_MAX_MATCHES
}

struct Search {
    regex: regex::Regex,
    max_matches: usize,
    matches: Vec<String>,
    files_scanned: u64,
    binary_skipped: u64,
    unreadable: u64,
    truncated: bool,
}

impl Search {
    fn done(&self) -> bool {
        self.matches.len() >= self.max_matches
    }

    fn scan_file(&mut self, path: &Path) -> io::Result<()> {
        let bytes = fs::read(path)?;
        self.files_scanned += 1;
        if self.files_scanned.is_multiple_of(PROGRESS_EVERY) {
            host::progress(
                self.files_scanned,
                None,
                &format!("{} files scanned", self.files_scanned),
            );
        }
        if looks_binary(&bytes) {
            self.binary_skipped += 1;
            return Ok(());
        }
        let shown = display_path(path);
        let text = String::from_utf8_lossy(&bytes);
        for (number, line) in text.lines().enumerate() {
            if self.regex.is_match(line) {
                if self.done() {
                    self.truncated = true;
                    break;
                }
                self.matches
                    .push(format!("{shown}:{}: {}", number + 1, clip(line)));
            }
        }
        Ok(())
    }

    fn scan_or_note(&mut self, path: &Path) {
        if let Err(e) = self.scan_file(path) {
            self.unreadable += 1;
            let shown = display_path(path);
            host::log(LogLevel::Warn, &format!("grep: cannot read '{shown}': {e}"));
        }
    }

    fn walk(&mut self, dir: &Path) {
        let read = match fs::read_dir(dir) {
            Ok(read) => read,
            Err(e) => {
                self.unreadable += 1;
                let shown = display_path(dir);
                host::log(LogLevel::Warn, &format!("grep: cannot list '{shown}': {e}"));
                return;
            }
        };
        let mut entries: Vec<(PathBuf, fs::FileType)> = read
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let file_type = entry.file_type().ok()?;
                Some((entry.path(), file_type))
            })
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (path, file_type) in entries {
            if self.truncated {
                return;
            }
            if file_type.is_dir() {
                let skip = path
                    .file_name()
                    .is_some_and(|n| SKIPPED_DIRS.iter().any(|s| n == *s));
                if !skip {
                    self.walk(&path);
                }
            } else if file_type.is_file() {
                self.scan_or_note(&path);
            } else if file_type.is_symlink() {
                // Follow links to files, never links to directories (they could loop).
                if fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                    self.scan_or_note(&path);
                }
            }
        }
    }
}

/// Paths under "." are shown without the "./" prefix.
fn display_path(path: &Path) -> String {
    let path = path.strip_prefix(".").unwrap_or(path);
    path.to_string_lossy().into_owned()
}

fn clip(line: &str) -> String {
    let line = line.trim_end_matches('\r');
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}… [line cut at {MAX_LINE_CHARS} chars]", &line[..cut]),
        None => line.to_owned(),
    }
}

fn grep(input: &str) -> Result<ToolOutput, ToolError> {
    let input: GrepInput = parse("grep", input)?;
    if input.pattern.is_empty() {
        return Err(invalid("'pattern' must not be empty"));
    }
    if !(1..=MAX_MAX_MATCHES).contains(&input.max_matches) {
        return Err(invalid(format!(
            "'max_matches' must be between 1 and {MAX_MAX_MATCHES}, got {}",
            input.max_matches
        )));
    }
    let source = if input.literal {
        regex::escape(&input.pattern)
    } else {
        input.pattern.clone()
    };
    let regex = regex::RegexBuilder::new(&source)
        .case_insensitive(input.ignore_case)
        .build()
        .map_err(|e| {
            invalid(format!(
                "'pattern' is not a valid regular expression: {e}\n\
                 (set \"literal\": true to search for the text as written)"
            ))
        })?;
    let root = Path::new(&input.path);
    let meta = fs::metadata(root).map_err(|e| io_failed("search", root, e))?;
    host::log(
        LogLevel::Debug,
        &format!("grep: searching '{}' for /{}/", input.path, input.pattern),
    );

    let mut search = Search {
        regex,
        max_matches: input.max_matches as usize,
        matches: Vec::new(),
        files_scanned: 0,
        binary_skipped: 0,
        unreadable: 0,
        truncated: false,
    };
    if meta.is_dir() {
        search.walk(root);
    } else {
        // A single file is searched directly; errors reading it fail the call.
        search
            .scan_file(root)
            .map_err(|e| io_failed("search", root, e))?;
    }
    let scanned = plural(search.files_scanned, "file", "files");
    host::progress(
        search.files_scanned,
        Some(search.files_scanned),
        &format!("done: {scanned} scanned"),
    );
    host::log(
        LogLevel::Info,
        &format!(
            "grep: {} in '{}' ({scanned} scanned{})",
            plural(search.matches.len() as u64, "match", "matches"),
            input.path,
            if search.truncated {
                ", stopped at max_matches"
            } else {
                ""
            }
        ),
    );

    let mut notes = Vec::new();
    if search.truncated {
        notes.push(format!(
            "stopped after max_matches={} matches; narrow the pattern or the path to see the rest",
            input.max_matches
        ));
    }
    if search.binary_skipped > 0 {
        notes.push(format!(
            "skipped {}",
            plural(search.binary_skipped, "binary file", "binary files")
        ));
    }
    if search.unreadable > 0 {
        notes.push(format!(
            "could not read {}",
            plural(
                search.unreadable,
                "file or directory",
                "files or directories"
            )
        ));
    }
    let mut content = if search.matches.is_empty() {
        format!(
            "no matches for /{}/ in '{}' ({scanned} scanned)",
            input.pattern, input.path
        )
    } else {
        search.matches.join("\n")
    };
    for note in notes {
        content.push_str(&format!("\n[{note}]"));
    }
    Ok(text_only(content))
}

// ---------------------------------------------------------------------------------------------
// write_file

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteFileInput {
    path: String,
    content: String,
}

fn write_file(input: &str) -> Result<ToolOutput, ToolError> {
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

// ---------------------------------------------------------------------------------------------
// edit_file

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

fn edit_file(input: &str) -> Result<ToolOutput, ToolError> {
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

// ---------------------------------------------------------------------------------------------
// describe

fn object_schema(properties: Value, required: &[&str]) -> String {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
    .to_string()
}

fn spec(
    name: &str,
    title: &str,
    description: &str,
    input_schema: String,
    hints: ToolHints,
) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: Some(title.into()),
        description: description.into(),
        input_schema,
        output_schema: None,
        hints,
        permission_subject: Some("/path".into()),
    }
}

fn specs() -> Vec<ToolSpec> {
    let read_only = ToolHints::READ_ONLY | ToolHints::IDEMPOTENT;
    let list_output = json!({
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
    vec![
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
            read_only,
        ),
        ToolSpec {
            output_schema: Some(list_output.to_string()),
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
                read_only,
            )
        },
        spec(
            "grep",
            "Search files",
            "Search a file, or every file under a directory (recursively, skipping .git and \
             binary files), for lines matching a regular expression. Returns one line per match \
             as 'file:line: text'.",
            object_schema(
                json!({
                    "pattern": {
                        "type": "string", "minLength": 1,
                        "description": "Regular expression (Rust regex syntax) to search for; set literal to search for plain text."
                    },
                    "path": {
                        "type": "string", "default": ".",
                        "description": "File or directory to search (directories recursively). Default: \".\"."
                    },
                    "max_matches": {
                        "type": "integer", "minimum": 1, "maximum": MAX_MAX_MATCHES,
                        "default": DEFAULT_MAX_MATCHES,
                        "description": "Stop after this many matching lines. Default: 200."
                    },
                    "literal": {
                        "type": "boolean", "default": false,
                        "description": "Treat pattern as plain text instead of a regular expression."
                    },
                    "ignore_case": {
                        "type": "boolean", "default": false,
                        "description": "Match letters regardless of case."
                    }
                }),
                &["pattern"],
            ),
            read_only,
        ),
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
        ),
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
        ),
    ]
}

struct Fs;

impl Guest for Fs {
    fn describe() -> Vec<ToolSpec> {
        specs()
    }

    fn call(name: String, input: String) -> Result<ToolOutput, ToolError> {
        match name.as_str() {
            "read_file" => read_file(&input),
            "list_dir" => list_dir(&input),
            "grep" => grep(&input),
            "write_file" => write_file(&input),
            "edit_file" => edit_file(&input),
            _ => Err(invalid(format!(
                "unknown tool '{name}'; this plugin provides read_file, list_dir, grep, \
                 write_file and edit_file"
            ))),
        }
    }
}

export!(Fs);
