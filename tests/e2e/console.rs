//! The console's API as an attacker meets it (the page itself is tested in a real browser,
//! tests/console/): a caller without the operator role sees nothing; a session comes only from the
//! one-time link; an answer needs the session's anti-CSRF token, the console's own origin and the
//! digest of the input waiting, and is taken once; an operator's cancel stops a running call. Each
//! answer reaches the waiting client and the audit log names the operator.

use std::net::SocketAddr;
use std::thread;

use serde_json::{Value, json};

use crate::daemon::{Daemon, http};
use crate::harness::{EVENT_WAIT, Env, wait_for};
use crate::issuer::{Alg, Issuer, now};

pub(crate) const ASKING: &str =
    "[permissions]\nask = [\"echo\"]\n[server]\napproval-timeout-ms = 30000\n";

pub(crate) fn batch(addr: SocketAddr, tool: &str, input: Value) -> Value {
    let body = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": tool, "input": input}
    ]});
    let reply = http(
        addr,
        "POST",
        "/v1/tool-calls?format=anthropic",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    );
    serde_json::from_slice(&reply.body).expect("a JSON batch answer")
}

/// A browser's session: the cookie from the one-time link, and the session's CSRF token.
pub(crate) struct Browser {
    pub(crate) addr: SocketAddr,
    pub(crate) cookie: String,
    pub(crate) csrf: String,
}

impl Browser {
    pub(crate) fn sign_in(daemon: &Daemon) -> Self {
        let addr = daemon.http.unwrap();
        let link = sign_in_link(daemon);
        let reply = http(addr, "GET", &link, &[], b"");
        assert_eq!(
            reply.status,
            303,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        let set = reply.header("set-cookie").expect("a session cookie");
        assert!(
            set.contains("HttpOnly")
                && set.contains("SameSite=Strict")
                && set.contains("Path=/console"),
            "{set}"
        );
        let cookie = set.split(';').next().unwrap().to_owned();
        let again = http(addr, "GET", &link, &[], b"");
        assert_eq!(again.status, 403, "a sign-in link works once");
        let session = get(addr, "/console/api/session", &[("Cookie", &cookie)]);
        let csrf = session["csrf"].as_str().unwrap().to_owned();
        Self { addr, cookie, csrf }
    }

    pub(crate) fn get(&self, path: &str) -> Value {
        get(self.addr, path, &[("Cookie", &self.cookie)])
    }

    pub(crate) fn post(&self, path: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
        let mut all = vec![
            ("Cookie", self.cookie.as_str()),
            ("Content-Type", "application/json"),
        ];
        all.extend_from_slice(headers);
        let reply = http(self.addr, "POST", path, &all, body.to_string().as_bytes());
        let value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
        (reply.status, value)
    }

    /// The questions the console lists now.
    pub(crate) fn listed(&self) -> Vec<Value> {
        self.get("/console/api/approvals")["approvals"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    pub(crate) fn waiting(&self) -> Value {
        wait_for("a question in the console", EVENT_WAIT, || {
            self.get("/console/api/approvals")["approvals"]
                .as_array()
                .and_then(|a| a.first().cloned())
        })
    }
}

fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Value {
    let reply = http(addr, "GET", path, headers, b"");
    assert_eq!(
        reply.status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&reply.body)
    );
    serde_json::from_slice(&reply.body).unwrap()
}

const AUDIENCE: &str = "https://tools.example.test/mcp";

/// A daemon behind `issuer` (`[auth]`, plus `more` config), where alice is an operator and every
/// other caller an ordinary one.
fn behind(issuer: &Issuer, more: &str) -> (Env, Daemon) {
    let config = format!(
        "[auth]\nissuer = \"{}\"\naudience = \"{AUDIENCE}\"\n{more}\n\
         [[callers]]\nname = \"ops\"\nmatch = {{ sub = \"alice\" }}\nrole = \"operator\"\n\n\
         [[callers]]\nname = \"users\"\nmatch = {{}}\n",
        issuer.url()
    );
    let env = Env::new(&["echo"], &config);
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &[]);
    (env, daemon)
}

/// A token `issuer` signs for `sub`, for this daemon.
fn token_for(issuer: &Issuer, sub: &str) -> String {
    let claims = json!({"iss": issuer.url(), "aud": AUDIENCE, "sub": sub,
                        "iat": now(), "exp": now() + 300});
    issuer.sign("rsa-1", Alg::Rs256, &claims)
}

pub(crate) fn sign_in_link(daemon: &Daemon) -> String {
    let log = daemon.wait_for_stderr("console sign-in link (once): ");
    let line = log
        .lines()
        .find(|l| l.contains("console sign-in link"))
        .unwrap();
    let url = line.rsplit(' ').next().unwrap();
    url.split_once("/console/")
        .map(|(_, p)| format!("/console/{p}"))
        .unwrap()
}

#[test]
fn an_answer_needs_the_session_its_token_this_origin_and_the_input_shown_and_counts_once() {
    let env = Env::new(&["echo"], ASKING);
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &[]);
    let addr = daemon.http.unwrap();
    // Nothing without a session: not the API, not a forged cookie.
    let anonymous = http(addr, "GET", "/console/api/approvals", &[], b"");
    assert_eq!(anonymous.status, 401);
    let forged = http(
        addr,
        "GET",
        "/console/api/approvals",
        &[("Cookie", "toolhost_console=00")],
        b"",
    );
    assert_eq!(forged.status, 401);
    let browser = Browser::sign_in(&daemon);

