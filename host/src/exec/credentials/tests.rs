//! Callers' own credentials: a profile's secret rendered into its header; the exchange, at a real
//! (tiny) token endpoint on 127.0.0.1, is in [`exchange`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use toolhost_gate::caller::{Access, Profiles, RawProfile};

use super::*;

mod exchange;

/// A request to the token endpoint: its form and its `Authorization` header.
type Request = (HashMap<String, String>, Option<String>);

/// The identity provider's token endpoint: it records each request and answers with a token
/// named after the caller's token and the request's number, unless told to answer otherwise.
#[derive(Default)]
struct Idp {
    /// Each request's form and `Authorization` header.
    seen: Mutex<Vec<Request>>,
    /// A status and body to answer with instead of a token.
    answer: Mutex<Option<(StatusCode, String)>>,
    /// The `expires_in` of the tokens it issues.
    expires_in: Mutex<u64>,
    /// How long it takes to answer.
    slow: Mutex<Duration>,
}

impl Idp {
    fn requests(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn answer(&self, status: StatusCode, body: &str) {
        *self.answer.lock().unwrap() = Some((status, body.to_owned()));
    }
}

async fn token(
    State(idp): State<Arc<Idp>>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, String) {
    let form: HashMap<String, String> = serde_urlencoded::from_str(&body).unwrap();
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let subject = form.get("subject_token").cloned().unwrap_or_default();
    let n = {
        let mut seen = idp.seen.lock().unwrap();
        seen.push((form, auth));
        seen.len()
    };
    let slow = *idp.slow.lock().unwrap();
    tokio::time::sleep(slow).await;
    if let Some(answer) = idp.answer.lock().unwrap().clone() {
        return answer;
    }
    let expires_in = *idp.expires_in.lock().unwrap();
    let issued = serde_json::json!({
        "access_token": format!("for-{subject}-{n}"),
        "issued_token_type": ACCESS_TOKEN,
        "token_type": "Bearer",
        "expires_in": expires_in,
    });
    (StatusCode::OK, issued.to_string())
}

/// An identity provider on 127.0.0.1, and credentials that exchange there.
async fn idp() -> (Arc<Idp>, Credentials) {
    let idp = Arc::new(Idp {
        expires_in: Mutex::new(3600),
        ..Idp::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .route("/token", axum::routing::post(token))
        .with_state(idp.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (idp, exchanging_at(addr))
}

fn exchanging_at(addr: SocketAddr) -> Credentials {
    Credentials::new(Some(&Introspection {
        url: format!("http://{addr}/token"),
        client_id: "toolhost".into(),
        client_secret: "s3cret".into(),
    }))
}

fn caller(subject: &str) -> Caller {
    Caller {
        issuer: "https://id.example".into(),
        subject: subject.into(),
        token: Some(Secret::new(format!("{subject}-token"))),
        ..Caller::default()
    }
}

fn exchanged_for(audience: &str) -> CallerSecret {
    CallerSecret {
        name: "api".into(),
        source: CallerSource::Exchange(Exchange {
            audience: Some(audience.into()),
            resource: None,
            scope: Some("read write".into()),
        }),
        header: "authorization".into(),
        format: "Bearer {secret}".into(),
        destinations: Vec::new(),
    }
}

fn from_profile(name: &str) -> CallerSecret {
    CallerSecret {
        name: "token".into(),
        source: CallerSource::Profile(name.into()),
        header: "x-api-key".into(),
        format: "key={secret}".into(),
        destinations: Vec::new(),
    }
}

/// The profile "team", with these secrets.
fn profile(secrets: &[(&str, &str)]) -> Profile {
    let mut profiles = Profiles::new(&[RawProfile {
        name: Some("team".into()),
        ..RawProfile::default()
    }])
    .unwrap();
    let secrets = secrets
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Secret::new(*v)))
        .collect();
    profiles.set_secrets(0, secrets);
    match profiles.access(&caller("alice")) {
        Access::Profile(p) => p.clone(),
        _ => panic!("the profile matches everyone"),
    }
}

/// The header value the call brings for its one secret.
async fn header(credentials: &Credentials, secret: &CallerSecret, caller: &Caller) -> String {
    let brought = credentials
        .bring("api", std::slice::from_ref(secret), Some(caller), None)
        .await
        .unwrap_or_else(|(kind, why)| panic!("{kind:?}: {why}"));
    let header = brought.grants[0].header.as_ref().unwrap();
    header.value.expose().to_owned()
}

/// Why the call cannot run, when the credentials cannot be brought.
async fn refusal(
    credentials: &Credentials,
    wanted: &[CallerSecret],
    caller: Option<&Caller>,
    profile: Option<&Profile>,
) -> (ErrorKind, String) {
    match credentials.bring("api", wanted, caller, profile).await {
        Ok(_) => panic!("brought, expected a refusal"),
        Err(refusal) => refusal,
    }
}

#[tokio::test]
async fn a_profiles_secret_goes_in_its_header_and_the_audit_names_it_without_its_value() {
    let credentials = Credentials::new(None);
    let team = profile(&[("github", "ghp_123")]);
    let brought = credentials
        .bring(
            "api",
            &[from_profile("github")],
            Some(&caller("alice")),
            Some(&team),
        )
        .await
        .unwrap();
    let grant = &brought.grants[0];
    assert_eq!(grant.name, "token");
    assert_eq!(grant.value.expose(), "ghp_123");
    assert!(grant.env.is_none(), "never in the guest's environment");
    let header = grant.header.as_ref().unwrap();
    assert_eq!(header.name, "x-api-key");
    assert_eq!(header.value.expose(), "key=ghp_123");
    assert_eq!(brought.used, ["token: profile team's secret 'github'"]);
}

#[tokio::test]
async fn a_profiles_secret_needs_a_caller() {
    let credentials = Credentials::new(None);
    let team = profile(&[("github", "ghp_123")]);
    let (kind, why) = refusal(&credentials, &[from_profile("github")], None, Some(&team)).await;
    assert_eq!(kind, ErrorKind::Denied);
    assert!(why.contains("this call has no caller"), "{why}");
}

#[tokio::test]
async fn a_caller_lacking_the_credential_is_told_to_ask_the_operator() {
    let credentials = Credentials::new(None);
    let team = profile(&[("gitlab", "x")]);
    let alice = caller("alice");
    let (kind, why) = refusal(
        &credentials,
        &[from_profile("github")],
        Some(&alice),
        Some(&team),
    )
    .await;
    assert_eq!(kind, ErrorKind::Denied);
    for needle in [
        "has no credential 'github' (profile team)",
        "secrets.github",
    ] {
        assert!(why.contains(needle), "{needle}: {why}");
    }
    let (_, why) = refusal(&credentials, &[from_profile("github")], Some(&alice), None).await;
    assert!(
        why.contains("has no credential 'github';"),
        "no profile at all: {why}"
    );
}

#[tokio::test]
async fn a_credential_that_cannot_be_a_header_value_is_refused() {
    let credentials = Credentials::new(None);
    let team = profile(&[("github", "line\nbreak")]);
    let (kind, why) = refusal(
        &credentials,
        &[from_profile("github")],
        Some(&caller("alice")),
        Some(&team),
    )
    .await;
    assert_eq!(kind, ErrorKind::Denied);
    assert!(why.contains("cannot be carried in a header"), "{why}");
    assert!(!why.contains("break"), "the value is never told: {why}");
}

#[tokio::test]
async fn a_missing_profile_secret_refuses_the_call_before_any_exchange() {
    let (idp, credentials) = idp().await;
    let team = profile(&[]);
    let wanted = [exchanged_for("https://api.example"), from_profile("github")];
    let (_, why) = refusal(&credentials, &wanted, Some(&caller("alice")), Some(&team)).await;
    assert!(why.contains("has no credential 'github'"), "{why}");
    assert_eq!(idp.requests(), 0, "the identity provider was not asked");
}

#[tokio::test]
async fn what_a_call_used_is_listed_in_order_of_secret_name() {
    let (_idp, credentials) = idp().await;
    let team = profile(&[("github", "ghp_123")]);
    let wanted = [from_profile("github"), exchanged_for("https://api.example")];
    let brought = credentials
        .bring("api", &wanted, Some(&caller("alice")), Some(&team))
        .await
        .unwrap();
    assert_eq!(
        brought.used,
        [
            "api: exchanged for https://api.example",
            "token: profile team's secret 'github'"
        ]
    );
    assert_eq!(brought.grants.len(), 2);
}
