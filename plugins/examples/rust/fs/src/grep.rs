//! `grep`: lines matching a regular expression in a file, or in every file under a directory.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;

use crate::exports::toolhost::plugin::tool::{ToolError, ToolOutput, ToolSpec};
use crate::lines::{LinePattern, looks_binary, text_of};
use crate::tool::{invalid, io_failed, object_schema, parse, plural, spec, text_only};
use crate::toolhost::plugin::host::{self, LogLevel};
use crate::toolhost::plugin::types::ToolHints;

/// Matches are cut to this many characters so that one minified line cannot flood the output.
const MAX_LINE_CHARS: usize = 300;
/// grep reports progress after this many files.
const PROGRESS_EVERY: u64 = 25;
/// Directories grep does not descend into.
const SKIPPED_DIRS: [&str; 3] = [".git", ".hg", ".svn"];
const DEFAULT_MAX_MATCHES: u64 = 200;
const MAX_MAX_MATCHES: u64 = 10_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepInput {
    pattern: String,
    #[serde(default = "crate::tool::dot")]
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
    pattern: LinePattern,
    max_matches: usize,
    matches: Vec<String>,
    files_scanned: u64,
    binary_skipped: u64,
    unreadable: u64,
    truncated: bool,
}

impl Search {
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
        let text = text_of(&bytes);
        let (pattern, matches, max) = (&self.pattern, &mut self.matches, self.max_matches);
        let mut truncated = false;
        pattern.each_match(&text, |number, line| {
            if matches.len() >= max {
                truncated = true;
                return false;
            }
            matches.push(format!("{shown}:{number}: {}", clip(line)));
            true
        });
        self.truncated |= truncated;
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

pub(crate) fn call(input: &str) -> Result<ToolOutput, ToolError> {
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
    let pattern = LinePattern::new(&source, input.ignore_case).map_err(|e| {
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
        pattern,
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

pub(crate) fn describe() -> ToolSpec {
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
        ToolHints::READ_ONLY | ToolHints::IDEMPOTENT,
    )
}
