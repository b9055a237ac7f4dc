//! Callers' own credentials (#41): a plugin's secret whose value each caller brings, from its
//! `[[callers]]` profile or by exchanging its own token at the identity provider (RFC 8693, the
//! test issuer's `/token`). Against a real HTTP server that records every request's headers:
//! alice's requests carry alice's credentials and bob's carry bob's, also when their calls run
//! at once, on two daemons and after a restart; a caller without one is told so and nothing is
//! sent; no value reaches a result or the audit log, which names the credential used.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::daemon::{Daemon, modern_request};
use crate::harness::Env;
use crate::issuer::{Alg, INTROSPECTION_CLIENT, Issuer, now};
use crate::network::Server;

const AUDIENCE: &str = "https://tools.example.test/mcp";
const ALICE_GH: &str = "alice-github-0123456789";
const BOB_GH: &str = "bob-github-9876543210";

fn config(issuer: &Issuer, server: &Server) -> String {
    let origin = server.origin();
    format!(
        r#"
[auth]
issuer = "{issuer}"
audience = "{AUDIENCE}"

[auth.token-exchange]
url = "{token_url}"
client-id = "{client}"
client-secret-env = "TH_EXCHANGE_SECRET"

[[callers]]
name = "alice"
match = {{ sub = "alice" }}
secrets.github = {{ from-env = "ALICE_GH" }}

[[callers]]
name = "bob"
match = {{ sub = "bob" }}
secrets.github = {{ from-env = "BOB_GH" }}

[[callers]]
name = "carol"
match = {{ sub = "carol" }}

[permissions]
mode = "bypass"

[plugins.fetch.network]
allow = ["{origin}"]
allow-private = true

[plugins.fetch.secrets.api]
exchange = {{ audience = "https://api.example.test" }}
header = "Authorization"
format = "Bearer {{secret}}"
destinations = ["{origin}"]

[plugins.fetch.secrets.gh]
from-caller = "github"
header = "X-GitHub-Token"
destinations = ["{origin}"]
"#,
        issuer = issuer.url(),
        token_url = issuer.token_url(),
        client = INTROSPECTION_CLIENT.0,
    )
}

fn token(issuer: &Issuer, sub: &str) -> String {
    let claims = json!({
        "iss": issuer.url(), "aud": AUDIENCE, "sub": sub,
        "iat": now(), "exp": now() + 300,
    });
    issuer.sign("rsa-1", Alg::Rs256, &claims)
}

fn vars() -> [(&'static str, &'static str); 3] {
    [
        ("TH_EXCHANGE_SECRET", INTROSPECTION_CLIENT.1),
        ("ALICE_GH", ALICE_GH),
        ("BOB_GH", BOB_GH),
    ]
}

fn start(env: &Env) -> (Daemon, SocketAddr) {
    let d = Daemon::start_env(env, &["--no-watch", "--http", "127.0.0.1:0"], &vars());
    let addr = d.http.unwrap();
    (d, addr)
}

/// `fetch` of the server's `/headers` (which echoes the request's headers) as `bearer`, tagged.
fn fetch(addr: SocketAddr, server: &Server, bearer: &str, tag: &str) -> Value {
    let url = server.url(&format!("/headers?tag={tag}"));
    modern_request(
        addr,
        "tools/call",
        json!({"name": "fetch", "arguments": {"url": url}}),
        json!({}),
        Some(bearer),
    )
}

/// The headers the server saw on the request tagged `tag`.
fn seen(server: &Server, tag: &str) -> Vec<(String, String)> {
    let wanted = format!("/headers?tag={tag}");
    let found: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == wanted)
        .collect();
    assert_eq!(found.len(), 1, "one request tagged {tag}: {found:?}");
    found[0].headers.clone()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// Alice's request carries alice's exchanged token and GitHub secret; bob's bob's.
fn assert_carries(server: &Server, tag: &str, who: &str) {
    let h = seen(server, tag);
    let auth = header(&h, "authorization");
    assert!(
        auth.starts_with(&format!("Bearer exchanged-{who}-")),
        "{tag}: {auth}"
    );
    let gh = header(&h, "x-github-token");
    assert_eq!(gh, if who == "alice" { ALICE_GH } else { BOB_GH }, "{tag}");
}

fn assert_ok_and_redacted(answer: &Value) {
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("[redacted]"), "{text}");
    for value in [ALICE_GH, BOB_GH, "exchanged-"] {
        assert!(!text.contains(value), "{text}");
    }
}

