//! toolhost as an OAuth 2.1 resource server, against a real local issuer (tests/e2e/issuer.rs: keys
//! and signatures made by openssl, a JWKS on 127.0.0.1): valid tokens, each kind of bad one refused
//! with the right status and challenge, a key rotation mid-run, and two callers whose profiles give
//! them different tools and decisions, each named in the audit log; a session answers only the
//! caller that opened it.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::daemon::{Daemon, HttpSession, MCP_HEADERS, http};
use crate::harness::Env;
use crate::issuer::{Alg, INTROSPECTION_CLIENT, Issuer, now};

const AUDIENCE: &str = "https://tools.example.test/mcp";

struct Setup {
    issuer: Issuer,
    env: Env,
    daemon: Daemon,
    addr: SocketAddr,
}

fn setup() -> Setup {
    setup_with(|_| String::new(), &[])
}

/// The setup with more `[auth]` settings (given the issuer) and environment for the daemon.
fn setup_with(more: impl Fn(&Issuer) -> String, vars: &[(&str, &str)]) -> Setup {
    let issuer = Issuer::start();
    let more = more(&issuer);
    let config = format!(
        r#"
[auth]
issuer = "{}"
audience = "{AUDIENCE}"
scopes-supported = ["mcp", "tools.read", "tools.all"]
required-scope = "mcp"
{more}
[[callers]]
name = "readers"
match = {{ scope = "tools.read" }}
tools = ["echo"]
mode = "plan"

[[callers]]
name = "ci"
match = {{ sub = "ci-bot", scope = "tools.all" }}
deny = ["stats"]
"#,
        issuer.url()
    );
    let env = Env::new(&["echo", "math"], &config);
    let daemon = Daemon::start_env(&env, &["--no-watch", "--http", "127.0.0.1:0"], vars);
    let addr = daemon.http.unwrap();
    Setup {
        issuer,
        env,
        daemon,
        addr,
    }
}

impl Setup {
    fn claims(&self, sub: &str, scope: &str) -> Value {
        json!({
            "iss": self.issuer.url(), "aud": AUDIENCE, "sub": sub, "scope": scope,
            "client_id": "e2e-client", "iat": now(), "exp": now() + 300,
        })
    }

    fn token(&self, sub: &str, scope: &str) -> String {
        self.issuer
            .sign("rsa-1", Alg::Rs256, &self.claims(sub, scope))
    }

    /// An `initialize` with `token`: its status, challenge and body.
    fn try_token(&self, token: &str) -> (u16, String, String) {
        let init = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "e2e", "version": "1" } }
        });
        let bearer = format!("Bearer {token}");
        let mut headers = MCP_HEADERS.to_vec();
        headers.push(("Authorization", &bearer));
        let reply = http(
            self.addr,
            "POST",
            "/mcp",
            &headers,
            init.to_string().as_bytes(),
        );
        (
            reply.status,
            reply
                .header("www-authenticate")
                .unwrap_or_default()
                .to_string(),
            reply.text(),
        )
    }

    fn session(&self, token: &str) -> HttpSession {
        let bearer = format!("Bearer {token}");
        HttpSession::open(self.addr, &[("Authorization", &bearer)]).unwrap()
    }
}