    // A client without elicitation (the batch API) waits for the console.
    let client = thread::spawn(move || batch(addr, "echo", json!({"text": "<b>hi</b>"})));
    let question = browser.waiting();
    assert_eq!(question["tool"], "echo");
    assert_eq!(question["origin"], "batch");
    assert_eq!(question["input"]["text"], "<b>hi</b>");
    let id = question["id"].as_str().unwrap();
    let path = format!("/console/api/approvals/{id}");
    let digest = question["input_sha256"].as_str().unwrap();
    let approve = json!({"answer": "approve", "input_sha256": digest});
    let token = [("X-CSRF-Token", browser.csrf.as_str())];

    // Cross-site: without the token, with another origin, with the browser's cross-site marker.
    assert_eq!(browser.post(&path, &[], &approve).0, 403);
    let evil = [
        ("X-CSRF-Token", browser.csrf.as_str()),
        ("Origin", "http://127.0.0.1:1"),
    ];
    assert_eq!(browser.post(&path, &evil, &approve).0, 403);
    let sibling = [
        ("X-CSRF-Token", browser.csrf.as_str()),
        ("Sec-Fetch-Site", "same-site"),
    ];
    assert_eq!(browser.post(&path, &sibling, &approve).0, 403);
    // An answer for another input than the one waiting.
    let other = json!({"answer": "approve", "input_sha256": "0".repeat(64)});
    assert_eq!(browser.post(&path, &token, &other).0, 409);
    assert_eq!(
        browser
            .post("/console/api/approvals/nope", &token, &approve)
            .0,
        404
    );
    // None of those answered it.
    assert_eq!(browser.waiting()["id"], question["id"]);

    let (status, body) = browser.post(&path, &token, &approve);
    assert_eq!(status, 200, "{body}");
    let (replayed, body) = browser.post(&path, &token, &approve);
    assert_eq!(replayed, 409, "a replayed answer: {body}");

    let answer = client.join().unwrap();
    assert_eq!(answer["content"][0]["content"], "<b>hi</b>", "{answer}");
    let record = env
        .audit()
        .into_iter()
        .find(|r| r["tool"] == "echo")
        .unwrap();
    assert_eq!(
        record["decision"],
        json!({"kind": "asked", "answer": true, "operator": "local operator"})
    );
    let recent = browser.get("/console/api/calls")["recent"].clone();
    assert_eq!(recent[0]["call_id"], record["call_id"], "{recent}");

    // Signed out, the cookie is worth nothing.
    let (status, _) = browser.post("/console/api/signout", &token, &json!({}));
    assert_eq!(status, 200);
    let after = http(
        addr,
        "GET",
        "/console/api/approvals",
        &[("Cookie", &browser.cookie)],
        b"",
    );
    assert_eq!(after.status, 401);
}

