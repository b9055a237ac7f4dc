//! The daemon-wide descriptor budget, through the real daemon (`serve --stdio`) with a small
//! `[engine] open-files`: a hostile call that opens files in a loop while another holds many fails
//! alone with the reason, the calls around it run, and the budget comes back when calls end.

use serde_json::{Value, json};

use crate::daemon::{Daemon, Outcome, record};
use crate::harness::{EVENT_WAIT, Env, wait_until};

/// The budget for all calls together; the hog takes 41 of it (40 files and its granted folder).
const CONFIG: &str = "[permissions]\nmode = \"bypass\"\n[engine]\nopen-files = 64\n\
                      [plugins.hostile]\ndirs = [{ host = \"work\", mode = \"rw\" }]\n\
                      limits = { timeout-ms = 30000 }\n";

#[track_caller]
fn audited(env: &Env, o: &Outcome, outcome: &str, kind: Value) {
    let r = record(env, o.call_id());
    assert_eq!(r["tool"], o.tool.as_str(), "{r}");
    assert_eq!(r["outcome"], outcome, "{r}");
    assert_eq!(r["error_kind"], kind, "{r}");
}

#[test]
fn a_call_past_the_global_descriptor_budget_fails_alone_and_the_budget_comes_back() {
    let env = Env::new(&["hostile", "echo"], CONFIG);
    std::fs::write(env.work().join("f.txt"), "content").unwrap();
    let mut d = Daemon::start(&env, &["--no-watch"]);
    let hog = d.id();
    d.send(&json!({
        "jsonrpc": "2.0", "id": hog, "method": "tools/call",
        "params": { "name": "open_many", "arguments": { "path": "f.txt", "count": 40, "hold_ms": 4000 } }
    }));
    wait_until("the hog to hold its 40 files", EVENT_WAIT, || {
        d.open_files("/work/f.txt") >= 40
    });

    // Within its own 1024 handles, but past what the daemon has left: refused with the reason.
    let greedy = d.call("open_many", json!({ "path": "f.txt", "count": 100 }));
    greedy.assert_error("trap", "toolhost's open-file budget is exhausted");
    assert!(
        greedy
            .text()
            .contains("may hold 64 files, directories and connections"),
        "{}",
        greedy.text()
    );
    audited(&env, &greedy, "error", json!("trap"));

    // Meanwhile calls that need a few descriptors, or none, run.
    let read = d.call("read", json!({ "path": "f.txt" }));
    read.assert_ok();
    assert_eq!(read.text(), "content");
    d.call("echo", json!({ "text": "while the budget is low" }))
        .assert_ok();

    let hogged = Outcome {
        tool: "open_many".into(),
        result: d.answer(hog)["result"].clone(),
    };
    hogged.assert_ok();
    assert_eq!(hogged.structured()["opened"], 40, "{}", hogged.text());
    audited(&env, &hogged, "ok", Value::Null);

    // Everything the hog and the refused call held was given back.
    for _ in 0..3 {
        let again = d.call("open_many", json!({ "path": "f.txt", "count": 60 }));
        again.assert_ok();
        assert_eq!(again.structured()["opened"], 60, "{}", again.text());
    }
    assert!(d.stop().success());
}
