//! The fs plugin's line search (one regex pass over the whole text, each proposed line checked
//! alone) gives exactly what matching every line of `str::lines` on its own gives: for patterns
//! that could match across lines, at line edges, empty lines, `\r\n` and a last line without an
//! ending. Compiled here natively from the plugin's own file.

use proptest::prelude::*;

#[path = "../../plugins/examples/rust/fs/src/lines.rs"]
mod lines;

use lines::{LinePattern, looks_binary, text_of};

const PATTERNS: [&str; 23] = [
    "a", "^a", "a$", "^$", r"\s", r"b\s*a", r"a\nb", "(?i)A", r"\bab\b", ".", "[^a]", "x*", r"\r",
    r"a\r?$", "^.*$", "é", r"\Aa", r"b\z", "(?-m)^b", "(?-R)a$", r"b\b", "(?s)a.b", r"\Bb",
];

fn line_by_line(text: &str, pattern: &str, ignore_case: bool) -> Vec<(usize, String)> {
    let re = regex::RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .build()
        .unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, l)| re.is_match(l))
        .map(|(n, l)| (n + 1, l.to_owned()))
        .collect()
}

fn searched(text: &str, pattern: &str, ignore_case: bool, max: usize) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    LinePattern::new(pattern, ignore_case)
        .unwrap()
        .each_match(text, |n, l| {
            out.push((n, l.to_owned()));
            out.len() < max
        });
    out
}

proptest! {
    #[test]
    fn finds_exactly_the_lines_that_match_alone(
        text in proptest::collection::vec(
            // A lone `\r` sends the whole text line by line: rare, so that most texts take the
            // whole-text search.
            prop_oneof![
                4 => Just("a"), 4 => Just("b"), 4 => Just("\n"), 2 => Just("\r\n"), 4 => Just(" "),
                2 => Just("é"), 4 => Just("ab"), 1 => Just("\r"),
            ],
            0..40,
        ).prop_map(|parts| parts.concat()),
        pattern in proptest::sample::select(PATTERNS.to_vec()),
        ignore_case in any::<bool>(),
    ) {
        prop_assert_eq!(searched(&text, pattern, ignore_case, usize::MAX), line_by_line(&text, pattern, ignore_case));
    }
}

#[test]
fn a_carriage_return_without_a_line_feed_stays_in_its_line() {
    // Found by the property above: the whole-text search never lets `.` match a `\r`.
    for (text, pattern) in [
        ("\r", "."),
        ("a\rb\n", "a.b"),
        ("x\r\r\n", r"x\r$"),
        ("\r\n\r", "^.$"),
    ] {
        assert_eq!(
            searched(text, pattern, false, usize::MAX),
            line_by_line(text, pattern, false),
            "{text:?} {pattern:?}"
        );
    }
}

#[test]
fn a_pattern_on_the_texts_own_edges_matches_each_line_as_a_text_of_its_own() {
    // Found by the property above once most texts took the whole-text search: `\z` there is
    // only the end of the file, where a line alone ends where the line does.
    for (text, pattern) in [
        ("b\n", r"b\z"),
        ("b\na\n", r"\Aa"),
        ("a\nb\n", "(?-m)^b"),
        ("a\r\n", "(?-R)a$"),
    ] {
        let alone = line_by_line(text, pattern, false);
        assert!(!alone.is_empty(), "{text:?} {pattern:?}");
        assert_eq!(
            searched(text, pattern, false, usize::MAX),
            alone,
            "{text:?} {pattern:?}"
        );
    }
}

#[test]
fn reads_utf8_as_it_is_and_anything_else_as_lossy_text() {
    assert!(matches!(
        text_of("é\n".as_bytes()),
        std::borrow::Cow::Borrowed("é\n")
    ));
    let bad = b"a\xffb\xe2\x82";
    assert_eq!(text_of(bad), String::from_utf8_lossy(bad));
}

#[test]
fn stops_when_told_and_numbers_lines_from_one() {
    let text = "x\nneedle-1\r\n\nneedle-2\nneedle-3";
    assert_eq!(
        searched(text, "needle", false, 2),
        vec![(2, "needle-1".to_owned()), (4, "needle-2".to_owned())]
    );
    assert_eq!(
        searched(text, "needle-3$", false, 9),
        vec![(5, "needle-3".to_owned())]
    );
    assert!(searched("", "^$", false, 9).is_empty());
    assert_eq!(
        searched("a\n\nb\n", "^$", false, 9),
        vec![(2, String::new())]
    );
}

#[test]
fn a_nul_byte_in_the_first_8000_bytes_means_binary() {
    let mut bytes = vec![b'a'; 20_000];
    assert!(!looks_binary(&bytes));
    assert!(!looks_binary(&[]));
    for (at, binary) in [(0, true), (7_999, true), (8_000, false), (19_999, false)] {
        bytes[at] = 0;
        assert_eq!(looks_binary(&bytes), binary, "NUL at {at}");
        bytes[at] = b'a';
    }
}