#[test]
fn each_caller_brings_its_own_credentials_never_anothers() {
    let issuer = Issuer::start();
    let server = Server::start();
    let env = Env::new(&["fetch"], &config(&issuer, &server));
    let (one, a) = start(&env);
    let (alice, bob, carol) = (
        token(&issuer, "alice"),
        token(&issuer, "bob"),
        token(&issuer, "carol"),
    );

    // One call each: each exchange happens once, then is reused.
    assert_ok_and_redacted(&fetch(a, &server, &alice, "alice-0"));
    assert_ok_and_redacted(&fetch(a, &server, &bob, "bob-0"));
    assert_carries(&server, "alice-0", "alice");
    assert_carries(&server, "bob-0", "bob");
    assert_eq!(issuer.exchanges(), 2);

    // Twenty calls at once, alice's and bob's interleaved.
    let threads: Vec<_> = (0..20)
        .map(|i| {
            let who = if i % 2 == 0 { "alice" } else { "bob" };
            let bearer = if i % 2 == 0 {
                alice.clone()
            } else {
                bob.clone()
            };
            let url = server.url(&format!("/headers?tag={who}-{}", i + 1));
            std::thread::spawn(move || {
                modern_request(
                    a,
                    "tools/call",
                    json!({"name": "fetch", "arguments": {"url": url}}),
                    json!({}),
                    Some(&bearer),
                )
            })
        })
        .collect();
    for t in threads {
        assert_ok_and_redacted(&t.join().unwrap());
    }
    for i in 0..20 {
        let who = if i % 2 == 0 { "alice" } else { "bob" };
        assert_carries(&server, &format!("{who}-{}", i + 1), who);
    }
    assert_eq!(issuer.exchanges(), 2, "kept per caller until it expires");

    // Carol's profile has no GitHub credential: told so, and nothing is sent for her.
    let before = server.requests().len();
    let refused = fetch(a, &server, &carol, "carol");
    let result = &refused["result"];
    assert_eq!(result["isError"], true, "{refused}");
    assert_eq!(result["_meta"]["toolhost/errorKind"], "denied", "{refused}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("has no credential 'github'") && text.contains("secrets.github"),
        "{text}"
    );
    assert_eq!(server.requests().len(), before);
    // The local operator (stdio, the CLI) is no caller: it has no profile and no token.
    let input = json!({"url": server.url("/headers?tag=local")}).to_string();
    let local = env
        .command(&["call", "fetch", "--input", &input, "--json"])
        .envs(vars())
        .output()
        .unwrap();
    let local: Value = serde_json::from_slice(&local.stdout).unwrap();
    assert_eq!(local["error_kind"], "denied", "{local}");
    assert!(
        local["content"]
            .as_str()
            .unwrap()
            .contains("this call has no caller (stdio or the CLI)"),
        "{local}"
    );
    assert_eq!(server.requests().len(), before);

    // A second daemon, and the first restarted: each exchanges afresh, still per caller.
    let (_two, b) = start(&env);
    assert_ok_and_redacted(&fetch(b, &server, &bob, "bob-two"));
    assert_ok_and_redacted(&fetch(b, &server, &alice, "alice-two"));
    drop(one);
    let (_again, c) = start(&env);
    assert_ok_and_redacted(&fetch(c, &server, &alice, "alice-again"));
    assert_ok_and_redacted(&fetch(c, &server, &bob, "bob-again"));
    for (tag, who) in [
        ("bob-two", "bob"),
        ("alice-two", "alice"),
        ("alice-again", "alice"),
        ("bob-again", "bob"),
    ] {
        assert_carries(&server, tag, who);
    }
    assert_eq!(issuer.exchanges(), 6);

    // The audit log names the credentials used, never a value.
    let text = serde_json::to_string(&env.audit_lines()).unwrap();
    for value in [ALICE_GH, BOB_GH, "exchanged-", &alice, &bob] {
        assert!(!text.contains(value), "a credential in the audit log");
    }
    let records = env.audit();
    let alices = records
        .iter()
        .find(|r| r["caller"]["subject"] == "alice" && r["outcome"] == "ok")
        .unwrap();
    assert_eq!(
        alices["credentials"],
        json!([
            "api: exchanged for https://api.example.test",
            "gh: profile alice's secret 'github'"
        ]),
        "{alices}"
    );
}
