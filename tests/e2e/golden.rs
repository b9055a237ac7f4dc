//! Golden files under `tests/golden/`: what a wire format must look like, kept in the repository.
//! `BLESS=1` rewrites them from what the code produces instead of comparing (review the diff).

use std::path::PathBuf;

use serde_json::Value;

use crate::harness::root;

/// The golden file `name`, e.g. `batch/openai.input.json`.
pub(crate) fn path(name: &str) -> PathBuf {
    root().join("tests/golden").join(name)
}

/// The golden file `name`, parsed as JSON.
pub(crate) fn read_json(name: &str) -> Value {
    let path = path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Compares `actual` with the golden file `name` as JSON values; `BLESS=1` writes `actual` there
/// (pretty-printed) instead.
#[track_caller]
pub(crate) fn check_json(name: &str, actual: &Value) {
    let path = path(name);
    let text = serde_json::to_string_pretty(actual).unwrap() + "\n";
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with BLESS=1 to create it", path.display()));
    let expected: Value = serde_json::from_str(&expected).unwrap();
    assert!(
        expected == *actual,
        "{} differs (BLESS=1 accepts the new one):\n{text}",
        path.display()
    );
}
