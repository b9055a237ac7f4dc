//! `[auth]` and `[[callers]]`: what is accepted, what is refused and why.

use super::*;

fn auth(text: &str) -> Result<AuthConfig, ConfigError> {
    resolve_auth(&toml::from_str(text).unwrap())
}

#[test]
fn exchanging_a_callers_token_needs_somewhere_to_exchange_it() {
    let text = r#"
        [auth]
        issuer = "https://idp.example.com"
        audience = "https://tools.example.com/mcp"
        [plugins.api.network]
        allow = ["https://api.example.com"]
        [plugins.api.secrets.token]
        exchange = { audience = "https://api.example.com" }
        header = "Authorization"
        format = "Bearer {secret}"
        destinations = ["https://api.example.com"]
    "#;
    let raw = toml::from_str(text).unwrap();
    let e = crate::config::Config::from_raw(raw, Path::new("."), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("plugins.api.secrets.token.exchange") && e.contains("[auth.token-exchange]"),
        "{e}"
    );
    let e = auth(
        "issuer = \"https://idp.example.com\"\naudience = \"x\"\n\
         [token-exchange]\nurl = \"http://idp.example.com/token\"\nclient-id = \"t\"\n\
         client-secret-env = \"TOOLHOST_TEST_NEVER_SET_77\"",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("auth.token-exchange.url"), "{e}");
}

#[test]
fn checks_issuer_audience_and_algorithms() {
    let a = auth("issuer = \"https://idp.example.com/\"\naudience = \"https://t/mcp\"\n").unwrap();
    assert_eq!(a.issuer, "https://idp.example.com");
    assert_eq!(a.algorithms, ["RS256", "ES256"]);
    assert!(auth("issuer = \"http://127.0.0.1:9000\"\naudience = \"x\"\n").is_ok());
    for (text, needle) in [
        (
            "issuer = \"http://idp.example.com\"\naudience = \"x\"\n",
            "auth.issuer",
        ),
        (
            "issuer = \"https://i\"\naudience = \" \"\n",
            "auth.audience",
        ),
        (
            "issuer = \"https://i\"\naudience = \"x\"\nalgorithms = [\"HS256\"]\n",
            "HS256",
        ),
        (
            "issuer = \"https://i\"\naudience = \"x\"\nalgorithms = [\"none\"]\n",
            "none",
        ),
        (
            "issuer = \"https://i\"\naudience = \"x\"\nalgorithms = []\n",
            "at least one",
        ),
        (
            "issuer = \"https://i\"\naudience = \"x\"\nleeway-s = 3600\n",
            "at most 300",
        ),
        (
            "issuer = \"https://i\"\naudience = \"x\"\njwks-uri = \"ftp://k\"\n",
            "jwks-uri",
        ),
    ] {
        let e = auth(text).unwrap_err().to_string();
        assert!(e.contains(needle), "{text}: {e}");
    }
}
