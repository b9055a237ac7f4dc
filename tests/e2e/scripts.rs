//! Code mode: `run_script` (plugins/examples/js/run_script) runs a model's script whose tool calls
//! go through the whole pipeline, as the script's caller. Each attack on that promise is a test: a
//! tool the runner is not granted or the caller may not see, a deny and an ask inside a script, a
//! denied file's content smuggled out, recursion, a fan-out bomb, a script outliving its deadline,
//! and the audit tree after a cancel.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost::exec::{CallOutcome, CallRequest};
use toolhost_gate::caller::Caller;

use crate::harness::{EVENT_WAIT, Env, wait_for_async};
use crate::languages::Example;
use crate::pipeline::Person;

const RUNNER: Example = Example {
    lang: "js",
    tool: "run_script",
};

/// A workspace with the runner, fs (over `work/`, holding `secret/key.txt` and `notes/a..e.txt`),
/// echo, hostile and search_tools, under `config` (which grants the runner what the test needs).
fn workspace(config: &str) -> Option<Env> {
    let runner = RUNNER.component()?;
    let _heavy = crate::languages::heavy();
    let cache = crate::harness::root().join("target/e2e-cache");
    let config = format!(
        "[cache]\ndir = '{}'\n[plugins.fs]\ndirs = [{{ host = \"work\", mode = \"rw\" }}]\n{config}",
        cache.display()
    );
    let env = Env::new(&["fs", "echo", "hostile", "search_tools"], &config);
    std::fs::copy(runner, env.path().join("plugins/run_script.wasm")).unwrap();
    std::fs::create_dir_all(env.work().join("secret")).unwrap();
    std::fs::write(env.work().join("secret/key.txt"), "TOPSECRET-4242\n").unwrap();
    std::fs::create_dir_all(env.work().join("notes")).unwrap();
    for (i, name) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        let lines: String = (0..(i + 1) * 3)
            .map(|n| format!("{} line {n}\n", if n % 2 == 0 { "match" } else { "other" }))
            .collect();
        std::fs::write(env.work().join(format!("notes/{name}.txt")), lines).unwrap();
    }
    // The first compile of the runner, once, under the heavy lock.
    let out = env.run(&["list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(env)
}

fn script(code: &str) -> CallRequest {
    CallRequest {
        tool: "run_script".into(),
        input: json!({ "code": code }),
        origin: "test",
        ..CallRequest::default()
    }
}

/// The end records whose parent is `id`.
fn children(env: &Env, id: &str) -> Vec<Value> {
    env.audit()
        .into_iter()
        .filter(|r| r["parent_id"] == id)
        .collect()
}

fn text(o: &CallOutcome) -> &str {
    &o.content
}

#[tokio::test]
async fn a_script_calls_tools_and_each_nested_call_is_recorded_under_it() {
    let Some(env) = workspace(
        "[plugins.run_script]\npermissions = { allow = [\"run_script\"] }\ncall-tools = [\"read_file\", \"list_dir\"]\n",
    ) else {
        return;
    };
    let p = env.pipeline(8).await;
    let o = p
        .call(script(
            "const { entries } = await tools.list_dir({ path: 'notes' });
             const counts = [];
             for (const e of entries) {
               const t = await tools.read_file({ path: 'notes/' + e.name });
               counts.push([e.name, t.split('\\n').filter((l) => l.startsWith('match')).length]);
             }
             console.log('read', counts.length, 'files');
             return counts.sort((a, b) => b[1] - a[1]).slice(0, 3);",
        ))
        .await;
    assert!(!o.is_error(), "{}", text(&o));
    let s = o.structured().unwrap();
    assert_eq!(
        s["result"],
        json!([["e.txt", 8], ["d.txt", 6], ["c.txt", 5]])
    );
    assert_eq!(s["calls"], 6);
    assert_eq!(s["console"], json!(["read 5 files"]));
    // One record per nested call, each under the script's call, as the same caller and origin.
    let nested = children(&env, &o.call_id);
    assert_eq!(nested.len(), 6, "{nested:#?}");
    assert!(
        nested
            .iter()
            .all(|r| r["origin"] == "test" && r["outcome"] == "ok")
    );
    assert_eq!(nested[0]["tool"], "list_dir");
    let script = env
        .audit()
        .into_iter()
        .find(|r| r["call_id"] == o.call_id)
        .unwrap();
    assert_eq!(script["tool"], "run_script");
    assert!(script["parent_id"].is_null());
}

#[tokio::test]
async fn a_script_reaches_only_tools_the_runner_is_granted_and_its_caller_may_see() {
    let config = "[plugins.run_script]\npermissions = { allow = [\"run_script\"] }\ncall-tools = [\"read_*\", \"echo\"]\n\
        [auth]\nissuer = \"https://idp.test\"\naudience = \"https://tools.test/mcp\"\n\
        [[callers]]\nname = \"echoers\"\nmatch = { sub = \"mallory\" }\n\
        tools = [\"run_script\", \"echo\"]\n";
    let Some(env) = workspace(config) else {
        return;
    };
    let p = env.pipeline(8).await;

    // Not granted to the runner: refused before any lookup, whatever the tool is.
    let o = p
        .call(script(
            "const out = [];
             for (const t of ['write_file', 'list_dir', 'spin', 'no_such_tool']) {
               try { await tools[t]({}); out.push(t + ': ran') } catch (e) { out.push(t + ': ' + e.message) }
             }
             return out;",
        ))
        .await;
    assert!(!o.is_error(), "{}", text(&o));
    // The script's `tools` holds only the granted tools: the others are not functions.
    for t in ["write_file", "list_dir", "spin", "no_such_tool"] {
        assert!(
            text(&o).contains(&format!("{t}: tools[t] is not a function")),
            "{}",
            text(&o)
        );
    }
    let o = p
        .call(CallRequest {
            input: json!({ "declarations": true }),
            ..script("")
        })
        .await;
    assert!(text(&o).contains("tools.read_file(") && text(&o).contains("tools.echo("));
    assert!(!text(&o).contains("write_file") && !text(&o).contains("list_dir"));
    assert!(children(&env, &o.call_id).is_empty());

    // A profiled caller whose profile shows echo alone: read_file is granted to the runner, yet
    // the caller's script neither sees it nor reaches it (unknown to them, as in a direct call).
    let mallory = Arc::new(Caller {
        issuer: "https://idp.test".into(),
        subject: "mallory".into(),
        ..Caller::default()
    });
    let o = p
        .call(CallRequest {
            input: json!({ "declarations": true }),
            caller: Some(mallory.clone()),
            ..script("")
        })
        .await;
    assert!(
        text(&o).contains("tools.echo(") && !text(&o).contains("read_file"),
        "{}",
        text(&o)
    );
    let o = p
        .call(CallRequest {
            caller: Some(mallory.clone()),
            ..script(
                "return [await tools.echo({ text: 'hi' }),
                         typeof tools.read_file];",
            )
        })
        .await;
    assert_eq!(
        o.structured().unwrap()["result"],
        json!([{ "text": "hi" }, "undefined"])
    );
    let nested = children(&env, &o.call_id);
    assert_eq!(nested.len(), 1);
    assert_eq!(
        nested[0]["caller"]["subject"], "mallory",
        "{:#?}",
        nested[0]
    );
}

