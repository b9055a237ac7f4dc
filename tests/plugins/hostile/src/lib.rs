//! Test fixture: one component whose tools misbehave on purpose (spin, sleep, exhaust memory and
//! stack, flood output, poke at the file system and the environment, return bad results), for
//! the host's security and robustness tests. Never install it as a real plugin.
//!
//! Schemas are deliberately permissive (`{"type": "object"}` plus the properties each tool
//! reads, nothing required), so that the tests reach the tool itself; missing or mistyped
//! arguments are reported by the tool as `invalid-input`.

wit_bindgen::generate!({
    path: "../../../wit",
    world: "plugin",
});

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::{Read, Write};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use exports::toolhost::plugin::tool::{Guest, ToolError, ToolOutput, ToolSpec};
use serde_json::{Value, json};
use toolhost::plugin::host::{self, LogLevel};
use toolhost::plugin::types::ToolHints;

type Res = Result<ToolOutput, ToolError>;

/// What `remember` stored; a fresh instance per call must always start with `None`.
static REMEMBERED: Mutex<Option<String>> = Mutex::new(None);

const MIB: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// argument helpers

struct Args(Value);

impl Args {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    fn u64(&self, key: &str) -> Result<u64, ToolError> {
        self.opt_u64(key)?
            .ok_or_else(|| invalid(format!("missing integer argument '{key}'")))
    }

    fn opt_u64(&self, key: &str) -> Result<Option<u64>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| invalid(format!("'{key}' must be a non-negative integer, got {v}"))),
        }
    }

    fn str(&self, key: &str) -> Result<&str, ToolError> {
        self.opt_str(key)?
            .ok_or_else(|| invalid(format!("missing string argument '{key}'")))
    }

    fn opt_str(&self, key: &str) -> Result<Option<&str>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| invalid(format!("'{key}' must be a string, got {v}"))),
        }
    }

    fn bool(&self, key: &str) -> Result<bool, ToolError> {
        match self.get(key) {
            None => Ok(false),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| invalid(format!("'{key}' must be a boolean, got {v}"))),
        }
    }
}

fn invalid(msg: impl Into<String>) -> ToolError {
    ToolError::InvalidInput(msg.into())
}

fn failed(msg: impl Into<String>) -> ToolError {
    ToolError::Failed(msg.into())
}

fn text(content: impl Into<String>) -> Res {
    Ok(ToolOutput {
        content: content.into(),
        structured: None,
    })
}

fn with_json(content: impl Into<String>, structured: Value) -> Res {
    Ok(ToolOutput {
        content: content.into(),
        structured: Some(structured.to_string()),
    })
}

fn io_result(what: String, result: std::io::Result<()>) -> Res {
    match result {
        Ok(()) => text(format!("ok: {what}")),
        Err(e) => Err(failed(format!("{what}: {e}"))),
    }
}

// ---------------------------------------------------------------------------------------------
// the tools

/// Burns CPU without calling the host: forever, or `iterations` times and then answers (a normal
/// call as long as a failing one, for the benchmark's comparisons).
fn spin(args: &Args) -> Res {
    let mut counter = 0u64;
    let Some(iterations) = args.opt_u64("iterations")? else {
        loop {
            counter = black_box(counter.wrapping_add(1));
        }
    };
    for _ in 0..iterations {
        counter = black_box(counter.wrapping_add(1));
    }
    text(format!("spun {counter} times"))
}

/// Sleeps `ms`; with `steps`, in that many equal parts, reporting progress after each.
fn sleep(args: &Args) -> Res {
    let ms = args.u64("ms")?;
    let steps = args.opt_u64("steps")?.unwrap_or(1).max(1);
    let start = Instant::now();
    for step in 1..=steps {
        // A sleep on purpose: sleeping is this tool's job (its input says how long).
        std::thread::sleep(std::time::Duration::from_millis(ms / steps));
        if steps > 1 {
            host::progress(step, Some(steps), &format!("slept part {step} of {steps}"));
        }
    }
    text(format!("slept {} ms", start.elapsed().as_millis()))
}