fn tool_names(session: &mut HttpSession) -> Vec<String> {
    let reply = session
        .post(br#"{"jsonrpc":"2.0","id":50,"method":"tools/list","params":{}}"#)
        .unwrap();
    let answer = reply
        .messages()
        .into_iter()
        .find(|m| m["id"] == 50)
        .unwrap();
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn tokens_are_verified_locally_and_each_bad_one_is_refused_with_its_challenge() {
    let s = setup();
    let metadata_url = "https://tools.example.test/.well-known/oauth-protected-resource/mcp";

    // No token: 401 pointing at the metadata, which anyone may read.
    let reply = http(s.addr, "POST", "/mcp", &MCP_HEADERS, b"{}");
    assert_eq!(reply.status, 401, "{}", reply.text());
    assert_eq!(
        reply.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\"").as_str())
    );
    let meta = http(
        s.addr,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[],
        b"",
    );
    assert_eq!(meta.status, 200);
    let doc: Value = serde_json::from_slice(&meta.body).unwrap();
    assert_eq!(doc["resource"], AUDIENCE);
    assert_eq!(doc["authorization_servers"], json!([s.issuer.url()]));
    assert_eq!(doc["scopes_supported"][1], "tools.read");

    // Valid: RS256 and ES256.
    let good = s.token("alice", "mcp tools.read");
    assert_eq!(s.try_token(&good).0, 200);
    let es = s
        .issuer
        .sign("ec-1", Alg::Es256, &s.claims("alice", "mcp tools.read"));
    assert_eq!(s.try_token(&es).0, 200);

    let with = |f: &dyn Fn(&mut Value)| {
        let mut c = s.claims("alice", "mcp tools.read");
        f(&mut c);
        s.issuer.sign("rsa-1", Alg::Rs256, &c)
    };
    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "expired",
            with(&|c| c["exp"] = json!(now() - 120)),
            401,
            "expired",
        ),
        (
            "not yet valid",
            with(&|c| c["nbf"] = json!(now() + 600)),
            401,
            "not valid yet",
        ),
        (
            "another audience",
            with(&|c| c["aud"] = json!("https://other.example/mcp")),
            401,
            "not for this server",
        ),
        (
            "another issuer",
            with(&|c| c["iss"] = json!("https://evil.example")),
            401,
            "is not from",
        ),
        (
            "no exp",
            with(&|c| {
                c.as_object_mut().unwrap().remove("exp");
            }),
            401,
            "exp",
        ),
        (
            "alg none",
            s.issuer.unsigned(&s.claims("alice", "mcp tools.read")),
            401,
            "invalid_token",
        ),
        (
            "HS256 with the public key",
            s.issuer
                .hs256_with_public_key(&s.claims("alice", "mcp tools.read")),
            401,
            "HS256 is not accepted",
        ),
        (
            "unknown key",
            s.issuer.sign_with_header(
                "rsa-1",
                &json!({"alg": "RS256", "typ": "JWT", "kid": "nobody"}),
                &s.claims("alice", "mcp tools.read"),
            ),
            401,
            "no key",
        ),
        (
            "tampered",
            {
                let mut t = good.clone();
                let n = t.len();
                t.replace_range(n - 6..n - 3, "AAA");
                t
            },
            401,
            "invalid_token",
        ),
        (
            "missing the required scope",
            s.token("alice", "tools.read"),
            403,
            "insufficient_scope",
        ),
        (
            "no profile",
            s.token("bob", "mcp"),
            403,
            "insufficient_scope",
        ),
    ];
    for (what, token, status, needle) in cases {
        let (got, challenge, body) = s.try_token(&token);
        assert_eq!(got, status, "{what}: {body}");
        assert!(
            challenge.contains(needle) || body.contains(needle),
            "{what}: {challenge} / {body}"
        );
        assert!(challenge.contains(metadata_url), "{what}: {challenge}");
    }
    let (_, challenge, _) = s.try_token(&s.token("alice", "tools.read"));
    assert!(challenge.contains("scope=\"mcp\""), "{challenge}");
    let (_, _, body) = s.try_token(&s.token("bob", "mcp"));
    assert!(body.contains("no [[callers]] profile"), "{body}");

    // The issuer rotates its key mid-run: a token with the new key id is accepted (the JWKS is
    // fetched again), and one from the retired key no longer is. No restart.
    let before = s.issuer.jwks_fetches();
    // A sleep on purpose: the daemon fetches the JWKS at most once a second, and that second must
    // pass by the clock before an unknown key id may trigger a fetch.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    s.issuer.rotate("rsa-2", true);
    let rotated = s
        .issuer
        .sign("rsa-2", Alg::Rs256, &s.claims("alice", "mcp tools.read"));
    assert_eq!(s.try_token(&rotated).0, 200);
    assert!(s.issuer.jwks_fetches() > before);
    let (status, challenge, _) = s.try_token(&good);
    assert_eq!(status, 401, "{challenge}");
    // Nothing ran, and nothing was recorded, for any refused request.
    assert!(s.env.audit().is_empty());
    drop(s.daemon);
}