/// `tool_caller` (tests/plugins/contract) asks the host's `tools` interface for any name: the
/// host's own checks, without a runner's table in front of them.
fn raw(caller: Option<Arc<Caller>>, tool: &str, input: Value) -> CallRequest {
    CallRequest {
        tool: "call_tool".into(),
        input: json!({ "name": tool, "input": input.to_string() }),
        origin: "test",
        caller,
        ..CallRequest::default()
    }
}

#[tokio::test]
async fn the_host_refuses_what_a_plugin_is_not_granted_and_hides_what_its_caller_cannot_see() {
    // No grant at all: nothing listed, every call refused naming the setting.
    let env = Env::new(&["tool_caller", "echo", "fs"], "");
    let p = env.pipeline(8).await;
    let list = |caller| CallRequest {
        tool: "list_tools".into(),
        input: json!({}),
        origin: "test",
        caller,
        ..CallRequest::default()
    };
    assert_eq!(p.call(list(None)).await.content, "");
    let o = p.call(raw(None, "echo", json!({ "text": "x" }))).await;
    assert!(
        o.content.starts_with(
            "denied: Permission denied: plugin 'tool_caller' may not call tool 'echo'"
        ) && o.content.contains("call-tools = [\"echo\"]"),
        "{}",
        o.content
    );
    assert!(
        children(&env, &o.call_id).is_empty(),
        "a refused name reaches no pipeline"
    );

    // Granted echo and read_file; a deny rule on the secret; a profile that shows echo alone.
    let config = "[plugins.fs]\ndirs = [{ host = \"work\", mode = \"ro\" }]\n\
        [permissions]\ndeny = [\"read_file(./secret/**)\"]\n\
        [plugins.tool_caller]\ncall-tools = [\"echo\", \"read_*\"]\n\
        [auth]\nissuer = \"https://idp.test\"\naudience = \"https://tools.test/mcp\"\n\
        [[callers]]\nname = \"echoers\"\nmatch = { sub = \"mallory\" }\n\
        tools = [\"call_tool\", \"list_tools\", \"echo\"]\n";
    let env = Env::new(&["tool_caller", "echo", "fs"], config);
    std::fs::create_dir_all(env.work().join("secret")).unwrap();
    std::fs::write(env.work().join("secret/key.txt"), "TOPSECRET-4242\n").unwrap();
    let p = env.pipeline(8).await;
    assert_eq!(p.call(list(None)).await.content, "echo,read_file");
    let o = p.call(raw(None, "echo", json!({ "text": "x" }))).await;
    assert_eq!(o.content, "ok: x");
    for path in ["secret/key.txt", "./secret//key.txt", "x/../secret/key.txt"] {
        let o = p
            .call(raw(None, "read_file", json!({ "path": path })))
            .await;
        assert!(o.content.starts_with("denied: "), "{path}: {}", o.content);
        assert!(!o.content.contains("TOPSECRET"));
    }
    for name in [
        "write_file",
        "list_dir",
        "call_tool",
        "ECHO",
        "echo ",
        "read_file\n",
        &"e".repeat(5000),
    ] {
        let o = p.call(raw(None, name, json!({}))).await;
        assert!(
            o.content
                .starts_with("denied: Permission denied: plugin 'tool_caller' may not call"),
            "{name:?}: {}",
            o.content
        );
        assert!(!o.content.contains('\n'), "{}", o.content);
    }

    let mallory = Some(Arc::new(Caller {
        issuer: "https://idp.test".into(),
        subject: "mallory".into(),
        ..Caller::default()
    }));
    assert_eq!(p.call(list(mallory.clone())).await.content, "echo");
    let o = p
        .call(raw(
            mallory.clone(),
            "read_file",
            json!({ "path": "secret/key.txt" }),
        ))
        .await;
    assert!(
        o.content
            .starts_with("unknown_tool: Unknown tool 'read_file'"),
        "{}",
        o.content
    );
    assert!(!o.content.contains("read_file,") && !o.content.contains("list_dir"));
    let nested = children(&env, &o.call_id);
    assert_eq!(nested.len(), 1);
    assert_eq!(nested[0]["caller"]["subject"], "mallory");
    assert_eq!(nested[0]["error_kind"], "unknown_tool");
}