#[test]
fn a_declined_question_and_an_operators_cancel_reach_the_client_and_the_log() {
    let config = format!("{ASKING}[plugins.hostile.limits]\ntimeout-ms = 60000\n");
    let env = Env::new(&["echo", "hostile"], &config);
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &[]);
    let addr = daemon.http.unwrap();
    let browser = Browser::sign_in(&daemon);
    let token = [("X-CSRF-Token", browser.csrf.as_str())];

    let client = thread::spawn(move || batch(addr, "echo", json!({"text": "no"})));
    let question = browser.waiting();
    let deny = json!({"answer": "deny", "input_sha256": question["input_sha256"]});
    let path = format!(
        "/console/api/approvals/{}",
        question["id"].as_str().unwrap()
    );
    assert_eq!(browser.post(&path, &token, &deny).0, 200);
    let answer = client.join().unwrap();
    assert_eq!(answer["content"][0]["is_error"], true, "{answer}");

    let client = thread::spawn(move || batch(addr, "sleep", json!({"ms": 50000})));
    let running = wait_for("the sleep call among the running", EVENT_WAIT, || {
        let calls = browser.get("/console/api/calls");
        calls["running"]
            .as_array()
            .and_then(|r| r.iter().find(|c| c["tool"] == "sleep").cloned())
    });
    let call_id = running["call_id"].as_str().unwrap();
    let cancel = format!("/console/api/calls/{call_id}/cancel");
    assert_eq!(browser.post(&cancel, &[], &json!({})).0, 403, "no token");
    assert_eq!(browser.post(&cancel, &token, &json!({})).0, 202);
    let answer = client.join().unwrap();
    let text = answer["content"][0]["content"].as_str().unwrap_or_default();
    assert!(text.contains("stopped by toolhost's operator"), "{answer}");
    assert_eq!(
        browser.post(&cancel, &token, &json!({})).0,
        404,
        "no longer running"
    );

    let records = env.audit();
    let declined = records.iter().find(|r| r["tool"] == "echo").unwrap();
    assert_eq!(
        declined["decision"],
        json!({"kind": "asked", "answer": false, "operator": "local operator"})
    );
    let cancelled = records.iter().find(|r| r["tool"] == "sleep").unwrap();
    assert_eq!(cancelled["error_kind"], "cancelled");
    assert_eq!(
        cancelled["detail"],
        "cancelled by the operator local operator"
    );
}

#[test]
fn a_caller_without_the_operator_role_sees_nothing_of_the_console() {
    let issuer = Issuer::start();
    let (_env, daemon) = behind(&issuer, "");
    let addr = daemon.http.unwrap();
    let token = |sub: &str| format!("Bearer {}", token_for(&issuer, sub));
    let (alice, bob) = (token("alice"), token("bob"));
    for path in [
        "/console/",
        "/console/api/approvals",
        "/console/api/calls",
        "/console/api/health",
    ] {
        let reply = http(addr, "GET", path, &[("Authorization", &bob)], b"");
        assert_eq!(
            reply.status,
            403,
            "{path}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        assert!(String::from_utf8_lossy(&reply.body).contains("role = \\\"operator\\\""));
    }
    let cancel = http(
        addr,
        "POST",
        "/console/api/calls/x/cancel",
        &[("Authorization", &bob)],
        b"{}",
    );
    assert_eq!(cancel.status, 403);
    // The operator needs no CSRF token with a bearer token: a browser cannot send one cross-site.
    let session = get(addr, "/console/api/session", &[("Authorization", &alice)]);
    assert!(
        session["operator"].as_str().unwrap().contains("alice"),
        "{session}"
    );
    assert_eq!(session["csrf"], Value::Null);
    let cancel = http(
        addr,
        "POST",
        "/console/api/calls/x/cancel",
        &[("Authorization", &alice)],
        b"{}",
    );
    assert_eq!(cancel.status, 404);
    // With [auth] the daemon prints no sign-in link: browsers sign in with the identity provider.
    assert!(
        !daemon.stderr().contains("sign-in link"),
        "{}",
        daemon.stderr()
    );
}

#[test]
fn the_page_is_served_with_a_strict_content_security_policy() {
    let env = Env::new(&["echo"], "");
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &[]);
    let addr = daemon.http.unwrap();
    for path in [
        "/console/",
        "/console/assets/app.js",
        "/console/api/session",
    ] {
        let reply = http(addr, "GET", path, &[], b"");
        let csp = reply.header("content-security-policy").unwrap_or_default();
        assert!(
            csp.contains("default-src 'none'")
                && csp.contains("script-src 'self'")
                && !csp.contains("unsafe-inline")
                && csp.contains("frame-ancestors 'none'"),
            "{path}: {csp:?}"
        );
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    }
    let page = http(addr, "GET", "/console/", &[], b"");
    let html = String::from_utf8_lossy(&page.body);
    assert!(
        !html.contains("<script>") && !html.contains("style="),
        "inline code: {html}"
    );
}

