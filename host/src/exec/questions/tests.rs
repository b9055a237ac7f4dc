//! The approval queue: a question waits until one answer for its input, a timeout or its call
//! going away; every other answer is told precisely why it was not taken.

use futures_util::FutureExt;
use serde_json::json;
use tokio::sync::broadcast;

use super::*;

fn request() -> ApprovalRequest {
    ApprovalRequest {
        tool: "fs_write".into(),
        plugin: "fs".into(),
        input: json!({ "path": "/tmp/x", "text": "hi" }),
        subject: Some(("/path".into(), json!("/tmp/x"))),
        reason: "rule ask(fs_write)".into(),
    }
}

fn verdict(approve: bool) -> Verdict {
    Verdict {
        approve,
        operator: "ops@example".into(),
    }
}

const CALL: (&str, &str, &str) = ("call-1", "alice", "mcp");

/// The question `events` announces next.
async fn next_question(events: &mut broadcast::Receiver<LiveEvent>) -> Arc<Question> {
    match events.recv().await.unwrap() {
        LiveEvent::Question(q) => q,
        other => panic!("expected a question, got {other:?}"),
    }
}

/// The next `Answered` event: how the question ended and who answered.
fn answered(events: &mut broadcast::Receiver<LiveEvent>) -> (String, &'static str, Option<String>) {
    match events.try_recv().unwrap() {
        LiveEvent::Answered {
            id,
            answer,
            operator,
        } => (id, answer, operator),
        other => panic!("expected an answer, got {other:?}"),
    }
}

#[tokio::test]
async fn an_approval_given_in_the_console_reaches_the_waiting_call() {
    let (q, live) = (Questions::default(), Live::default());
    let mut events = live.subscribe();
    let request = request();
    let ask = q.ask(&live, CALL, &request, Duration::from_secs(60));
    let answer = async {
        let question = next_question(&mut events).await;
        assert_eq!(q.waiting().len(), 1);
        let result = q
            .answer(&question.id, &question.input_sha256, verdict(true))
            .await;
        (question, result)
    };
    let ((answer, operator), (question, result)) = tokio::join!(ask, answer);
    result.unwrap();
    assert_eq!(answer, Answer::Approved);
    assert_eq!(operator.as_deref(), Some("ops@example"));

    assert_eq!(question.call_id, "call-1");
    assert_eq!(
        (question.tool.as_str(), question.plugin.as_str()),
        ("fs_write", "fs")
    );
    assert_eq!(
        (question.caller.as_str(), question.origin),
        ("alice", "mcp")
    );
    assert_eq!(question.input_sha256, digest(&request.input));
    let subject = question.subject.as_ref().unwrap();
    assert_eq!(
        (subject.pointer.as_str(), &subject.value),
        ("/path", &json!("/tmp/x"))
    );
    assert_eq!(
        question.expires_at - question.asked_at,
        chrono::Duration::seconds(60)
    );

    assert!(q.waiting().is_empty());
    let (id, how, by) = answered(&mut events);
    assert_eq!(
        (id.as_str(), how, by.as_deref()),
        (question.id.as_str(), "approved", Some("ops@example"))
    );
    assert!(events.try_recv().is_err(), "answered once, withdrawn never");
}

#[tokio::test]
async fn a_declined_question_declines_the_call() {
    let (q, live) = (Questions::default(), Live::default());
    let mut events = live.subscribe();
    let request = request();
    let ask = q.ask(&live, CALL, &request, Duration::from_secs(60));
    let answer = async {
        let question = next_question(&mut events).await;
        q.answer(&question.id, &question.input_sha256, verdict(false))
            .await
    };
    let ((answer, operator), result) = tokio::join!(ask, answer);
    result.unwrap();
    assert_eq!(answer, Answer::Declined);
    assert_eq!(operator.as_deref(), Some("ops@example"));
    assert_eq!(answered(&mut events).1, "declined");
}

#[tokio::test]
async fn a_second_answer_is_told_the_question_ended() {
    let (q, live) = (Questions::default(), Live::default());
    let mut events = live.subscribe();
    let request = request();
    let ask = q.ask(&live, CALL, &request, Duration::from_secs(60));
    let answer = async {
        let question = next_question(&mut events).await;
        q.answer(&question.id, &question.input_sha256, verdict(true))
            .await
            .unwrap();
        question
    };
    let (_, question) = tokio::join!(ask, answer);
    let late = q
        .answer(&question.id, &question.input_sha256, verdict(false))
        .await;
    assert_eq!(late, Err(AnswerError::Ended(question.id.clone())));
}

#[tokio::test]
async fn an_answer_to_an_id_never_asked_is_unknown() {
    let q = Questions::default();
    let e = q
        .answer("nope", &digest(&json!({})), verdict(true))
        .await
        .unwrap_err();
    assert_eq!(e, AnswerError::Unknown("nope".into()));
    assert_eq!(e.to_string(), "no question nope is waiting");
}