#[tokio::test]
async fn a_deny_inside_a_script_is_a_deny_and_an_ask_goes_to_the_scripts_approver() {
    let config = "[permissions]\nmode = \"default\"\ndeny = [\"read_file(./secret/**)\"]\n\
        [plugins.run_script]\npermissions = { allow = [\"run_script\"] }\ncall-tools = [\"read_file\", \"write_file\"]\n";
    let Some(env) = workspace(config) else {
        return;
    };
    let p = env.pipeline(8).await;

    // Every spelling of the denied file, and the script tries to smuggle out what it gets.
    let o = p
        .call(script(
            "const got = [];
             for (const path of ['secret/key.txt', './secret/key.txt', 'notes/../secret/key.txt', '/secret/key.txt']) {
               try { got.push(await tools.read_file({ path })) } catch (e) { got.push(e.kind) }
             }
             return got;",
        ))
        .await;
    assert!(!o.is_error(), "{}", text(&o));
    assert_eq!(
        o.structured().unwrap()["result"],
        json!(["denied", "denied", "denied", "denied"])
    );
    assert!(!text(&o).contains("TOPSECRET"));
    let nested = children(&env, &o.call_id);
    assert_eq!(nested.len(), 4);
    assert!(
        nested.iter().all(|r| r["error_kind"] == "denied"),
        "{nested:#?}"
    );

    // An ask inside a script goes to the approver of the script's call: no, then yes.
    for yes in [false, true] {
        let person = Arc::new(Person(yes, Mutex::default()));
        let o = p
            .call(CallRequest {
                approver: Some(person.clone()),
                ..script(
                    "try { await tools.write_file({ path: 'notes/new.txt', content: 'x' }); return 'written' }
                     catch (e) { return e.kind }",
                )
            })
            .await;
        assert_eq!(
            o.structured().unwrap()["result"],
            if yes { "written" } else { "denied" }
        );
        let asked = person.1.lock().unwrap().clone();
        assert!(
            asked.len() == 1 && asked[0].contains("write_file"),
            "{asked:?}"
        );
        assert_eq!(env.work().join("notes/new.txt").is_file(), yes);
    }
    // With no approver (the CLI without a terminal), an ask inside a script is a deny.
    let called = env.call(
        "run_script",
        json!({ "code": "try { await tools.write_file({ path: 'notes/n2.txt', content: 'x' }) } catch (e) { return e.kind }" }),
    );
    called.assert_ok();
    assert_eq!(called.content(), "denied");
    assert!(!env.work().join("notes/n2.txt").exists());
}

