//! Golden files under `tests/golden/`: what a wire format must look like, kept in the repository.
//! `BLESS=1` rewrites them from what the code produces instead of comparing (review the diff).
//!
//! The one place golden files are read and blessed: the e2e suite uses it, and so do the host's
//! own unit tests (`audit` includes this file), so it depends on nothing but std and serde_json.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The golden file `name`, e.g. `batch/openai.input.json`.
pub(crate) fn path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/golden")
        .join(name)
}

/// The golden file `name`, parsed as JSON.
pub(crate) fn read_json(name: &str) -> Value {
    let path = path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// With `BLESS=1`, writes `text` to the golden file `name` and returns `None`; else returns the
/// golden file's text, to compare with.
fn bless_or_read(name: &str, text: &str) -> Option<String> {
    let path = path(name);
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, text).unwrap();
        return None;
    }
    Some(
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run with BLESS=1 to create it", path.display())),
    )
}

/// Compares `actual` with the golden file `name` as JSON values; `BLESS=1` writes `actual` there
/// (pretty-printed) instead.
#[track_caller]
pub(crate) fn check_json(name: &str, actual: &Value) {
    let text = serde_json::to_string_pretty(actual).unwrap() + "\n";
    let Some(expected) = bless_or_read(name, &text) else {
        return;
    };
    let expected: Value = serde_json::from_str(&expected).unwrap();
    assert!(
        expected == *actual,
        "{} differs (BLESS=1 accepts the new one):\n{text}",
        path(name).display()
    );
}

/// Compares `actual` with the golden file `name` byte for byte; `BLESS=1` writes `actual` there.
#[track_caller]
pub(crate) fn check_text(name: &str, actual: &str) {
    if let Some(expected) = bless_or_read(name, actual) {
        assert_eq!(
            actual,
            expected,
            "{} differs (BLESS=1 accepts the new one)",
            path(name).display()
        );
    }
}