#[test]
fn two_callers_see_different_tools_and_decisions_and_the_audit_names_each() {
    let s = setup();
    let reader_token = s.token("alice", "mcp tools.read");
    let ci_token = s.token("ci-bot", "mcp tools.all");
    let mut reader = s.session(&reader_token);
    let mut ci = s.session(&ci_token);

    assert_eq!(tool_names(&mut reader), ["echo"]);
    assert_eq!(tool_names(&mut ci), ["calc", "echo", "stats"]);
    // The batch API's definitions too.
    let bearer = format!("Bearer {reader_token}");
    let defs = http(
        s.addr,
        "GET",
        "/v1/tools?format=anthropic",
        &[("Authorization", &bearer)],
        b"",
    );
    let defs: Value = serde_json::from_slice(&defs.body).unwrap();
    let names: Vec<&str> = defs
        .as_array()
        .unwrap_or_else(|| panic!("{defs}"))
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo"]);

    let ok = reader.call("echo", json!({"text": "hi"})).unwrap();
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    // A tool outside the profile does not exist, for this caller.
    let hidden = reader
        .call("calc", json!({"op": "add", "a": 1, "b": 2}))
        .unwrap();
    assert!(
        hidden.to_string().contains("Unknown tool") || hidden.to_string().contains("unknown"),
        "{hidden}"
    );
    assert!(!hidden.to_string().contains("stats"), "{hidden}");

    let calc = ci
        .call("calc", json!({"op": "add", "a": 1, "b": 2}))
        .unwrap();
    assert_eq!(calc["result"]["isError"], false, "{calc}");
    let denied = ci.call("stats", json!({"numbers": [1, 2]})).unwrap();
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert!(
        denied.to_string().contains("in the caller policy"),
        "{denied}"
    );

    let records = s.env.audit();
    let by = |sub: &str| -> Vec<&Value> {
        records
            .iter()
            .filter(|r| r["caller"]["subject"] == sub)
            .collect()
    };
    assert_eq!(by("alice").len(), 2, "{records:?}");
    assert_eq!(by("ci-bot").len(), 2, "{records:?}");
    for r in &records {
        assert_eq!(r["caller"]["issuer"], s.issuer.url());
        assert_eq!(r["caller"]["client_id"], "e2e-client");
    }
    assert!(
        by("ci-bot").iter().any(|r| r["tool"] == "stats"
            && r["outcome"] == "error"
            && r["error_kind"] == "denied")
    );
    let log = std::fs::read_to_string(s.env.path().join(".toolhost/audit.jsonl")).unwrap();
    assert!(
        !log.contains(&reader_token) && !log.contains(&ci_token),
        "no token in the audit log"
    );
    drop(s.daemon);
}

#[test]
fn opaque_tokens_are_introspected_as_toolhosts_client() {
    let s = setup_with(
        |issuer| {
            format!(
                "[auth.introspection]\nurl = \"{}\"\nclient-id = \"{}\"\nclient-secret-env = \"INTROSPECT_SECRET\"\n",
                issuer.introspection_url(),
                INTROSPECTION_CLIENT.0
            )
        },
        &[("INTROSPECT_SECRET", INTROSPECTION_CLIENT.1)],
    );
    let claims = |aud: &str| {
        json!({"iss": s.issuer.url(), "aud": aud, "sub": "alice", "scope": "mcp tools.read",
               "client_id": "opaque-client", "exp": now() + 300})
    };
    let active = s.issuer.opaque(&claims(AUDIENCE));
    let mut session = s.session(&active);
    assert_eq!(tool_names(&mut session), ["echo"]);
    let ok = session.call("echo", json!({"text": "opaque"})).unwrap();
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    let (status, challenge, _) = s.try_token("opaque-never-issued");
    assert_eq!(status, 401);
    assert!(challenge.contains("not active"), "{challenge}");
    let elsewhere = s.issuer.opaque(&claims("https://other.example/mcp"));
    let (status, challenge, _) = s.try_token(&elsewhere);
    assert_eq!(status, 401);
    assert!(challenge.contains("not for this server"), "{challenge}");
    // JWTs still verify locally beside introspection.
    assert_eq!(s.try_token(&s.token("alice", "mcp tools.read")).0, 200);
    let record = s.env.audit().pop().unwrap();
    assert_eq!(record["caller"]["client_id"], "opaque-client");
    drop(s.daemon);
}