#[tokio::test]
async fn recursion_through_run_script_stops_at_the_depth_budget_and_a_fan_out_at_the_call_budget() {
    let config = "[plugins.run_script]\npermissions = { allow = [\"run_script\"] }\ncall-tools = [\"run_script\", \"echo\"]\n\
        limits = { nesting-depth = 2, nested-calls = 20 }\n";
    let Some(env) = workspace(config) else {
        return;
    };
    let p = env.pipeline(16).await;

    // A script that runs itself again, forever: the third level is refused.
    let quine = r#"
        const body = (src) => `try { return ['down', await tools.run_script({ code: ${JSON.stringify(src)} })] } catch (e) { return ['refused', e.kind, e.message] }`;
        const inner = 'try { return ["down", await tools.run_script({ code: "return 1" })] } catch (e) { return ["refused", e.kind, e.message] }';
        return await tools.run_script({ code: body(inner) });"#;
    let o = p.call(script(quine)).await;
    assert!(!o.is_error(), "{}", text(&o));
    let r = &o.structured().unwrap()["result"];
    // depth 1 ran depth 2, whose own call (depth 3) was refused naming the setting.
    assert_eq!(r["result"][0], "down", "{r:#}");
    assert_eq!(r["result"][1]["result"][0], "refused", "{r:#}");
    assert_eq!(r["result"][1]["result"][1], "denied");
    assert!(
        r["result"][1]["result"][2]
            .as_str()
            .unwrap()
            .contains("nesting-depth"),
        "{r:#}"
    );

    // A fan-out bomb: 200 calls at once from one script; 20 run, the rest are refused, each
    // refusal recorded under the script, and the budget counts the whole tree.
    let o = p
        .call(script(
            "const all = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => tools.echo({ text: String(i) })));
             return [all.filter((r) => r.status === 'fulfilled').length,
                     all.filter((r) => r.status === 'rejected' && r.reason.message.includes('nested-calls')).length];",
        ))
        .await;
    assert_eq!(
        o.structured().unwrap()["result"],
        json!([20, 180]),
        "{}",
        text(&o)
    );
    let nested = children(&env, &o.call_id);
    assert_eq!(nested.len(), 200);
    assert_eq!(nested.iter().filter(|r| r["outcome"] == "ok").count(), 20);
}

