//! The `requestState` round trip: answers approve once, are bound to their tool and arguments, and
//! retries and mismatched answers ask again.

use serde_json::json;

use super::*;

fn ask() -> ApprovalRequest {
    ApprovalRequest {
        tool: "write_file".into(),
        plugin: "fs".into(),
        input: json!({"path": "a.txt", "content": "x"}),
        subject: Some(("/path".into(), json!("a.txt"))),
        reason: "mode default asks for tools that are not read-only".into(),
    }
}

fn responses(answer: Value) -> InputResponses {
    [(APPROVAL_KEY.to_string(), answer)].into()
}

fn round_one(states: &RequestStates, args: &Value) -> String {
    let r = states.input_required("write_file", args, &ask()).unwrap();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["resultType"], "input_required");
    assert_eq!(
        v["inputRequests"][APPROVAL_KEY]["method"],
        "elicitation/create"
    );
    assert!(
        v["inputRequests"][APPROVAL_KEY]["params"]["message"]
            .as_str()
            .unwrap()
            .contains("write_file")
    );
    r.request_state.unwrap()
}

async fn decide(a: &Answered) -> Answer {
    a.approve(&ask()).await
}

#[tokio::test]
async fn accepted_answer_approves_once() {
    let states = RequestStates::new(None);
    let args = json!({"path": "a.txt", "content": "x"});
    let sealed = round_one(&states, &args);
    let accept = responses(json!({"action": "accept", "content": {"approve": true}}));
    let a = states
        .answered("write_file", &args, &sealed, Some(&accept))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(decide(&a).await, Answer::Approved);
    let replay = states
        .answered("write_file", &args, &sealed, Some(&accept))
        .await
        .err()
        .unwrap();
    assert!(
        replay.message.contains("already used"),
        "{}",
        replay.message
    );
}

#[tokio::test]
async fn declined_or_unchecked_answer_denies() {
    let states = RequestStates::new(None);
    let args = json!({"path": "a.txt", "content": "x"});
    for answer in [
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
        json!({"action": "accept", "content": {"approve": false}}),
    ] {
        let sealed = round_one(&states, &args);
        let a = states
            .answered("write_file", &args, &sealed, Some(&responses(answer)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(decide(&a).await, Answer::Declined);
    }
}

#[tokio::test]
async fn state_is_bound_to_tool_and_arguments() {
    let states = RequestStates::new(None);
    let args = json!({"path": "a.txt", "content": "x"});
    let sealed = round_one(&states, &args);
    let accept = responses(json!({"action": "accept"}));
    let other_args = json!({"path": "/etc/passwd", "content": "x"});
    assert!(
        states
            .answered("write_file", &other_args, &sealed, Some(&accept))
            .await
            .is_err()
    );
    assert!(
        states
            .answered("rm", &args, &sealed, Some(&accept))
            .await
            .is_err()
    );
    let forged = format!("{sealed}x");
    assert!(
        states
            .answered("write_file", &args, &forged, Some(&accept))
            .await
            .is_err()
    );
    let other_daemon = RequestStates::new(None);
    assert!(
        other_daemon
            .answered("write_file", &args, &sealed, Some(&accept))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn retry_without_an_answer_asks_again_and_keeps_the_state_usable() {
    let states = RequestStates::new(None);
    let args = json!({"path": "a.txt", "content": "x"});
    let sealed = round_one(&states, &args);
    let other = responses(json!({"action": "accept"}));
    let other: InputResponses =
        [("something_else".to_string(), other[APPROVAL_KEY].clone())].into();
    assert!(
        states
            .answered("write_file", &args, &sealed, Some(&other))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        states
            .answered("write_file", &args, &sealed, None)
            .await
            .unwrap()
            .is_none()
    );
    let accept = responses(json!({"action": "accept"}));
    assert!(
        states
            .answered("write_file", &args, &sealed, Some(&accept))
            .await
            .unwrap()
            .is_some()
    );
    let garbage = responses(json!({"action": 42}));
    let sealed = round_one(&states, &args);
    assert!(
        states
            .answered("write_file", &args, &sealed, Some(&garbage))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn answer_for_another_input_is_mismatched() {
    let a = Answered {
        approve: true,
        input_digest: digest(&json!({"path": "other"})),
    };
    assert_eq!(decide(&a).await, Answer::Mismatched);
}

#[test]
fn long_input_is_shortened_in_the_question() {
    let mut r = ask();
    r.input = json!({"content": "é".repeat(5000)});
    let q = question(&r);
    assert!(
        q.len() < 2000 + 400 && q.ends_with("[... input shortened]"),
        "{}",
        q.len()
    );
}

#[test]
fn question_shows_the_subject_first_and_whole() {
    let mut r = ask();
    let path = format!("notes/{}/secrets/key", "a".repeat(3000));
    r.input = json!({"content": "x".repeat(5000), "path": path});
    r.subject = Some(("/path".into(), json!(path)));
    let q = question(&r);
    let at = q.find(&path).expect("the whole path is shown");
    assert!(at < q.find("Other input").unwrap(), "{q}");
    assert!(q.ends_with("[... input shortened]"));
    r.input = json!({"path": "a\u{1b}]0;owned\u{7}\u{202e}b"});
    r.subject = Some(("/path".into(), r.input["path"].clone()));
    let q = question(&r);
    assert!(!q.contains('\u{1b}') && !q.contains('\u{202e}'), "{q:?}");
}
