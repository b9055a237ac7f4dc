//! Tokens exchanged at the identity provider: the request, the answers it may give, and the
//! cache that keeps each caller's token per destination for its life.

use super::*;

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
async fn calls_needing_the_same_exchange_at_once_share_one_request() {
    let (idp, credentials) = idp().await;
    *idp.slow.lock().unwrap() = Duration::from_millis(200);
    let credentials = Arc::new(credentials);
    let secret = exchanged_for("https://api.example");
    // 24 calls at once from three callers' tokens: one exchange each.
    let calls = (0..24).map(|i| {
        let (credentials, secret) = (credentials.clone(), secret.clone());
        let who = caller(["alice", "bob", "carol"][i % 3]);
        tokio::spawn(async move {
            (
                who.subject.clone(),
                header(&credentials, &secret, &who).await,
            )
        })
    });
    let mut got: HashMap<String, Vec<String>> = HashMap::new();
    for call in calls.collect::<Vec<_>>() {
        let (who, header) = call.await.unwrap();
        got.entry(who).or_default().push(header);
    }
    assert_eq!(idp.requests(), 3);
    for (who, headers) in &got {
        assert_eq!(headers.len(), 8);
        assert!(
            headers.iter().all(|h| h == &headers[0]),
            "{who}: {headers:?}"
        );
        assert!(
            headers[0].starts_with(&format!("Bearer for-{who}-token-")),
            "{headers:?}"
        );
    }
}

#[tokio::test]
async fn a_refusal_is_shared_by_the_calls_waiting_for_it_and_the_next_call_asks_again() {
    let (idp, credentials) = idp().await;
    *idp.slow.lock().unwrap() = Duration::from_millis(200);
    idp.answer(StatusCode::BAD_REQUEST, r#"{"error":"invalid_target"}"#);
    let credentials = Arc::new(credentials);
    let secret = exchanged_for("https://api.example");
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let (credentials, secret) = (credentials.clone(), secret.clone());
            tokio::spawn(async move {
                let alice = caller("alice");
                let wanted = [secret];
                credentials
                    .bring("api", &wanted, Some(&alice), None)
                    .await
                    .err()
            })
        })
        .collect();
    for call in calls {
        let (kind, message) = call.await.unwrap().expect("refused");
        assert_eq!(kind, ErrorKind::Denied);
        assert!(message.contains("invalid_target"), "{message}");
    }
    assert_eq!(idp.requests(), 1);
    // Not kept: a later call tries again.
    *idp.answer.lock().unwrap() = None;
    *idp.slow.lock().unwrap() = Duration::ZERO;
    header(&credentials, &secret, &caller("alice")).await;
    assert_eq!(idp.requests(), 2);
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