#[tokio::test]
async fn a_script_cannot_outlive_its_deadline_through_nested_calls_and_a_cancel_records_the_tree() {
    let config = "[plugins.run_script]\npermissions = { allow = [\"run_script\"] }\ncall-tools = [\"sleep\"]\nlimits = { timeout-ms = 1500 }\n\
        [plugins.hostile.limits]\ntimeout-ms = 60000\n";
    let Some(env) = workspace(config) else {
        return;
    };
    let p = env.pipeline(8).await;

    // The nested sleep could run for a minute under its own limit; the script's 1.5 s ends both.
    let started = Instant::now();
    let o = p
        .call(script("await tools.sleep({ ms: 30000 }); return 'woke'"))
        .await;
    let took = started.elapsed();
    assert_eq!(
        o.error_kind().map(|k| k.as_str()),
        Some("timeout"),
        "{}",
        text(&o)
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    let nested = wait_for_async("the nested call's record", EVENT_WAIT, || {
        Some(children(&env, &o.call_id)).filter(|c| c.len() == 1)
    })
    .await;
    assert!(
        matches!(
            nested[0]["error_kind"].as_str(),
            Some("timeout" | "cancelled")
        ),
        "{nested:#?}"
    );

    // A cancel of the script cancels its nested call, and both are recorded.
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        stop.cancel();
    });
    let o = p
        .call(CallRequest {
            cancel,
            ..script("await tools.sleep({ ms: 30000 }); return 'woke'")
        })
        .await;
    assert_eq!(
        o.error_kind().map(|k| k.as_str()),
        Some("cancelled"),
        "{}",
        text(&o)
    );
    let nested = wait_for_async("the nested call's record", EVENT_WAIT, || {
        Some(children(&env, &o.call_id)).filter(|c| c.len() == 1)
    })
    .await;
    assert_eq!(nested[0]["error_kind"], "cancelled", "{nested:#?}");
}