/// Allocates `mb` MiB and touches every byte. By default it allocates 1 MiB chunks with
/// `try_reserve` and reports how far it got; with `abort: true` it asks for one block with
/// `vec!`, which aborts (traps) when the allocation fails.
fn grow(args: &Args) -> Res {
    let mb = args.u64("mb")?;
    let bytes = usize::try_from(mb)
        .ok()
        .and_then(|mb| mb.checked_mul(MIB))
        .ok_or_else(|| invalid(format!("{mb} MiB does not fit in a 32-bit address space")))?;
    if args.bool("abort")? {
        let block = vec![1u8; bytes];
        let sum: u64 = black_box(&block).iter().map(|&b| u64::from(b)).sum();
        return with_json(
            format!("allocated {mb} MiB in one block"),
            json!({ "requested_mb": mb, "allocated_mb": mb, "sum": sum }),
        );
    }
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut sum = 0u64;
    for _ in 0..mb {
        let mut chunk: Vec<u8> = Vec::new();
        if chunk.try_reserve_exact(MIB).is_err() {
            break;
        }
        chunk.resize(MIB, 1);
        sum += black_box(&chunk).iter().map(|&b| u64::from(b)).sum::<u64>();
        chunks.push(chunk);
    }
    let got = chunks.len() as u64;
    black_box(&chunks);
    if got < mb {
        return Err(failed(format!(
            "out of memory: allocated {got} MiB of the {mb} MiB requested"
        )));
    }
    with_json(
        format!("allocated and touched {got} MiB"),
        json!({ "requested_mb": mb, "allocated_mb": got, "sum": sum }),
    )
}

/// Returns exactly `bytes` bytes of text, made of `fill` (default "x") repeated, padded with 'x'.
/// A multi-byte `fill` such as "é€🦀" puts character boundaries everywhere a host might cut.
fn big_output(args: &Args) -> Res {
    let bytes = args.u64("bytes")? as usize;
    let fill = args.opt_str("fill")?.unwrap_or("x");
    if fill.is_empty() {
        return Err(invalid("'fill' must not be empty"));
    }
    let mut out = String::new();
    out.try_reserve_exact(bytes)
        .map_err(|_| failed(format!("cannot allocate {bytes} bytes")))?;
    while out.len() + fill.len() <= bytes {
        out.push_str(fill);
    }
    while out.len() < bytes {
        out.push('x');
    }
    if args.bool("structured")? {
        let structured = json!({ "data": out }).to_string();
        return Ok(ToolOutput {
            content: out,
            structured: Some(structured),
        });
    }
    text(out)
}

/// Writes to stdout and stderr, including lines that look like JSON-RPC messages, which a host
/// speaking MCP over stdio must never forward to its client.
fn print(args: &Args) -> Res {
    let lines = args.u64("lines")?;
    let fake = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    for i in 0..lines {
        if i % 2 == 0 {
            println!("{fake}");
            eprintln!("{fake}");
        } else {
            println!("hostile stdout line {i}");
            eprintln!("hostile stderr line {i}");
        }
    }
    // An unterminated line at the end.
    print!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":"#);
    let _ = std::io::stdout().flush();
    text(format!("printed {lines} lines to stdout and to stderr"))
}

fn stdin(args: &Args) -> Res {
    let limit = args.opt_u64("bytes")?.unwrap_or(4096);
    let mut buf = Vec::new();
    let result = std::io::stdin().take(limit).read_to_end(&mut buf);
    let got = String::from_utf8_lossy(&buf).into_owned();
    with_json(
        format!("read {} bytes from stdin: {got:?}", buf.len()),
        json!({ "bytes": buf.len(), "data": got, "error": result.err().map(|e| e.to_string()) }),
    )
}

fn env() -> Res {
    let vars: BTreeMap<String, String> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cwd = match std::env::current_dir() {
        Ok(dir) => dir.to_string_lossy().into_owned(),
        Err(e) => format!("error: {e}"),
    };
    let value = json!({ "vars": vars, "args": args, "cwd": cwd });
    with_json(value.to_string(), value)
}

fn time() -> Res {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let start = Instant::now();
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    with_json(
        format!("unix time {wall} ms"),
        json!({ "unix_ms": wall, "monotonic_elapsed_ns": elapsed_ns }),
    )
}