#[tokio::test]
async fn an_answer_for_another_input_is_refused_and_the_question_keeps_waiting() {
    let (q, live) = (Questions::default(), Live::default());
    let mut events = live.subscribe();
    let request = request();
    let ask = q.ask(&live, CALL, &request, Duration::from_secs(60));
    let answer = async {
        let question = next_question(&mut events).await;
        let other = digest(&json!({ "path": "/etc/passwd", "text": "hi" }));
        let mismatched = q.answer(&question.id, &other, verdict(true)).await;
        assert_eq!(q.waiting().len(), 1, "still waiting after a mismatch");
        let right = q
            .answer(&question.id, &question.input_sha256, verdict(false))
            .await;
        (mismatched, right)
    };
    let ((answer, _), (mismatched, right)) = tokio::join!(ask, answer);
    assert_eq!(mismatched, Err(AnswerError::Mismatched));
    right.unwrap();
    assert_eq!(
        answer,
        Answer::Declined,
        "the answer for the input shown decided"
    );
}

#[tokio::test]
async fn a_question_nobody_answers_ends_unanswered_and_is_remembered() {
    let (q, live) = (Questions::default(), Live::default());
    let mut events = live.subscribe();
    let (answer, operator) = q
        .ask(&live, CALL, &request(), Duration::from_millis(30))
        .await;
    assert!(
        matches!(&answer, Answer::Unanswered(why) if why.contains("no operator answered")),
        "{answer:?}"
    );
    assert_eq!(operator, None);
    assert!(q.waiting().is_empty());

    let question = next_question(&mut events).await;
    let (id, how, by) = answered(&mut events);
    assert_eq!(
        (id.as_str(), how, by),
        (question.id.as_str(), "unanswered", None)
    );
    assert_eq!(
        q.answer(&question.id, &question.input_sha256, verdict(true))
            .await,
        Err(AnswerError::Ended(question.id.clone())),
        "too late, not unknown"
    );
}

#[tokio::test]
async fn dropping_the_waiting_call_withdraws_its_question() {
    let (q, live) = (Questions::default(), Live::default());
    let mut events = live.subscribe();
    let request = request();
    let mut ask = Box::pin(q.ask(&live, CALL, &request, Duration::from_secs(60)));
    assert!(ask.as_mut().now_or_never().is_none(), "waits for an answer");
    let question = next_question(&mut events).await;
    assert_eq!(q.waiting()[0].id, question.id);

    drop(ask);
    assert!(q.waiting().is_empty());
    assert_eq!(answered(&mut events).1, "unanswered");
    assert_eq!(
        q.answer(&question.id, &question.input_sha256, verdict(true))
            .await,
        Err(AnswerError::Ended(question.id.clone()))
    );
}

#[tokio::test]
async fn an_answer_to_a_call_gone_that_instant_is_told_it_ended() {
    let q = Questions::default();
    let (reply, answered) = oneshot::channel();
    drop(answered);
    let question = Question {
        id: "q1".into(),
        call_id: "c1".into(),
        tool: "t".into(),
        plugin: "p".into(),
        subject: None,
        input: json!({}),
        input_sha256: digest(&json!({})),
        reason: String::new(),
        caller: "alice".into(),
        origin: "mcp",
        asked_at: Utc::now(),
        expires_at: Utc::now(),
    };
    q.waiting.lock().unwrap().insert(
        "q1".into(),
        Waiting {
            question: Arc::new(question),
            reply,
        },
    );
    assert_eq!(
        q.answer("q1", &digest(&json!({})), verdict(true)).await,
        Err(AnswerError::Ended("q1".into()))
    );
}

#[tokio::test]
async fn only_the_latest_answered_ids_are_remembered() {
    let q = Questions::default();
    for i in 0..=REMEMBERED {
        q.remember(&format!("q{i}"));
    }
    let any = digest(&json!({}));
    assert_eq!(
        q.answer("q0", &any, verdict(true)).await,
        Err(AnswerError::Unknown("q0".into())),
        "forgotten past the limit"
    );
    for id in ["q1", &format!("q{REMEMBERED}")] {
        assert_eq!(
            q.answer(id, &any, verdict(true)).await,
            Err(AnswerError::Ended(id.to_owned()))
        );
    }
}

#[test]
fn an_answer_names_the_sha256_of_the_input_as_compact_json() {
    // printf '{}' | sha256sum; printf '{"a":[1,"x"]}' | sha256sum
    assert_eq!(
        digest(&json!({})),
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
    assert_eq!(
        digest(&json!({ "a": [1, "x"] })),
        "5e49f471d8b615a8ae0ecf0a53dbe2f5f617abb2dfe6246974aa6e4bdeb89725"
    );
}

#[test]
fn question_ids_are_128_random_bits_in_hex() {
    let (a, b) = (new_id(), new_id());
    assert_eq!(a.len(), 32);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_ne!(a, b);
}

#[test]
fn only_an_open_stream_or_a_recent_operator_attends() {
    let q = Questions::default();
    let stream = q.attend();
    assert!(!q.attended(), "a console not served attends nothing");
    q.open();
    q.locate("http://127.0.0.1:1/console/".into());
    assert!(q.attended());
    drop(stream);
    assert!(!q.attended(), "the stream closed");
    q.seen();
    assert!(q.attended());
    *q.seen.lock().unwrap() = Some(Instant::now() - PRESENT_FOR);
    assert!(!q.attended(), "seen too long ago");
    q.seen();
    q.left();
    assert!(!q.attended(), "signed out");
    assert_eq!(q.address(), Some("http://127.0.0.1:1/console/"));
}