#[tokio::test]
async fn over_mcp_a_short_list_names_search_and_scripts_and_every_tool_stays_reachable() {
    let config = "[server]\nshort-list = [\"search_tools\", \"run_script\"]\n\
        [plugins.search_tools]\ncall-tools = [\"*\"]\n\
        [plugins.run_script]\npermissions = { allow = [\"run_script\"] }\ncall-tools = [\"*\"]\n";
    let Some(env) = workspace(config) else {
        return;
    };
    let mut d = crate::daemon::Daemon::start(&env, &["--http", "127.0.0.1:0"]);
    let list = d.request("tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["run_script", "search_tools"], "{list}");

    // search_tools ranks by what a tool does and hands back definitions ready to call.
    let found = d.call(
        "search_tools",
        json!({ "query": "read a text file", "limit": 3 }),
    );
    assert!(!found.is_error(), "{}", found.text());
    let s = &found.result["structuredContent"];
    assert_eq!(s["tools"][0]["name"], "read_file", "{s:#}");
    assert_eq!(s["tools"][0]["inputSchema"]["required"], json!(["path"]));
    assert_eq!(s["tools"].as_array().unwrap().len(), 3);
    assert!(s["searched"].as_u64().unwrap() >= 8, "{s:#}");
    // Deterministic: the same query, the same answer.
    let again = d.call(
        "search_tools",
        json!({ "query": "read a text file", "limit": 3 }),
    );
    assert_eq!(again.result["structuredContent"], *s);
    let none = d.call("search_tools", json!({ "query": "zzqx" }));
    assert!(
        none.text().starts_with("No tool matches 'zzqx'"),
        "{}",
        none.text()
    );

    // A tool left out of the list is still called directly, and from a script.
    let direct = d.call("read_file", json!({ "path": "notes/a.txt" }));
    assert!(
        direct.text().starts_with("match line 0"),
        "{}",
        direct.text()
    );
    let scripted = d.call(
        "run_script",
        json!({ "code": "const t = await tools.read_file({ path: 'notes/b.txt' }); return t.split('\\n').length" }),
    );
    assert!(!scripted.is_error(), "{}", scripted.text());
    assert_eq!(scripted.result["structuredContent"]["result"], 7);

    // The 2026-07-28 era, stateless over HTTP: the same short list, the same script.
    let addr = d.http.unwrap();
    let modern = |method: &str, params: Value| {
        crate::daemon::modern_request(addr, method, params, json!({}), None)
    };
    let list = modern("tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["run_script", "search_tools"], "{list}");
    let answer = modern(
        "tools/call",
        json!({ "name": "run_script", "arguments": { "code": "return (await tools.search_tools({ query: 'list a directory', limit: 1 })).tools[0].name" } }),
    );
    // The script's search answers as a direct search does.
    let direct = d.call(
        "search_tools",
        json!({ "query": "list a directory", "limit": 1 }),
    );
    assert_eq!(
        answer["result"]["structuredContent"]["result"],
        direct.result["structuredContent"]["tools"][0]["name"],
        "{answer}"
    );
    let status = d.stop();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batch_api_lists_short_or_all_and_runs_a_script_whose_calls_nest_under_the_batch() {
    let config = "[server]\nshort-list = [\"search_tools\", \"run_script\"]\n\
        [plugins.search_tools]\ncall-tools = [\"*\"]\n\
        [plugins.run_script]\npermissions = { allow = [\"run_script\"] }\ncall-tools = [\"read_file\"]\n";
    let Some(env) = workspace(config) else {
        return;
    };
    let p = env.pipeline(8).await;
    let app = crate::batch::app(p, &env.config().server);
    let names = |reply: crate::batch::Reply| -> Vec<String> {
        let list = reply.json();
        list.as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let short = crate::batch::request(&app, "GET", "/v1/tools?format=anthropic", &[], "").await;
    assert_eq!(names(short), ["run_script", "search_tools"]);
    let all =
        crate::batch::request(&app, "GET", "/v1/tools?format=anthropic&all=true", &[], "").await;
    assert!(names(all).contains(&"read_file".to_owned()));

    let message = crate::batch::anthropic(&[(
        "s1",
        "run_script",
        json!({ "code": "return (await tools.read_file({ path: 'notes/c.txt' })).split('\\n').length" }),
    )]);
    let reply =
        crate::batch::request(&app, "POST", "/v1/tool-calls", &[], &message.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(
        reply.body.contains("\"tool_use_id\":\"s1\""),
        "{}",
        reply.body
    );
    let script = env
        .audit()
        .into_iter()
        .find(|r| r["tool"] == "run_script")
        .unwrap();
    assert_eq!(script["outcome"], "ok", "{script:#}");
    assert!(
        script["parent_id"].is_string(),
        "the batch is the script's parent: {script:#}"
    );
    let nested = children(&env, script["call_id"].as_str().unwrap());
    assert_eq!(nested.len(), 1);
    assert_eq!(
        (nested[0]["tool"].as_str(), nested[0]["origin"].as_str()),
        (Some("read_file"), script["origin"].as_str())
    );
}

#[test]
fn the_audit_tree_is_whole_after_a_shutdown_and_after_a_kill() {
    let config = "[server]\nshutdown-grace-ms = 300\n\
        [plugins.run_script]\npermissions = { allow = [\"run_script\"] }\ncall-tools = [\"sleep\"]\n\
        limits = { timeout-ms = 60000 }\n[plugins.hostile.limits]\ntimeout-ms = 60000\n";
    for kill in [false, true] {
        let Some(env) = workspace(config) else {
            return;
        };
        let mut d =
            crate::daemon::Daemon::start_env(&env, &["--no-watch"], &[("TOOLHOST_LOG", "info")]);
        let id = d.id();
        d.send(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "run_script", "arguments": { "code": "await tools.sleep({ ms: 30000 }); return 1" } }
        }));
        // The script and its nested sleep are both running, each recorded as begun.
        env.wait_for_begins(2);
        let begins: Vec<Value> = env
            .audit_lines()
            .into_iter()
            .filter(|l| l["event"] == "begin")
            .collect();
        let script = begins.iter().find(|b| b["tool"] == "run_script").unwrap();
        let sleep = begins.iter().find(|b| b["tool"] == "sleep").unwrap();
        assert_eq!(sleep["parent_id"], script["call_id"]);
        d.signal("TERM");
        if kill {
            d.wait_for_stderr("for calls in flight");
            d.signal("KILL");
            d.wait(Duration::from_secs(10));
            // Both stay in the log as begun and unfinished, the tree intact.
            let out = env.run(&["audit", "--json"]);
            let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(summary["total"]["unfinished"], 2, "{summary}");
        } else {
            // The grace ends both; each has its end record, the nested one under the script.
            let status = d.wait(Duration::from_secs(20));
            assert!(status.success(), "{status:?}");
            let ends = env.audit();
            assert_eq!(ends.len(), 2, "{ends:#?}");
            assert!(
                ends.iter().all(|r| r["error_kind"] == "cancelled"),
                "{ends:#?}"
            );
            let nested = children(&env, script["call_id"].as_str().unwrap());
            assert_eq!(nested.len(), 1);
        }
    }
}