fn read(args: &Args) -> Res {
    let path = args.str("path")?;
    match std::fs::read(path) {
        Ok(bytes) => text(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => Err(failed(format!("read '{path}': {e}"))),
    }
}

fn write(args: &Args) -> Res {
    let path = args.str("path")?;
    let content = args.opt_str("content")?.unwrap_or("");
    io_result(format!("write '{path}'"), std::fs::write(path, content))
}

fn list(args: &Args) -> Res {
    let path = args.opt_str("path")?.unwrap_or(".");
    let entries = std::fs::read_dir(path).map_err(|e| failed(format!("list '{path}': {e}")))?;
    let mut names = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => names.push(entry.file_name().to_string_lossy().into_owned()),
            Err(e) => names.push(format!("<error: {e}>")),
        }
    }
    names.sort();
    with_json(names.join("\n"), json!({ "entries": names }))
}

fn stat(args: &Args) -> Res {
    let path = args.str("path")?;
    let meta =
        std::fs::symlink_metadata(path).map_err(|e| failed(format!("stat '{path}': {e}")))?;
    let followed = std::fs::metadata(path).map_err(|e| e.to_string());
    let canonical = std::fs::canonicalize(path).map_err(|e| e.to_string());
    let value = json!({
        "is_file": meta.is_file(),
        "is_dir": meta.is_dir(),
        "is_symlink": meta.is_symlink(),
        "len": meta.len(),
        "readonly": meta.permissions().readonly(),
        "followed_len": followed.as_ref().map(|m| m.len()).ok(),
        "followed_error": followed.err(),
        "canonical": canonical.as_ref().ok().map(|p| p.to_string_lossy().into_owned()),
        "canonical_error": canonical.err(),
    });
    with_json(value.to_string(), value)
}

fn mkdir(args: &Args) -> Res {
    let path = args.str("path")?;
    io_result(format!("mkdir '{path}'"), std::fs::create_dir(path))
}

fn remove(args: &Args) -> Res {
    let path = args.str("path")?;
    let result = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir(path),
        _ => std::fs::remove_file(path),
    };
    io_result(format!("remove '{path}'"), result)
}

fn symlink(args: &Args) -> Res {
    let target = args.str("target")?;
    let link = args.str("link")?;
    // `std::os::wasi::fs::symlink_path` is unstable; the deprecated portable function is not.
    #[allow(deprecated, reason = "the only stable way to make a symlink on WASI")]
    let result = std::fs::soft_link(target, link);
    io_result(format!("symlink '{link}' -> '{target}'"), result)
}

fn hardlink(args: &Args) -> Res {
    let target = args.str("target")?;
    let link = args.str("link")?;
    io_result(
        format!("hardlink '{link}' -> '{target}'"),
        std::fs::hard_link(target, link),
    )
}

fn rename(args: &Args) -> Res {
    let from = args.str("from")?;
    let to = args.str("to")?;
    io_result(
        format!("rename '{from}' -> '{to}'"),
        std::fs::rename(from, to),
    )
}

fn truncate(args: &Args) -> Res {
    let path = args.str("path")?;
    let len = args.opt_u64("len")?.unwrap_or(0);
    let result = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(len));
    io_result(format!("truncate '{path}' to {len} bytes"), result)
}

/// Recursion the optimiser cannot turn into a loop: every frame keeps a live array.
#[inline(never)]
fn dive(depth: u64, max: u64) -> u64 {
    let mut frame = [0u8; 256];
    frame[(depth % 256) as usize] = depth as u8;
    let frame = black_box(frame);
    if depth >= max {
        return u64::from(frame[0]);
    }
    let below = dive(depth + 1, max);
    black_box(below.wrapping_add(u64::from(frame[(depth % 251) as usize])))
}

/// Recursion that keeps nothing in linear memory, so it exhausts the engine's native wasm stack
/// (`max_wasm_stack`) instead of the guest's shadow stack. `a` is used twice after the call,
/// which keeps the optimiser from turning it into a loop.
#[inline(never)]
fn dive_native(n: u64) -> u64 {
    if n == 0 {
        return 1;
    }
    let a = dive_native(n - 1);
    (a ^ (a >> 3)).wrapping_add(n)
}

fn recurse(args: &Args) -> Res {
    let max = args.opt_u64("depth")?.unwrap_or(u64::MAX);
    let result = if args.bool("native")? {
        dive_native(black_box(max))
    } else {
        dive(0, black_box(max))
    };
    text(format!("recursed {max} levels ({result})"))
}

