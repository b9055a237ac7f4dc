//! Messages for models: every failure says what went wrong and what to try; long output is cut with a
//! marker that says how much was cut and how to ask for less.

use crate::sandbox::RunError;

/// Cut `text` to at most `limit` bytes at a character boundary, appending a marker. Returns whether it cut.
pub(crate) fn truncate(text: &mut String, limit: usize) -> bool {
    if text.len() <= limit {
        return false;
    }
    let total = text.len();
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!(
        "\n\n[output truncated: showing the first {cut} of {total} bytes ({} bytes cut). \
         Ask for less, e.g. a line range, a narrower pattern or a smaller directory.]",
        total - cut
    ));
    true
}

/// The model-facing message for a call the sandbox ended.
pub(crate) fn run_error(tool: &str, e: &RunError) -> String {
    match e {
        RunError::Timeout(d) => format!(
            "Tool '{tool}' timed out after {} ms and was stopped. Try a smaller input or a narrower request.",
            d.as_millis()
        ),
        RunError::OutOfFuel(fuel) => format!(
            "Tool '{tool}' used up its compute budget ({fuel} fuel) and was stopped. \
             Try a smaller input or a narrower request."
        ),
        RunError::MemoryLimit { limit, .. } => format!(
            "Tool '{tool}' exceeded its memory limit of {} MiB and was stopped. Try a smaller input.",
            limit >> 20
        ),
        RunError::Trap(msg) => format!(
            "Tool '{tool}' crashed: {msg}. This is a fault in the tool; the same input will likely fail again."
        ),
        RunError::Cancelled => format!("The call to '{tool}' was cancelled."),
        RunError::Setup(msg) => format!("Tool '{tool}' could not be started: {msg}."),
    }
}

/// The model-facing message for an unknown tool: the available names, closest first.
pub(crate) fn unknown_tool<'a>(name: &str, available: impl Iterator<Item = &'a String>) -> String {
    let mut names: Vec<(f64, &String)> = available
        .map(|n| {
            (
                strsim::jaro_winkler(&name.to_lowercase(), &n.to_lowercase()),
                n,
            )
        })
        .collect();
    names.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    if names.is_empty() {
        return format!("Unknown tool '{name}'. No tools are available.");
    }
    let list: Vec<&str> = names.iter().map(|(_, n)| n.as_str()).collect();
    format!(
        "Unknown tool '{name}'. Available tools: {}.",
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_at_a_char_boundary_with_marker() {
        let mut s = "é".repeat(10); // 20 bytes
        assert!(truncate(&mut s, 5));
        assert!(s.starts_with("éé[") || s.starts_with("éé\n"), "{s}");
        assert!(s.contains("first 4 of 20 bytes (16 bytes cut)"), "{s}");
        let mut short = "abc".to_string();
        assert!(!truncate(&mut short, 5));
        assert_eq!(short, "abc");
    }

    #[test]
    fn lists_closest_tool_first() {
        let names = [
            "write_file".to_string(),
            "read_file".to_string(),
            "echo".to_string(),
        ];
        let m = unknown_tool("reed_file", names.iter());
        assert!(
            m.starts_with("Unknown tool 'reed_file'. Available tools: read_file,"),
            "{m}"
        );
    }
}
