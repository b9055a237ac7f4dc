//! Part 5: real work in the sandbox. The fs plugin's `grep` over a generated corpus of a few MB, through the
//! whole pipeline, against the same search written in native Rust (same walk, same regex crate, same
//! output), run in the same rounds.

use std::fs;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use serde_json::json;
use toolhost::exec::CallRequest;

use crate::Options;
use crate::report::{Report, Row, Section, Spread, Target};
use crate::setup::{Workspace, pipeline as build_pipeline, plugin_file};

const WORDS: [&str; 24] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray",
];
const PATTERN: &str = r"needle-[0-9]{3}\b";

/// Write about `bytes` of text lines into `files` files under `dir` (in four subfolders); about one line in
/// 400 holds a needle. Deterministic. Returns the number of needle lines.
fn corpus(dir: &Path, bytes: usize, files: usize) -> std::io::Result<usize> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let per_file = bytes / files;
    let mut needles = 0;
    for f in 0..files {
        let sub = dir.join(format!("part{}", f % 4));
        fs::create_dir_all(&sub)?;
        let mut text = String::with_capacity(per_file + 200);
        let mut line_no = 0u64;
        while text.len() < per_file {
            line_no += 1;
            let words = 4 + next() % 12;
            for w in 0..words {
                if w > 0 {
                    text.push(' ');
                }
                text.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
            }
            if next() % 400 == 0 {
                text.push_str(&format!(" needle-{:03}", line_no % 1000));
                needles += 1;
            }
            text.push('\n');
        }
        fs::write(sub.join(format!("file{f:03}.txt")), text)?;
    }
    Ok(needles)
}

/// The fs plugin's line search itself (a plain file shared with the plugin), compiled natively.
#[path = "../../../plugins/examples/rust/fs/src/lines.rs"]
mod lines;

/// The fs plugin's grep, natively: sorted walk, skip binary files, lossy UTF-8, one line per match.
mod native {
    use std::fs;
    use std::path::{Path, PathBuf};

    use super::lines::{LinePattern, looks_binary, text_of};

    const MAX_LINE_CHARS: usize = 300;

    pub(super) fn grep(root: &Path, pattern: &str, max: usize) -> Vec<String> {
        let pattern = LinePattern::new(pattern, false).expect("pattern");
        let mut out = Vec::new();
        walk(root, root, &pattern, max, &mut out);
        out
    }

    fn walk(root: &Path, dir: &Path, re: &LinePattern, max: usize, out: &mut Vec<String>) {
        let Ok(read) = fs::read_dir(dir) else { return };
        let mut entries: Vec<(PathBuf, fs::FileType)> = read
            .filter_map(|e| e.ok().and_then(|e| Some((e.path(), e.file_type().ok()?))))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (path, ty) in entries {
            if out.len() >= max {
                return;
            }
            if ty.is_dir() {
                walk(root, &path, re, max, out);
            } else if ty.is_file() {
                let Ok(bytes) = fs::read(&path) else { continue };
                if looks_binary(&bytes) {
                    continue;
                }
                let shown = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                let text = text_of(&bytes);
                re.each_match(&text, |n, line| {
                    if out.len() >= max {
                        return false;
                    }
                    let line = line.trim_end_matches('\r');
                    let clipped = match line.char_indices().nth(MAX_LINE_CHARS) {
                        Some((cut, _)) => {
                            format!("{}… [line cut at {MAX_LINE_CHARS} chars]", &line[..cut])
                        }
                        None => line.to_owned(),
                    };
                    out.push(format!("{shown}:{n}: {clipped}"));
                    true
                });
            }
        }
    }
}

pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let mb = o.pick(4, 1);
    let ws = Workspace::new(
        &[("fs", plugin_file("fs"))],
        "[plugins.fs]\ndirs = [{ host = \"corpus\" }]\nlimits = { output-kb = 4096 }\n",
    )?;
    let dir = ws.path().join("corpus");
    let needles = corpus(&dir, mb << 20, 64).map_err(|e| e.to_string())?;
    let p = build_pipeline(&ws).await?;
    let input = json!({ "pattern": PATTERN, "path": ".", "max_matches": 10000 });
    let call = || CallRequest {
        tool: "grep".into(),
        input: input.clone(),
        origin: "bench",
        ..CallRequest::default()
    };

    // Same answer both ways, or the comparison means nothing.
    let out = p.call(call()).await;
    if out.is_error() {
        return Err(format!("grep failed: {}", out.content));
    }
    let nat = native::grep(&dir, PATTERN, 10000);
    if out.content.lines().count() != nat.len() || nat.len() != needles {
        return Err(format!(
            "grep answers differ: sandbox {} lines, native {}, corpus {needles} needles",
            out.content.lines().count(),
            nat.len()
        ));
    }

    let reps = o.pick(5, 2);
    let (mut sandboxed, mut native_ms, mut guest_ms) = (vec![], vec![], vec![]);
    for _ in 0..o.rounds {
        let t = Instant::now();
        for _ in 0..reps {
            black_box(native::grep(&dir, PATTERN, 10000));
        }
        native_ms.push(t.elapsed().as_secs_f64() * 1e3 / reps as f64);
        let (mut total, mut guest) = (0.0, 0.0);
        for _ in 0..reps {
            let (out, times) = p.call_timed(call()).await;
            if out.is_error() {
                return Err(out.content);
            }
            total += times.total.as_secs_f64() * 1e3;
            guest += times.guest.as_secs_f64() * 1e3;
        }
        sandboxed.push(total / reps as f64);
        guest_ms.push(guest / reps as f64);
    }
    let throughput = |ms: &Vec<f64>| ms.iter().map(|m| mb as f64 / (m / 1e3)).collect::<Vec<_>>();
    let mut s = Section::new(format!(
        "5. grep /{PATTERN}/ over {mb} MiB in 64 files ({needles} matches), fs plugin vs native Rust"
    ));
    s.row(
        Row::new("sandboxed grep, whole pipeline", "ms", sandboxed.clone())
            .vs("native grep", native_ms.clone()),
    );
    s.row(
        Row::new("of which the guest's call", "ms", guest_ms.clone())
            .vs("native grep", native_ms.clone()),
    );
    s.row(Row::new(
        "native grep (same walk, regex crate, output)",
        "ms",
        native_ms.clone(),
    ));
    s.row(
        Row::new("sandboxed throughput", "MiB/s", throughput(&sandboxed))
            .vs("native", throughput(&native_ms)),
    );
    s.note(format!(
        "{reps} searches per round, files in the page cache. Both sides run the plugin's own `lines.rs` with the \
         regex crate's performance features, `memchr` and `simdutf8` (AVX2 natively, simd128 in the guest); the \
         guest reads files through WASI, inline on its call's thread, and is compiled by Cranelift with fuel metering."
    ));
    report.add(s);
    let r = Spread::of_ratios(&sandboxed, &native_ms);
    report.target(Target {
        name: "the fs example's grep at most 2x native Rust".into(),
        toolhost: format!("{:.2} ms", Spread::of(&sandboxed).median),
        baseline: format!("native Rust {:.2} ms", Spread::of(&native_ms).median),
        ratio: Target::ratio(r),
        met: r.median <= 2.0,
    });
    let r = Spread::of(&sandboxed).median / Spread::of(&native_ms).median;
    println!("grep: the sandbox costs {r:.2}x native on real work\n");
    Ok(())
}
