//! Part `wasi3`: WASI 0.3 plugins (issue 44). What a 0.3 contract call (`toolhost:plugin@0.2.0`, an
//! async `call` on the concurrent engine) costs against a 0.2 one, the same echo in-process through
//! the whole pipeline, rounds interleaved; and what an async call buys: `fetch_many` getting eight
//! URLs at once against the same eight fetched one call after another, from a server on 127.0.0.1
//! that answers each after a fixed delay.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::exec::{CallRequest, Pipeline};

use crate::Options;
use crate::generic::medians;
use crate::report::{Report, Row, Section};
use crate::setup::{Workspace, pipeline as build_pipeline, plugin_file};

/// How long the test server takes to answer each request.
const DELAY: Duration = Duration::from_millis(20);
/// URLs per batch.
const URLS: usize = 8;

/// An HTTP/1.1 server on 127.0.0.1 that answers every request after [`DELAY`], a thread per
/// connection; returns its origin.
fn delaying_server() -> Result<String, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                // A sleep on purpose: the server's latency is what the concurrent calls overlap.
                std::thread::sleep(DELAY);
                let _ = (&stream).write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                );
            });
        }
    });
    Ok(format!("http://127.0.0.1:{port}"))
}

async fn fetch(p: &Pipeline, urls: &[String]) -> Result<(), String> {
    let o = p
        .call(CallRequest {
            tool: "fetch_many".into(),
            input: json!({ "urls": urls }),
            origin: "bench",
            ..CallRequest::default()
        })
        .await;
    match o.is_error() || o.content.matches("-> 200").count() != urls.len() {
        true => Err(format!("fetch_many failed: {}", o.content)),
        false => Ok(()),
    }
}

/// Part `wasi3`.
pub(crate) async fn run(o: &Options, report: &mut Report) -> Result<(), String> {
    let origin = delaying_server()?;
    let ws = Workspace::new(
        &[
            ("echo", plugin_file("echo")),
            ("async_tools", plugin_file("async_tools")),
            ("fetch_many", plugin_file("fetch_many")),
        ],
        &format!(
            "[permissions]\nmode = \"bypass\"\n[plugins.async_tools]\nprefix = \"a_\"\n\
             [plugins.fetch_many.network]\nallow = [\"{origin}\"]\nallow-private = true\n"
        ),
    )?;
    let p = build_pipeline(&ws).await?;
    let n = o.pick(2000, 300);
    let input = json!({"text": "hello, world"});
    let cases = ["echo", "a_echo"];
    for tool in cases {
        medians(&p, tool, &input, n / 4).await?; // warm up
    }
    let (mut totals, mut overheads) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    let urls: Vec<String> = (0..URLS).map(|i| format!("{origin}/{i}")).collect();
    let (mut together, mut apart) = (Vec::new(), Vec::new());
    let batches = o.pick(20, 5);
    for _ in 0..o.rounds {
        for (i, tool) in cases.iter().enumerate() {
            let (total, overhead) = medians(&p, tool, &input, n).await?;
            totals[i].push(total);
            overheads[i].push(overhead);
        }
        let started = Instant::now();
        for _ in 0..batches {
            fetch(&p, &urls).await?;
        }
        together.push(started.elapsed().as_secs_f64() * 1000.0 / batches as f64);
        let started = Instant::now();
        for _ in 0..batches {
            for url in &urls {
                fetch(&p, std::slice::from_ref(url)).await?;
            }
        }
        apart.push(started.elapsed().as_secs_f64() * 1000.0 / batches as f64);
    }
    let [total_02, total_03] = totals;
    let [over_02, over_03] = overheads;
    let mut s = Section::new(format!(
        "13. WASI 0.3 plugins against 0.2 ({n} echo calls and {batches} fetch batches x {} rounds, interleaved; medians per round)",
        o.rounds
    ));
    s.row(Row::new(
        "0.2 echo (toolhost:plugin@0.1.0), total",
        "us",
        total_02.clone(),
    ));
    s.row(
        Row::new(
            "0.3 echo (toolhost:plugin@0.2.0, async call), total",
            "us",
            total_03,
        )
        .vs("0.2 echo", total_02),
    );
    s.row(Row::new("0.2 echo, total - call", "us", over_02.clone()));
    s.row(Row::new("0.3 echo, total - call", "us", over_03).vs("0.2 echo", over_02));
    s.row(Row::new(
        format!("fetch_many: {URLS} URLs one after another (a call each)"),
        "ms",
        apart.clone(),
    ));
    s.row(
        Row::new(
            format!("fetch_many: the same {URLS} URLs in one call, at once"),
            "ms",
            together,
        )
        .vs("one after another", apart),
    );
    s.note(format!(
        "The server answers each request after {} ms; one after another, eight take eight times that \
         plus eight calls, at once about one. The 0.3 echo runs on the concurrent engine, whose \
         instances are allocated on demand (not from the pool) and whose calls go through wasmtime's \
         concurrent call path.",
        DELAY.as_millis()
    ));
    report.add(s);
    Ok(())
}
