//! Callers' own credentials: a profile's secret rendered into its header, and tokens exchanged at
//! a real (tiny) token endpoint on 127.0.0.1, kept per caller and destination for their life.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use toolhost_policy::caller::{Access, Profiles, RawProfile};

use super::*;

/// The identity provider's token endpoint: it records each request and answers with a token
/// named after the caller's token and the request's number, unless told to answer otherwise.
#[derive(Default)]
struct Idp {
    /// Each request's form and `Authorization` header.
    seen: Mutex<Vec<(HashMap<String, String>, Option<String>)>>,
    /// A status and body to answer with instead of a token.
    answer: Mutex<Option<(StatusCode, String)>>,
    /// The `expires_in` of the tokens it issues.
    expires_in: Mutex<u64>,
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
async fn the_exchange_posts_an_rfc_8693_form_as_toolhosts_own_client() {
    let (idp, credentials) = idp().await;
    let alice = caller("alice");
    let brought = credentials
        .bring(
            "api",
            &[exchanged_for("https://api.example")],
            Some(&alice),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        brought.grants[0].header.as_ref().unwrap().value.expose(),
        "Bearer for-alice-token-1"
    );
    assert_eq!(brought.used, ["api: exchanged for https://api.example"]);

    let seen = idp.seen.lock().unwrap();
    let (form, auth) = &seen[0];
    assert_eq!(
        auth.as_deref(),
        Some("Basic dG9vbGhvc3Q6czNjcmV0"),
        "toolhost:s3cret"
    );
    for (k, v) in [
        ("grant_type", GRANT),
        ("subject_token", "alice-token"),
        ("subject_token_type", ACCESS_TOKEN),
        ("requested_token_type", ACCESS_TOKEN),
        ("audience", "https://api.example"),
        ("scope", "read write"),
    ] {
        assert_eq!(form.get(k).map(String::as_str), Some(v), "{k}");
    }
    assert!(
        !form.contains_key("resource"),
        "only what the secret asks for"
    );
}

#[tokio::test]
async fn an_exchanged_token_is_kept_until_its_life_ends_and_each_caller_gets_its_own() {
    let (idp, credentials) = idp().await;
    let secret = exchanged_for("https://api.example");
    let (alice, bob) = (caller("alice"), caller("bob"));
    assert_eq!(
        header(&credentials, &secret, &alice).await,
        "Bearer for-alice-token-1"
    );
    assert_eq!(
        header(&credentials, &secret, &alice).await,
        "Bearer for-alice-token-1"
    );
    assert_eq!(idp.requests(), 1, "the second call used the kept token");

    assert_eq!(
        header(&credentials, &secret, &bob).await,
        "Bearer for-bob-token-2"
    );
    assert_eq!(
        header(&credentials, &secret, &alice).await,
        "Bearer for-alice-token-1"
    );

    // Alice's token reaches the end of its kept life: the next call exchanges again.
    let CallerSource::Exchange(x) = &secret.source else {
        unreachable!()
    };
    let key = cache_key(alice.token.as_ref().unwrap(), x);
    let exchanger = credentials.exchange.as_ref().unwrap();
    exchanger.cache.lock().unwrap().get_mut(&key).unwrap().1 = Instant::now();
    assert_eq!(
        header(&credentials, &secret, &alice).await,
        "Bearer for-alice-token-3"
    );
    assert_eq!(
        header(&credentials, &secret, &bob).await,
        "Bearer for-bob-token-2"
    );
    assert_eq!(idp.requests(), 3);
}

#[tokio::test]
async fn each_destination_gets_its_own_exchanged_token() {
    let (idp, credentials) = idp().await;
    let alice = caller("alice");
    let one = header(&credentials, &exchanged_for("https://one.example"), &alice).await;
    let two = header(&credentials, &exchanged_for("https://two.example"), &alice).await;
    assert_ne!(one, two);
    assert_eq!(idp.requests(), 2);
}

#[tokio::test]
async fn a_token_issued_with_no_life_is_never_reused() {
    let (idp, credentials) = idp().await;
    *idp.expires_in.lock().unwrap() = 0;
    let secret = exchanged_for("https://api.example");
    let alice = caller("alice");
    header(&credentials, &secret, &alice).await;
    header(&credentials, &secret, &alice).await;
    assert_eq!(idp.requests(), 2);
}

#[test]
fn a_token_is_kept_until_shortly_before_it_expires() {
    let credentials = exchanging_at(SocketAddr::from(([127, 0, 0, 1], 9)));
    let exchanger = credentials.exchange.as_ref().unwrap();
    let kept_for = |key: [u8; 32], life_s: u64| {
        let before = Instant::now();
        exchanger.keep(key, &(Secret::new("t"), Duration::from_secs(life_s)));
        let until = exchanger.cache.lock().unwrap()[&key].1;
        until.duration_since(before)
    };
    let long = kept_for([1; 32], 3600);
    assert!(
        long >= Duration::from_secs(3570) && long < Duration::from_secs(3571),
        "30 s before it expires: {long:?}"
    );
    let short = kept_for([2; 32], 20);
    assert!(
        short >= Duration::from_secs(10) && short < Duration::from_secs(11),
        "half a short life: {short:?}"
    );
    assert_eq!(exchanger.kept(&[1; 32]).unwrap().expose(), "t");
    assert!(exchanger.kept(&[3; 32]).is_none());
}

#[tokio::test]
async fn a_refusal_by_the_identity_provider_reaches_the_model_in_its_words_on_one_line() {
    let (idp, credentials) = idp().await;
    idp.answer(
        StatusCode::BAD_REQUEST,
        r#"{"error":"invalid_target","error_description":"no such\naudience"}"#,
    );
    let secret = exchanged_for("https://api.example");
    let alice = caller("alice");
    let (kind, why) = refusal(
        &credentials,
        std::slice::from_ref(&secret),
        Some(&alice),
        None,
    )
    .await;
    assert_eq!(kind, ErrorKind::Denied);
    assert!(
        why.ends_with(
            r"for https://api.example (plugin api's secret 'api'): invalid_target: no such\naudience"
        ),
        "{why}"
    );
    assert!(!why.contains('\n'), "one line: {why}");
    assert!(
        !why.contains("127.0.0.1"),
        "the endpoint is not told: {why}"
    );

    idp.answer(StatusCode::INTERNAL_SERVER_ERROR, "oops");
    let (_, why) = refusal(
        &credentials,
        std::slice::from_ref(&secret),
        Some(&alice),
        None,
    )
    .await;
    assert!(why.ends_with("HTTP 500 Internal Server Error"), "{why}");

    // A refusal is not kept: once the provider issues tokens again, the call gets one.
    *idp.answer.lock().unwrap() = None;
    assert_eq!(
        header(&credentials, &secret, &alice).await,
        "Bearer for-alice-token-3"
    );
}

#[tokio::test]
async fn an_answer_that_is_not_a_token_is_refused() {
    let (idp, credentials) = idp().await;
    let secret = [exchanged_for("https://api.example")];
    let alice = caller("alice");
    idp.answer(StatusCode::OK, "<html>hello</html>");
    let (kind, why) = refusal(&credentials, &secret, Some(&alice), None).await;
    assert_eq!(kind, ErrorKind::Denied);
    assert!(why.ends_with("its answer is not a token response"), "{why}");
    idp.answer(StatusCode::OK, r#"{"access_token":""}"#);
    let (_, why) = refusal(&credentials, &secret, Some(&alice), None).await;
    assert!(why.ends_with("its answer holds no access_token"), "{why}");
}

#[tokio::test]
async fn an_identity_provider_that_cannot_be_reached_is_denied() {
    // A port that was free a moment ago: nothing listens there.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let credentials = exchanging_at(addr);
    let (kind, why) = refusal(
        &credentials,
        &[exchanged_for("https://api.example")],
        Some(&caller("alice")),
        None,
    )
    .await;
    assert_eq!(kind, ErrorKind::Denied);
    assert!(why.contains("cannot reach it"), "{why}");
}

#[tokio::test]
async fn a_caller_without_a_token_has_nothing_to_exchange() {
    let (idp, credentials) = idp().await;
    let anonymous = Caller {
        token: None,
        ..caller("alice")
    };
    let secret = [exchanged_for("https://api.example")];
    for who in [Some(&anonymous), None] {
        let (kind, why) = refusal(&credentials, &secret, who, None).await;
        assert_eq!(kind, ErrorKind::Denied);
        assert!(
            why.contains("presented no OAuth token to exchange"),
            "{why}"
        );
    }
    assert_eq!(idp.requests(), 0);
}

#[tokio::test]
async fn an_exchange_without_an_endpoint_configured_is_an_internal_error() {
    let credentials = Credentials::new(None);
    let (kind, why) = refusal(
        &credentials,
        &[exchanged_for("https://api.example")],
        Some(&caller("alice")),
        None,
    )
    .await;
    assert_eq!(kind, ErrorKind::Internal);
    assert!(why.contains("[auth.token-exchange]"), "{why}");
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