#[test]
fn an_operator_signs_in_through_the_identity_provider_with_pkce_and_nobody_else_does() {
    let issuer = Issuer::start();
    let (_env, daemon) = behind(&issuer, "[console]\nclient-id = \"toolhost-console\"\n");
    let addr = daemon.http.unwrap();
    let provider: SocketAddr = issuer.url().trim_start_matches("http://").parse().unwrap();
    let person = |sub: &str| issuer.sign_in_next_as(token_for(&issuer, sub));
    let path_of = |url: &str| format!("/{}", url.splitn(4, '/').nth(3).unwrap());
    // A browser goes to /console/login, signs in at the provider and comes back.
    let sign_in = || {
        let login = http(addr, "GET", "/console/login", &[], b"");
        assert_eq!(
            login.status,
            303,
            "{}",
            String::from_utf8_lossy(&login.body)
        );
        let to = login.header("location").unwrap().to_owned();
        assert!(
            to.starts_with(&format!("{}/authorize?", issuer.url())),
            "{to}"
        );
        assert!(
            to.contains("code_challenge_method=S256") && to.contains("client_id=toolhost-console"),
            "{to}"
        );
        let consent = http(provider, "GET", &path_of(&to), &[], b"");
        assert_eq!(
            consent.status,
            302,
            "{}",
            String::from_utf8_lossy(&consent.body)
        );
        let back = consent.header("location").unwrap().to_owned();
        assert!(
            back.starts_with(&format!("http://{addr}/console/callback?")),
            "{back}"
        );
        let path = path_of(&back);
        (http(addr, "GET", &path, &[], b""), path)
    };

    person("alice");
    let (done, callback) = sign_in();
    assert_eq!(done.status, 303, "{}", String::from_utf8_lossy(&done.body));
    let cookie = done
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let session = get(addr, "/console/api/session", &[("Cookie", &cookie)]);
    assert!(
        session["operator"].as_str().unwrap().contains("alice"),
        "{session}"
    );
    // The same callback again: its state was spent (and the provider's code too).
    assert_eq!(http(addr, "GET", &callback, &[], b"").status, 400);
    // A callback nobody started: a forged state.
    let forged = http(addr, "GET", "/console/callback?code=x&state=y", &[], b"");
    assert_eq!(forged.status, 400);

    // Bob signs in at the provider too, and is a caller, but no operator: no session.
    person("bob");
    let (refused, _) = sign_in();
    assert_eq!(
        refused.status,
        403,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    assert!(refused.header("set-cookie").is_none());
}

#[test]
fn the_audit_browser_filters_pages_and_exports_what_ran() {
    let env = Env::new(&["echo", "math"], "");
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], &[]);
    let addr = daemon.http.unwrap();
    let browser = Browser::sign_in(&daemon);
    for i in 0..5 {
        batch(addr, "echo", json!({"text": format!("call {i}")}));
    }
    batch(addr, "nope", json!({}));
    let echo = browser.get("/console/api/audit?tool=echo&limit=2");
    assert_eq!(echo["records"].as_array().unwrap().len(), 2, "{echo}");
    let next = echo["next"].as_str().expect("a cursor to the older ones");
    let older = browser.get(&format!(
        "/console/api/audit?tool=echo&limit=10&cursor={next}"
    ));
    assert_eq!(older["records"].as_array().unwrap().len(), 3, "{older}");
    let failed = browser.get("/console/api/audit?outcome=unknown_tool");
    assert_eq!(failed["records"][0]["tool"], "nope", "{failed}");
    let searched = browser.get("/console/api/audit?q=CALL%203");
    assert_eq!(
        searched["records"].as_array().unwrap().len(),
        0,
        "inputs are not in the log: {searched}"
    );
    let bad = http(
        addr,
        "GET",
        "/console/api/audit?outcome=great",
        &[("Cookie", &browser.cookie)],
        b"",
    );
    assert_eq!(bad.status, 400, "{}", String::from_utf8_lossy(&bad.body));
    let export = http(
        addr,
        "GET",
        "/console/api/audit/export?tool=echo",
        &[("Cookie", &browser.cookie)],
        b"",
    );
    assert_eq!(export.header("content-type"), Some("application/x-ndjson"));
    let lines: Vec<Value> = String::from_utf8_lossy(&export.body)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert!(
        lines
            .iter()
            .all(|l| l["tool"] == "echo" && l["event"] == "end")
    );
    let one = lines[0]["call_id"].as_str().unwrap();
    let found = browser.get(&format!("/console/api/calls/{one}"));
    assert_eq!(found["call_id"], one);
    let stats = browser.get("/console/api/stats");
    assert_eq!(stats["tools"]["echo"][0]["calls"], 5, "{stats}");
}
