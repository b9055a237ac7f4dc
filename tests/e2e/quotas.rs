//! Fair shares (`quota` in a `[[callers]]` profile and in a tool's table): calls per window with a
//! burst, calls at once, fuel per window; each refusal a recorded `rate_limited` result that says
//! when to retry, and a whole batch over its share a `429` with `Retry-After`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolhost::exec::{CallOutcome, CallRequest, Pipeline};
use toolhost_gate::caller::Caller;

use crate::harness::Env;

const AUTH: &str = "[auth]\nissuer = \"https://idp.test\"\naudience = \"https://tools.test/mcp\"\n";

fn who(sub: &str) -> Option<Arc<Caller>> {
    Some(Arc::new(Caller {
        issuer: "https://idp.test".into(),
        subject: sub.into(),
        ..Caller::default()
    }))
}

async fn call(p: &Pipeline, tool: &str, caller: Option<Arc<Caller>>) -> CallOutcome {
    let input = match tool {
        "sleep" => json!({ "ms": 1500 }),
        _ => json!({ "text": "x" }),
    };
    p.call(CallRequest {
        tool: tool.into(),
        input,
        origin: "test",
        caller,
        ..CallRequest::default()
    })
    .await
}

fn kind(o: &CallOutcome) -> &'static str {
    o.error_kind().map_or("ok", |k| k.as_str())
}