fn exit(args: &Args) -> Res {
    let code = args.opt_u64("code")?.unwrap_or(0);
    std::process::exit(code as i32)
}

fn progress_flood(args: &Args) -> Res {
    let count = args.u64("count")?;
    let bytes = args.opt_u64("bytes")?.unwrap_or(0) as usize;
    let padding = "x".repeat(bytes);
    for i in 0..count {
        host::progress(
            i + 1,
            Some(count),
            &format!("step {} of {count}{padding}", i + 1),
        );
    }
    text(format!("reported progress {count} times"))
}

fn log_flood(args: &Args) -> Res {
    let count = args.u64("count")?;
    let bytes = args.opt_u64("bytes")?.unwrap_or(0) as usize;
    let padding = "x".repeat(bytes);
    for i in 0..count {
        host::log(LogLevel::Info, &format!("hostile log line {i} {padding}"));
    }
    text(format!("logged {count} lines"))
}

/// Writes `bytes` bytes (default: without end) to `path` in 64 KiB chunks, until done or the
/// first error (a full disk), and says how far it got.
fn fill(args: &Args) -> Res {
    let path = args.str("path")?;
    let limit = args.opt_u64("bytes")?.unwrap_or(u64::MAX);
    let chunk = vec![b'f'; 64 * 1024];
    let mut file = std::fs::File::create(path)
        .map_err(|e| failed(format!("fill '{path}': cannot create: {e}")))?;
    let mut written = 0u64;
    while written < limit {
        let take = chunk.len().min((limit - written) as usize);
        match file.write(&chunk[..take]) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(e) => {
                return Err(failed(format!(
                    "fill '{path}': wrote {written} bytes, then: {e}"
                )));
            }
        }
    }
    if let Err(e) = file.flush().and_then(|()| file.sync_all()) {
        return Err(failed(format!(
            "fill '{path}': wrote {written} bytes, then: {e}"
        )));
    }
    with_json(
        format!("fill '{path}': wrote {written} bytes"),
        json!({ "written": written }),
    )
}

