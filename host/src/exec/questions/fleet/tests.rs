//! Two daemons' queues over one board (in memory, with the store's semantics: the first answer
//! for the input's digest wins, every change is announced): a question asked on one is listed and
//! answered on the other and wakes the call where it waits; a second answer anywhere is too late;
//! notices missed are made up for; a board that does not answer leaves a daemon its own queue.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;
use toolhost_call::call::{Answer, ApprovalRequest};

use super::super::super::board::fake::{Fake, Store};
use super::super::{AnswerError, digest};
use super::*;

/// A daemon: its queue, its live events, and the notices it hears (fed to its queue by `hear`).
struct Daemon {
    questions: Arc<Questions>,
    live: Arc<Live>,
}

fn daemon(store: &Arc<Store>, name: &str) -> Daemon {
    let (tx, mut rx) = mpsc::unbounded_channel();
    store.listeners.lock().unwrap().push(tx);
    let questions = Arc::new(Questions::default());
    questions.open();
    questions.share(Arc::new(Fake {
        store: store.clone(),
        daemon: name.to_owned(),
    }));
    let live = Arc::new(Live::default());
    let (q, l) = (questions.clone(), live.clone());
    tokio::spawn(async move {
        while let Some(notice) = rx.recv().await {
            q.heard(notice, &l).await;
        }
    });
    Daemon { questions, live }
}

fn request(text: &str) -> ApprovalRequest {
    ApprovalRequest {
        tool: "echo".into(),
        plugin: "echo".into(),
        input: json!({ "text": text }),
        subject: None,
        reason: "rule ask(echo)".into(),
    }
}

fn by(operator: &str, approve: bool) -> Verdict {
    Verdict {
        approve,
        operator: operator.into(),
    }
}

/// The first question `d` lists that another daemon asked.
async fn listed_elsewhere(d: &Daemon) -> Value {
    for _ in 0..100 {
        if let Some(q) = d
            .questions
            .listed()
            .await
            .into_iter()
            .find(|q| q.get("daemon").is_some())
        {
            return q;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no question from another daemon was listed");
}

const CALL: (&str, &str, &str) = ("call-1", "alice", "mcp");

#[tokio::test]
async fn a_question_asked_on_one_daemon_is_answered_once_on_another() {
    let store = Arc::new(Store::default());
    let (one, two) = (daemon(&store, "one"), daemon(&store, "two"));
    let mut two_hears = two.live.subscribe();
    let request = request("hi");
    let ask = one
        .questions
        .ask(&one.live, CALL, &request, Duration::from_secs(60));
    let answer = async {
        let shown = listed_elsewhere(&two).await;
        assert_eq!(shown["daemon"], "one");
        // Let two's console hear of it while it waits (a question already ended is not shown).
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(shown["input"]["text"], "hi");
        let id = shown["id"].as_str().unwrap().to_owned();
        let sha = shown["input_sha256"].as_str().unwrap().to_owned();
        assert_eq!(
            two.questions
                .answer(&id, &digest(&json!({})), by("bob", true))
                .await,
            Err(AnswerError::Mismatched)
        );
        two.questions
            .answer(&id, &sha, by("bob", true))
            .await
            .unwrap();
        (id, sha)
    };
    let ((answer, operator), (id, sha)) = tokio::join!(ask, answer);
    assert_eq!(answer, Answer::Approved);
    assert_eq!(operator.as_deref(), Some("bob"));
    assert_eq!(
        one.questions.answer(&id, &sha, by("carol", false)).await,
        Err(AnswerError::Ended(id.clone())),
        "one answer wins, wherever the next comes from"
    );
    // Two's console heard of the question and of its end.
    let mut seen = Vec::new();
    while let Ok(event) = two_hears.try_recv() {
        seen.push(match event {
            LiveEvent::Posted(q) => format!("posted {}", q["id"].as_str().unwrap()),
            LiveEvent::Answered { id, answer, .. } => format!("{answer} {id}"),
            _ => continue,
        });
    }
    assert_eq!(seen, [format!("posted {id}"), format!("approved {id}")]);
    assert!(two.questions.listed().await.is_empty());
}

#[tokio::test]
async fn an_answer_whose_notice_was_missed_is_read_when_notices_resume() {
    let store = Arc::new(Store::default());
    let (one, two) = (daemon(&store, "one"), daemon(&store, "two"));
    // One stops hearing anything (its listening connection is lost).
    store.listeners.lock().unwrap().remove(0);
    let request = request("hi");
    let ask = one
        .questions
        .ask(&one.live, CALL, &request, Duration::from_secs(60));
    let answer = async {
        let shown = listed_elsewhere(&two).await;
        let (id, sha) = (
            shown["id"].as_str().unwrap(),
            shown["input_sha256"].as_str().unwrap(),
        );
        two.questions
            .answer(id, sha, by("bob", false))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(one.questions.waiting().len(), 1, "not heard yet");
        one.questions.heard(Notice::Missed, &one.live).await;
    };
    let ((answer, operator), ()) = tokio::join!(ask, answer);
    assert_eq!(answer, Answer::Declined);
    assert_eq!(operator.as_deref(), Some("bob"));
}

#[tokio::test]
async fn with_the_board_down_a_daemon_answers_its_own_questions() {
    let store = Arc::new(Store::default());
    let one = daemon(&store, "one");
    store.down.store(true, Ordering::Release);
    let mut events = one.live.subscribe();
    let request = request("hi");
    let ask = one
        .questions
        .ask(&one.live, CALL, &request, Duration::from_secs(60));
    let answer = async {
        let question = loop {
            if let Ok(LiveEvent::Question(q)) = events.recv().await {
                break q;
            }
        };
        assert_eq!(
            one.questions.listed().await.len(),
            1,
            "its own, still listed"
        );
        one.questions
            .answer(&question.id, &question.input_sha256, by("bob", true))
            .await
    };
    let ((answer, _), result) = tokio::join!(ask, answer);
    result.unwrap();
    assert_eq!(answer, Answer::Approved);
}

#[tokio::test]
async fn someone_at_another_daemons_console_is_someone_there() {
    let store = Arc::new(Store::default());
    let (one, two) = (daemon(&store, "one"), daemon(&store, "two"));
    one.questions.attend_fleet(&json!({})).await;
    assert!(!one.questions.attended(), "nobody anywhere");
    // An operator's event stream open on two: one hears of it on its next round.
    let stream = two.questions.attend();
    two.questions.attend_fleet(&json!({})).await;
    one.questions.attend_fleet(&json!({})).await;
    assert!(one.questions.attended(), "someone at two's console");
    // The stream closes and the operator signs out: the next rounds say so.
    drop(stream);
    two.questions.left();
    two.questions.attend_fleet(&json!({})).await;
    one.questions.attend_fleet(&json!({})).await;
    assert!(!one.questions.attended(), "nobody any more");
    // A request to two's API counts too; a store that does not answer changes nothing here.
    two.questions.seen();
    two.questions.attend_fleet(&json!({})).await;
    store.down.store(true, Ordering::Release);
    one.questions.attend_fleet(&json!({})).await;
    assert!(!one.questions.attended());
    store.down.store(false, Ordering::Release);
    one.questions.attend_fleet(&json!({})).await;
    assert!(one.questions.attended());
}
