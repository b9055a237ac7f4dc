//! Schema violations as a model or a person reads them: one line per violation, deduplicated,
//! capped, with long instances abbreviated. Shared by validation and coercion, which both report
//! what is still wrong, so neither imports the other for it.

use std::collections::HashSet;
use std::io;

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind;

/// At most this many violations are listed; a huge input can break a rule a million times.
pub(super) const MAX_PROBLEMS: usize = 100;

/// At most this many `anyOf`/`oneOf` options are described in a violation.
const MAX_OPTIONS: usize = 5;

/// Instances longer than this (as JSON) are abbreviated in violation messages.
const MAX_SHOWN: usize = 80;

/// One line per violation, in the validator's order, deduplicated and capped at [`MAX_PROBLEMS`];
/// shows each violation to `note` on the way
/// (coercion notes what the schema wanted where).
pub(super) fn describe<'i>(
    errors: impl Iterator<Item = ValidationError<'i>>,
    mut note: impl FnMut(&ValidationError<'i>),
) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut problems = Vec::new();
    let mut omitted = 0usize;
    for error in errors {
        note(&error);
        let line = format!(
            "{}: {}",
            display_path(error.instance_path().as_str()),
            message(&error)
        );
        if seen.contains(&line) {
            continue;
        }
        if problems.len() < MAX_PROBLEMS {
            seen.insert(line.clone());
            problems.push(line);
        } else {
            seen.insert(line);
            omitted += 1;
        }
    }
    if omitted > 0 {
        problems.push(format!("... and {omitted} more violations"));
    }
    problems
}

/// jsonschema's message; for `anyOf` and `oneOf`, followed by the first complaint of each option
/// (at most [`MAX_OPTIONS`]), so that a model sees what would have been accepted.
fn message(error: &ValidationError<'_>) -> String {
    let mut text = plain_message(error);
    let (ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context }) =
        error.kind()
    else {
        return text;
    };
    let parent = error.instance_path().as_str();
    let options: Vec<String> = context
        .iter()
        .enumerate()
        .filter_map(|(i, errors)| Some((i + 1, errors.first()?)))
        .take(MAX_OPTIONS)
        .map(|(n, e)| {
            let path = e.instance_path().as_str();
            let at = if path == parent {
                String::new()
            } else {
                format!("at {}: ", display_path(path))
            };
            format!("option {n}: {at}{}", plain_message(e))
        })
        .collect();
    if !options.is_empty() {
        text.push_str(" (");
        text.push_str(&options.join("; "));
        text.push(')');
    }
    text
}

/// jsonschema's message, with a long instance abbreviated.
fn plain_message(error: &ValidationError<'_>) -> String {
    let instance = error.instance();
    let mut head = Limited(Vec::with_capacity(MAX_SHOWN + 1));
    if serde_json::to_writer(&mut head, &**instance).is_ok() {
        return error.to_string();
    }
    let shown = String::from_utf8_lossy(&head.0);
    error
        .masked_with(format!(
            "{}...",
            toolhost_call::text::prefix(&shown, MAX_SHOWN)
        ))
        .to_string()
}

/// Collects at most [`MAX_SHOWN`] bytes, then fails, which stops the serialiser.
struct Limited(Vec<u8>);

impl io::Write for Limited {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = MAX_SHOWN + 1 - self.0.len();
        self.0.extend_from_slice(&buf[..buf.len().min(room)]);
        if buf.len() > room {
            Err(io::Error::other("enough"))
        } else {
            Ok(buf.len())
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A JSON pointer as shown to people: `/` for the root.
pub(super) fn display_path(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}