/// The status of a `GET /mcp` (the session's event stream) with these headers: only the status line
/// is read, since an opened stream never ends.
fn open_stream_status(addr: SocketAddr, headers: &[(&str, &str)]) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut head = format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    (&stream).write_all(head.as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).unwrap();
    line.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {line:?}"))
}

#[test]
fn a_session_answers_only_the_caller_that_opened_it() {
    let s = setup();
    let alice_token = s.token("alice", "mcp tools.read");
    let mut alice = s.session(&alice_token);
    let stolen = alice.session.clone();
    // What a session that never existed gets; another caller naming alice's must get the same.
    let unknown = "3f0b6c1e-0d5a-4c55-8d0e-6f9a2b7c4e10";
    let mallory = format!("Bearer {}", s.token("mallory", "mcp tools.read"));
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "hijacked"}}});
    let as_mallory = |method: &str, session: &str, body: &[u8]| {
        let mut headers = MCP_HEADERS.to_vec();
        headers.push(("Authorization", &mallory));
        headers.push(("mcp-session-id", session));
        headers.push(("MCP-Protocol-Version", "2025-11-25"));
        let reply = http(s.addr, method, "/mcp", &headers, body);
        (reply.status, reply.text())
    };
    let body = call.to_string();
    for method in ["POST", "DELETE"] {
        let body = if method == "POST" {
            body.as_bytes()
        } else {
            b""
        };
        let foreign = as_mallory(method, &stolen, body);
        assert_eq!(
            foreign,
            as_mallory(method, unknown, body),
            "{method} in another caller's session is answered as for an unknown session"
        );
        assert_eq!(foreign.0, 404, "{method}: {foreign:?}");
    }
    let stream = |bearer: &str, session: &str| {
        open_stream_status(
            s.addr,
            &[
                ("Authorization", bearer),
                ("mcp-session-id", session),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
        )
    };
    assert_eq!(
        stream(&mallory, &stolen),
        404,
        "another caller's event stream"
    );
    assert_eq!(stream(&mallory, unknown), 404);
    let alice_bearer = format!("Bearer {alice_token}");
    assert_eq!(
        stream(&alice_bearer, &stolen),
        200,
        "the owner's event stream"
    );
    // Two session headers, the first alice's, are not a way in either.
    let mut headers = MCP_HEADERS.to_vec();
    headers.extend([
        ("Authorization", mallory.as_str()),
        ("mcp-session-id", stolen.as_str()),
        ("mcp-session-id", unknown),
        ("MCP-Protocol-Version", "2025-11-25"),
    ]);
    assert_eq!(
        http(s.addr, "POST", "/mcp", &headers, body.as_bytes()).status,
        404
    );

    // The session is still alice's, whole: nothing ran for mallory, and alice ends it herself.
    let ok = alice.call("echo", json!({"text": "mine"})).unwrap();
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    let records = s.env.audit();
    assert!(
        records.iter().all(|r| r["caller"]["subject"] == "alice"),
        "{records:?}"
    );
    assert_eq!(records.len(), 1, "{records:?}");
    let mut headers = MCP_HEADERS.to_vec();
    headers.extend([
        ("Authorization", alice_bearer.as_str()),
        ("mcp-session-id", stolen.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ]);
    assert_eq!(http(s.addr, "DELETE", "/mcp", &headers, b"").status, 204);
    drop(s.daemon);
}