#[tokio::test]
async fn a_tool_quota_gives_each_caller_its_burst_then_says_when_to_retry() {
    let config = format!(
        "{AUTH}[[callers]]\nname = \"team\"\nmatch = {{}}\n\
         [plugins.echo.tools.echo]\nquota = {{ calls = 2, per-s = 60 }}\n"
    );
    let env = Env::new(&["echo"], &config);
    let p = env.pipeline(4).await;
    for _ in 0..2 {
        assert_eq!(kind(&call(&p, "echo", who("alice")).await), "ok");
    }
    let o = call(&p, "echo", who("alice")).await;
    assert_eq!(kind(&o), "rate_limited", "{}", o.content);
    assert!(
        o.content.starts_with("Rate limited: ")
            && o.content
                .contains("may start 2 call(s) of 'echo' per minute")
            && o.content.ends_with("retry in 30 s."),
        "{}",
        o.content
    );
    let wait = o.retry_after.unwrap();
    assert!(
        wait > Duration::from_secs(29) && wait <= Duration::from_secs(30),
        "{wait:?}"
    );
    // Another caller has a share of its own; the local operator too.
    assert_eq!(kind(&call(&p, "echo", who("bob")).await), "ok");
    assert_eq!(kind(&call(&p, "echo", None).await), "ok");
    // Recorded like every outcome.
    let records = env.audit();
    let limited: Vec<_> = records
        .iter()
        .filter(|r| r["error_kind"] == "rate_limited")
        .collect();
    assert_eq!(limited.len(), 1, "{records:#?}");
    assert_eq!(limited[0]["caller"]["subject"], "alice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_quota_bounds_its_calls_at_once_and_its_fuel() {
    let config = format!(
        "{AUTH}[[callers]]\nname = \"one-at-a-time\"\nmatch = {{ sub = \"alice\" }}\n\
         quota = {{ in-flight = 1 }}\n\
         [[callers]]\nname = \"frugal\"\nmatch = {{ sub = \"bob\" }}\n\
         quota = {{ fuel = 1000, per-s = 60 }}\n"
    );
    let env = Env::new(&["echo", "hostile"], &config);
    let p = env.pipeline(8).await;

    // alice: a second call while her first runs is refused; once it ended, she may call again.
    let first = {
        let p = p.clone();
        tokio::spawn(async move { call(&p, "sleep", who("alice")).await })
    };
    env.wait_for_begins(1);
    let o = call(&p, "echo", who("alice")).await;
    assert_eq!(kind(&o), "rate_limited", "{}", o.content);
    assert!(
        o.content.contains("already has 1 call(s) running"),
        "{}",
        o.content
    );
    assert!(o.retry_after.is_none());
    assert_eq!(kind(&first.await.unwrap()), "ok");
    assert_eq!(kind(&call(&p, "echo", who("alice")).await), "ok");

    // bob: his first call runs on what is left of his budget (1000, less than an echo needs) and
    // runs out of it; the next waits until the budget refills.
    let o = call(&p, "echo", who("bob")).await;
    assert_eq!(kind(&o), "out_of_fuel", "{}", o.content);
    let o = call(&p, "echo", who("bob")).await;
    assert_eq!(kind(&o), "rate_limited", "{}", o.content);
    assert!(
        o.content.contains("used its fuel budget (1000 per minute)"),
        "{}",
        o.content
    );
    assert!(o.retry_after.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_entirely_over_its_share_is_429_with_retry_after_and_a_partial_one_is_200() {
    let env = Env::new(
        &["echo"],
        "[plugins.echo.tools.echo]\nquota = { calls = 3, per-s = 60 }\n",
    );
    let p = env.pipeline(4).await;
    let app = crate::batch::app(p, &env.config().server);
    let message = |n: usize| {
        let calls: Vec<(String, &str, serde_json::Value)> = (0..n)
            .map(|i| (format!("c{i}"), "echo", json!({ "text": "x" })))
            .collect();
        let calls: Vec<(&str, &str, serde_json::Value)> = calls
            .iter()
            .map(|(id, t, v)| (id.as_str(), *t, v.clone()))
            .collect();
        crate::batch::anthropic(&calls).to_string()
    };
    let partial = crate::batch::request(&app, "POST", "/v1/tool-calls", &[], &message(4)).await;
    assert_eq!(partial.status, 200, "{}", partial.body);
    assert_eq!(
        partial.body.matches("Rate limited").count(),
        1,
        "{}",
        partial.body
    );
    let over = crate::batch::request(&app, "POST", "/v1/tool-calls", &[], &message(2)).await;
    assert_eq!(over.status, 429, "{}", over.body);
    let retry: u64 = over.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=20).contains(&retry), "{retry}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_started_together_never_spend_more_fuel_than_the_budget_holds() {
    // A budget of two calls' fuel limits. A short call first: it reserves a whole limit and gives
    // back what it did not use. Then eight calls that each burn all they may, at once: each
    // reserves at admission, so only two run on a whole limit, the rest on the crumbs the budget
    // refilled meanwhile (or none), instead of eight on a whole limit each.
    let (budget, limit): (u64, u64) = (200_000_000, 100_000_000);
    let config = format!(
        "{AUTH}[permissions]\nmode = \"bypass\"\n[plugins.hostile.limits]\nfuel = {limit}\n\
         timeout-ms = 60000\n\
         [[callers]]\nname = \"metered\"\nmatch = {{ sub = \"carol\" }}\n\
         quota = {{ fuel = {budget}, per-s = 3600 }}\n"
    );
    let env = Env::new(&["hostile"], &config);
    let p = env.pipeline(16).await;
    let spin = |input: serde_json::Value| {
        let p = p.clone();
        async move {
            p.call(CallRequest {
                tool: "spin".into(),
                input,
                origin: "test",
                caller: who("carol"),
                ..CallRequest::default()
            })
            .await
        }
    };
    let o = spin(json!({ "iterations": 1 })).await;
    assert_eq!(kind(&o), "ok", "{}", o.content);
    let calls: Vec<_> = (0..8).map(|_| tokio::spawn(spin(json!({})))).collect();
    let mut kinds = Vec::new();
    for c in calls {
        kinds.push(kind(&c.await.unwrap()));
    }
    let used: Vec<u64> = env
        .audit()
        .iter()
        .filter_map(|r| r["fuel_used"].as_u64())
        .collect();
    let total: u64 = used.iter().sum();
    // The budget refills at budget/3600 per second while the calls run: a few seconds' worth.
    assert!(
        total <= budget + budget / 360,
        "{used:?} used {total} fuel against a budget of {budget}: {kinds:?}"
    );
    // Two ran on (nearly) a whole limit: the short call's unused reservation came back.
    let whole = used.iter().filter(|u| **u > limit / 10 * 9).count();
    assert_eq!(whole, 2, "{used:?} {kinds:?}");
    assert!(
        kinds
            .iter()
            .all(|k| *k == "out_of_fuel" || *k == "rate_limited"),
        "{kinds:?}"
    );
}