/// Opens `path` `count` times and holds every handle until the call ends (after sleeping
/// `hold_ms`, if given); stops at the first error and says how many it got.
fn open_many(args: &Args) -> Res {
    let path = args.str("path")?;
    let count = args.u64("count")?;
    let mut handles = Vec::new();
    let mut error = None;
    for _ in 0..count {
        match std::fs::File::open(path) {
            Ok(f) => handles.push(f),
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    let opened = handles.len();
    if let Some(ms) = args.opt_u64("hold_ms")? {
        // A sleep on purpose: holding the handles for `hold_ms` is what the tool is asked to do.
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    black_box(&handles);
    with_json(
        format!("opened '{path}' {opened} times; error: {error:?}"),
        json!({ "opened": opened, "error": error }),
    )
}

/// Text a terminal or a line-based transport might trip over: ANSI colour and OSC title escapes,
/// a bell, NUL, CR without LF, U+2028/U+2029 line separators, a BOM, a right-to-left override,
/// and a line that looks like a JSON-RPC message.
const WEIRD_TEXT: &str = "\u{1b}[31mred\u{1b}[0m \u{1b}]0;pwned\u{7} nul:\u{0} cr:\r ls:\u{2028} ps:\u{2029} \
bom:\u{feff} rtl:\u{202e}txt.exe\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";

fn weird_text() -> Res {
    with_json(WEIRD_TEXT, json!({ "text": WEIRD_TEXT }))
}

fn remember(args: &Args) -> Res {
    let value = args.opt_str("value")?.map(str::to_owned);
    let mut stored = REMEMBERED.lock().unwrap_or_else(|e| e.into_inner());
    let previous = match value {
        Some(value) => stored.replace(value),
        None => stored.clone(),
    };
    let content = match &previous {
        Some(p) => format!("previous value: {p:?}"),
        None => "previous value: none".to_owned(),
    };
    with_json(content, json!({ "previous": previous }))
}

fn fail(args: &Args) -> Res {
    let message = args
        .opt_str("message")?
        .unwrap_or("failed on purpose")
        .to_owned();
    match args.opt_str("kind")?.unwrap_or("failed") {
        "invalid-input" => Err(ToolError::InvalidInput(message)),
        _ => Err(ToolError::Failed(message)),
    }
}

/// One filesystem operation of `steps`.
fn step(op: &Value) -> Result<String, String> {
    let arg = |key: &str| {
        op.get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("step {op} has no string '{key}'"))
    };
    let done = |r: std::io::Result<()>| r.map(|()| "ok".to_owned()).map_err(|e| e.to_string());
    match arg("op")? {
        "rename" => done(std::fs::rename(arg("from")?, arg("to")?)),
        "hardlink" => done(std::fs::hard_link(arg("target")?, arg("link")?)),
        #[allow(deprecated, reason = "the only stable way to make a symlink on WASI")]
        "symlink" => done(std::fs::soft_link(arg("target")?, arg("link")?)),
        "write" => done(std::fs::write(arg("path")?, arg("content")?)),
        "mkdir" => done(std::fs::create_dir_all(arg("path")?)),
        "rmdir" => done(std::fs::remove_dir(arg("path")?)),
        "unlink" => done(std::fs::remove_file(arg("path")?)),
        "read" => std::fs::read_to_string(arg("path")?).map_err(|e| e.to_string()),
        "readlink" => std::fs::read_link(arg("path")?)
            .map(|p| p.display().to_string())
            .map_err(|e| e.to_string()),
        "stat" => std::fs::symlink_metadata(arg("path")?)
            .map(|m| format!("len {}", m.len()))
            .map_err(|e| e.to_string()),
        other => Err(format!("unknown op '{other}'")),
    }
}

/// Runs `steps` (filesystem operations) in order, `repeat` times (default once), going on after
/// errors: one call that renames, works and renames back, or one side of a race.
fn steps(args: &Args) -> Res {
    let steps = args
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("missing array argument 'steps'"))?;
    let repeat = args.opt_u64("repeat")?.unwrap_or(1);
    let mut last = vec![String::new(); steps.len()];
    let mut ok = vec![0u64; steps.len()];
    // Errors that were refusals (EACCES): the host's guard said no.
    let mut refused = vec![0u64; steps.len()];
    let mut read = std::collections::BTreeSet::new();
    for _ in 0..repeat {
        for (i, op) in steps.iter().enumerate() {
            last[i] = match step(op) {
                Ok(out) => {
                    ok[i] += 1;
                    if op.get("op").and_then(Value::as_str) == Some("read") {
                        read.insert(out.clone());
                    }
                    format!("ok: {out}")
                }
                Err(e) => {
                    if e.contains("ermission denied") {
                        refused[i] += 1;
                    }
                    format!("error: {e}")
                }
            };
        }
    }
    with_json(
        last.join("\n"),
        json!({ "last": last, "ok": ok, "refused": refused, "read": read }),
    )
}

fn dispatch(name: &str, args: &Args, raw: &str) -> Res {
    match name {
        "spin" => spin(args),
        "sleep" => sleep(args),
        "grow" => grow(args),
        "big_output" => big_output(args),
        "print" => print(args),
        "stdin" => stdin(args),
        "env" => env(),
        "time" => time(),
        "read" => read(args),
        "write" => write(args),
        "list" => list(args),
        "stat" => stat(args),
        "mkdir" => mkdir(args),
        "remove" => remove(args),
        "symlink" => symlink(args),
        "hardlink" => hardlink(args),
        "rename" => rename(args),
        "truncate" => truncate(args),
        "steps" => steps(args),
        "recurse" => recurse(args),
        "trap" => panic!("boom"),
        "exit" => exit(args),
        "progress_flood" => progress_flood(args),
        "log_flood" => log_flood(args),
        "fill" => fill(args),
        "open_many" => open_many(args),
        "weird_text" => weird_text(),
        "remember" => remember(args),
        "fail" => fail(args),
        "echo_input" => Ok(ToolOutput {
            content: raw.to_owned(),
            structured: Some(raw.to_owned()),
        }),
        "bad_structured" => with_json(
            "structured does not match the output schema",
            json!({ "n": "oops" }),
        ),
        "not_json" => Ok(ToolOutput {
            content: "structured is not JSON".into(),
            structured: Some("{not json".into()),
        }),
        "missing_structured" => text("declares an output schema but returns no structured result"),
        _ => Err(invalid(format!("unknown tool '{name}'"))),
    }
}

// ---------------------------------------------------------------------------------------------
// describe

struct Tool {
    name: &'static str,
    description: &'static str,
    /// (property, JSON type) pairs.
    properties: &'static [(&'static str, &'static str)],
    hints: ToolHints,
    subject: Option<&'static str>,
    output_schema: Option<Value>,
}

const NONE: ToolHints = ToolHints::empty();
const RO: ToolHints = ToolHints::READ_ONLY;
const DESTRUCTIVE: ToolHints = ToolHints::DESTRUCTIVE;

fn tool(
    name: &'static str,
    description: &'static str,
    properties: &'static [(&'static str, &'static str)],
    hints: ToolHints,
) -> Tool {
    Tool {
        name,
        description,
        properties,
        hints,
        subject: None,
        output_schema: None,
    }
}

fn tools() -> Vec<Tool> {
    let path = Some("/path");
    let n_schema = json!({
        "type": "object",
        "required": ["n"],
        "properties": { "n": { "type": "integer" } }
    });
    vec![
        tool(
            "spin",
            "Loop forever without calling the host, or `iterations` times and answer.",
            &[("iterations", "integer")],
            RO,
        ),
        tool(
            "sleep",
            "Sleep `ms` milliseconds (blocks in a WASI host call), in `steps` parts with progress.",
            &[("ms", "integer"), ("steps", "integer")],
            RO,
        ),
        tool(
            "grow",
            "Allocate and touch `mb` MiB, in 1 MiB chunks (reports how much it got), or in one block that traps on failure with `abort`.",
            &[("mb", "integer"), ("abort", "boolean")],
            RO,
        ),
        tool(
            "big_output",
            "Return exactly `bytes` bytes of text made of `fill` (default \"x\"); also as structured {\"data\"} with `structured`.",
            &[
                ("bytes", "integer"),
                ("fill", "string"),
                ("structured", "boolean"),
            ],
            RO,
        ),
        tool(
            "print",
            "Print `lines` lines to stdout and stderr, half of them fake JSON-RPC responses, then an unterminated one.",
            &[("lines", "integer")],
            RO,
        ),
        tool(
            "stdin",
            "Read up to `bytes` (default 4096) bytes from stdin.",
            &[("bytes", "integer")],
            RO,
        ),
        tool(
            "env",
            "Return the environment variables, arguments and current directory the plugin sees.",
            &[],
            RO,
        ),
        tool("time", "Return the wall-clock time.", &[], RO),
        Tool {
            subject: path,
            ..tool(
                "read",
                "Read a file and return its content.",
                &[("path", "string")],
                RO,
            )
        },
        Tool {
            subject: path,
            ..tool(
                "write",
                "Write `content` to a file.",
                &[("path", "string"), ("content", "string")],
                DESTRUCTIVE,
            )
        },
        Tool {
            subject: path,
            ..tool(
                "list",
                "List a directory (default \".\").",
                &[("path", "string")],
                RO,
            )
        },
        Tool {
            subject: path,
            ..tool(
                "stat",
                "Metadata of a path, with and without following links, and its canonical form.",
                &[("path", "string")],
                RO,
            )
        },
        Tool {
            subject: path,
            ..tool("mkdir", "Create a directory.", &[("path", "string")], NONE)
        },
        Tool {
            subject: path,
            ..tool(
                "remove",
                "Remove a file or an empty directory.",
                &[("path", "string")],
                DESTRUCTIVE,
            )
        },
        Tool {
            subject: Some("/link"),
            ..tool(
                "symlink",
                "Create a symbolic link `link` pointing at `target`.",
                &[("target", "string"), ("link", "string")],
                DESTRUCTIVE,
            )
        },
        Tool {
            subject: Some("/link"),
            ..tool(
                "hardlink",
                "Create a hard link `link` to `target`.",
                &[("target", "string"), ("link", "string")],
                DESTRUCTIVE,
            )
        },
        Tool {
            subject: Some("/from"),
            ..tool(
                "rename",
                "Rename `from` to `to`.",
                &[("from", "string"), ("to", "string")],
                DESTRUCTIVE,
            )
        },
        Tool {
            subject: path,
            ..tool(
                "truncate",
                "Truncate (or extend) a file to `len` bytes (default 0).",
                &[("path", "string"), ("len", "integer")],
                DESTRUCTIVE,
            )
        },
        Tool {
            subject: path,
            ..tool(
                "steps",
                "Run filesystem `steps` ({op: rename|hardlink|symlink|write|mkdir|rmdir|unlink|read|readlink|stat, ...}) in order, `repeat` times, whatever `path` says.",
                &[
                    ("path", "string"),
                    ("steps", "array"),
                    ("repeat", "integer"),
                ],
                DESTRUCTIVE,
            )
        },
        tool(
            "recurse",
            "Recurse `depth` levels (default: without end), with 256 bytes of shadow stack (linear memory) per level, or with `native` none: only the engine's wasm stack.",
            &[("depth", "integer"), ("native", "boolean")],
            RO,
        ),
        tool("trap", "Panic (\"boom\"), which traps.", &[], RO),
        tool(
            "exit",
            "Call std::process::exit with `code` (default 0).",
            &[("code", "integer")],
            RO,
        ),
        tool(
            "progress_flood",
            "Report progress `count` times, each message padded with `bytes` bytes.",
            &[("count", "integer"), ("bytes", "integer")],
            RO,
        ),
        tool(
            "log_flood",
            "Write `count` log lines through the host, each padded with `bytes` bytes.",
            &[("count", "integer"), ("bytes", "integer")],
            RO,
        ),
        Tool {
            subject: path,
            ..tool(
                "fill",
                "Write `bytes` bytes (default: until an error, such as a full disk) to the file `path`.",
                &[("path", "string"), ("bytes", "integer")],
                DESTRUCTIVE,
            )
        },
        Tool {
            subject: path,
            ..tool(
                "open_many",
                "Open the file `path` `count` times, holding every handle until the call ends (`hold_ms` longer).",
                &[
                    ("path", "string"),
                    ("count", "integer"),
                    ("hold_ms", "integer"),
                ],
                RO,
            )
        },
        tool(
            "weird_text",
            "Return text full of terminal escapes, control characters and a fake JSON-RPC line, as content and as structured {\"text\"}.",
            &[],
            RO,
        ),
        tool(
            "remember",
            "Store `value` (if given) in a static and return what was stored before: always none if every call gets a fresh instance.",
            &[("value", "string")],
            NONE,
        ),
        tool(
            "fail",
            "Return an error of `kind` \"failed\" (default) or \"invalid-input\" with `message`.",
            &[("kind", "string"), ("message", "string")],
            RO,
        ),
        tool(
            "echo_input",
            "Return the input JSON text exactly as received, as content and as structured.",
            &[],
            RO,
        ),
        Tool {
            output_schema: Some(n_schema.clone()),
            ..tool(
                "bad_structured",
                "Return structured {\"n\": \"oops\"}, which does not match the declared output schema.",
                &[],
                RO,
            )
        },
        tool(
            "not_json",
            "Return structured text that is not JSON (no output schema declared).",
            &[],
            RO,
        ),
        Tool {
            output_schema: Some(n_schema),
            ..tool(
                "missing_structured",
                "Declare an output schema but return no structured result.",
                &[],
                RO,
            )
        },
    ]
}

struct Hostile;

impl Guest for Hostile {
    fn describe() -> Vec<ToolSpec> {
        tools()
            .into_iter()
            .map(|t| {
                let properties: serde_json::Map<String, Value> = t
                    .properties
                    .iter()
                    .map(|(name, ty)| (name.to_string(), json!({ "type": ty })))
                    .collect();
                ToolSpec {
                    name: t.name.into(),
                    title: None,
                    description: format!("[test fixture] {}", t.description),
                    input_schema: json!({ "type": "object", "properties": properties }).to_string(),
                    output_schema: t.output_schema.map(|s| s.to_string()),
                    hints: t.hints,
                    permission_subject: t.subject.map(str::to_owned),
                }
            })
            .collect()
    }

    fn call(name: String, input: String) -> Result<ToolOutput, ToolError> {
        let value: Value =
            serde_json::from_str(&input).map_err(|e| invalid(format!("input is not JSON: {e}")))?;
        dispatch(&name, &Args(value), &input)
    }
}

export!(Hostile);
