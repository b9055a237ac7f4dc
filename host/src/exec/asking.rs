//! Who answers an `ask`, and putting the question to them: the client's approver (its
//! elicitation), the console's queue, both (the first answer wins), or nobody. The console is asked
//! only while someone can answer there ([`Questions::attended`]), unless the operator said to wait
//! for one anyway (`[console] approvals = "console"`). Knows no tool, no audit log and no front end:
//! the gate stage decides what each answer means.

use std::sync::Arc;
use std::time::Duration;

use super::live::Live;
use super::questions::Questions;
use toolhost_call::call::{Answer, ApprovalRequest, Approver, Progress, ProgressSink};
use toolhost_config::config::ApprovalRoute;

/// How often a call waiting for an approval tells its client it is still waiting.
const STILL_WAITING: Duration = Duration::from_secs(5);

/// The asking stage's view of the daemon: where questions may go and how long they wait.
pub(super) struct Asking<'a> {
    route: ApprovalRoute,
    questions: &'a Questions,
    live: &'a Live,
    timeout: Duration,
}

/// Who a question goes to.
pub(super) struct Askees<'a> {
    /// The client's approver, when the route asks it and the client has one.
    pub(super) client: Option<&'a Arc<dyn Approver>>,
    /// Whether the console's queue is asked.
    pub(super) console: bool,
}

impl Askees<'_> {
    /// Whether nobody can be asked: the call is answered at once.
    pub(super) fn nobody(&self) -> bool {
        self.client.is_none() && !self.console
    }
}

impl<'a> Asking<'a> {
    pub(super) fn new(
        route: ApprovalRoute,
        questions: &'a Questions,
        live: &'a Live,
        timeout: Duration,
    ) -> Self {
        Self {
            route,
            questions,
            live,
            timeout,
        }
    }

    /// Who is asked, for a call whose client's approver is `approver`.
    pub(super) fn askees<'b>(&self, approver: Option<&'b Arc<dyn Approver>>) -> Askees<'b> {
        let console = self.questions.is_open()
            && match self.route {
                ApprovalRoute::Console => true,
                ApprovalRoute::Both => self.questions.attended(),
                ApprovalRoute::Client => false,
            };
        Askees {
            client: approver.filter(|_| self.route.asks_client()),
            console,
        }
    }

    /// What a call nobody could be asked about is told beyond the rule: where the console is,
    /// when the route would have asked it.
    pub(super) fn nobody_there(&self) -> Option<String> {
        let address = self.questions.address()?;
        self.route.asks_console().then(|| {
            format!(
                "; or have an operator open the console at {address} (nobody was there to answer)"
            )
        })
    }

    /// Where the question goes, for the log and the client: "the console at http://…".
    pub(super) fn place(&self, askees: &Askees<'_>) -> String {
        match (
            askees.console,
            self.questions.address(),
            askees.client.is_some(),
        ) {
            (true, Some(address), true) => format!("the client and the console at {address}"),
            (true, Some(address), false) => format!("the console at {address}"),
            (true, None, _) => "the console".to_owned(),
            (false, _, _) => "the client".to_owned(),
        }
    }

    /// Put `request` (the call `call_id` by `caller` from `origin`) to `askees`: the first answer
    /// wins, and a side that cannot answer (its question timed out, the client failed) leaves
    /// the question to the other. With the answer, the operator who gave it.
    pub(super) async fn ask(
        &self,
        call: (&str, &str, &'static str),
        request: &ApprovalRequest,
        askees: &Askees<'_>,
    ) -> (Answer, Option<String>) {
        let from_client = async {
            match askees.client {
                Some(a) => (a.approve(request).await, None),
                None => std::future::pending().await,
            }
        };
        let from_console = async {
            if askees.console {
                self.questions
                    .ask(self.live, call, request, self.timeout)
                    .await
            } else {
                std::future::pending().await
            }
        };
        tokio::pin!(from_client, from_console);
        let (mut client_open, mut console_open) = (askees.client.is_some(), askees.console);
        loop {
            let answer = tokio::select! {
                a = &mut from_client, if client_open => { client_open = false; a }
                a = &mut from_console, if console_open => { console_open = false; a }
            };
            let undecided = matches!(answer.0, Answer::Unanswered(_));
            if !undecided || !(client_open || console_open) {
                return answer;
            }
        }
    }
}

/// Tell the client, if it asked for progress (`sink`), that its call waits for an approval from
/// `place`: at once and every [`STILL_WAITING`], so that clients that reset their timeout on
/// progress keep waiting. Never returns.
pub(super) async fn keep_informed(sink: Option<&ProgressSink>, place: &str) {
    let Some(sink) = sink else {
        return std::future::pending().await;
    };
    let message = format!("waiting for approval from {place}");
    let mut every = tokio::time::interval(STILL_WAITING);
    loop {
        every.tick().await;
        // Nothing done yet: the relay sends each as a value that still increases.
        sink(Progress {
            done: 0,
            total: None,
            message: message.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::exec::Verdict;

    /// An approver that answers every question the same way, after `after`.
    struct Fake {
        answer: Answer,
        after: Duration,
    }

    impl Approver for Fake {
        fn approve<'a>(
            &'a self,
            _: &'a ApprovalRequest,
        ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
            Box::pin(async move {
                tokio::time::sleep(self.after).await;
                self.answer.clone()
            })
        }
    }

    fn fake(answer: Answer, after_ms: u64) -> Arc<dyn Approver> {
        Arc::new(Fake {
            answer,
            after: Duration::from_millis(after_ms),
        })
    }

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            tool: "write_file".into(),
            plugin: "fs".into(),
            input: json!({"path": "notes.md"}),
            subject: None,
            reason: "ask rule".into(),
        }
    }

    fn served() -> Questions {
        let q = Questions::default();
        q.open();
        q.locate("http://127.0.0.1:8750/console/".into());
        q
    }

    const CALL: (&str, &str, &str) = ("call-1", "alice", "mcp");

    #[test]
    fn the_console_is_asked_only_while_someone_is_there_unless_told_to_wait() {
        let (questions, live) = (served(), Live::default());
        let client = fake(Answer::Approved, 0);
        let wait = Duration::from_secs(1);
        let both = Asking::new(ApprovalRoute::Both, &questions, &live, wait);
        let nobody = both.askees(None);
        assert!(nobody.nobody());
        assert!(
            both.nobody_there()
                .unwrap()
                .contains("http://127.0.0.1:8750/console/"),
            "the model is told where the console is"
        );
        let only_client = both.askees(Some(&client));
        assert!(only_client.client.is_some() && !only_client.console);
        assert_eq!(both.place(&only_client), "the client");
        let attending = questions.attend();
        let asked = both.askees(Some(&client));
        assert!(asked.client.is_some() && asked.console);
        assert_eq!(
            both.place(&asked),
            "the client and the console at http://127.0.0.1:8750/console/"
        );
        drop(attending);
        // "console": waits for an operator even with nobody there; "client": never the console.
        let console = Asking::new(ApprovalRoute::Console, &questions, &live, wait);
        let asked = console.askees(Some(&client));
        assert!(asked.client.is_none() && asked.console);
        let client_only = Asking::new(ApprovalRoute::Client, &questions, &live, wait);
        let _attending = questions.attend();
        assert!(!client_only.askees(Some(&client)).console);
        assert!(client_only.nobody_there().is_none());
        // A console that is not served is never asked.
        let closed = Questions::default();
        let console = Asking::new(ApprovalRoute::Console, &closed, &live, wait);
        assert!(console.askees(None).nobody());
    }

    #[tokio::test]
    async fn a_side_that_cannot_answer_leaves_the_question_to_the_other() {
        let (questions, live) = (served(), Live::default());
        let asking = Asking::new(
            ApprovalRoute::Both,
            &questions,
            &live,
            Duration::from_secs(5),
        );
        let client = fake(Answer::Unanswered("the client failed".into()), 0);
        let _attending = questions.attend();
        let askees = asking.askees(Some(&client));
        let answered = async {
            let q = loop {
                if let Some(q) = questions.waiting().first().cloned() {
                    break q;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            };
            let verdict = Verdict {
                approve: true,
                operator: "bob".into(),
            };
            questions
                .answer(&q.id, &q.input_sha256, verdict)
                .await
                .unwrap();
        };
        let request = request();
        let (asked, ()) = tokio::join!(asking.ask(CALL, &request, &askees), answered);
        assert_eq!(asked, (Answer::Approved, Some("bob".into())));
        assert!(questions.waiting().is_empty());
    }

    #[tokio::test]
    async fn the_first_answer_wins_and_withdraws_the_other_question() {
        let (questions, live) = (served(), Live::default());
        let asking = Asking::new(
            ApprovalRoute::Both,
            &questions,
            &live,
            Duration::from_secs(5),
        );
        let client = fake(Answer::Declined, 20);
        let _attending = questions.attend();
        let askees = asking.askees(Some(&client));
        let asked = asking.ask(CALL, &request(), &askees).await;
        assert_eq!(asked, (Answer::Declined, None));
        assert!(
            questions.waiting().is_empty(),
            "the console's question withdrawn"
        );
    }

    #[tokio::test]
    async fn an_unattended_console_question_ends_unanswered_at_its_timeout() {
        let (questions, live) = (served(), Live::default());
        let asking = Asking::new(
            ApprovalRoute::Console,
            &questions,
            &live,
            Duration::from_millis(50),
        );
        let askees = asking.askees(None);
        let (answer, operator) = asking.ask(CALL, &request(), &askees).await;
        assert!(matches!(answer, Answer::Unanswered(_)), "{answer:?}");
        assert_eq!(operator, None);
    }

    #[tokio::test]
    async fn a_waiting_call_keeps_its_client_informed() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        let sink: ProgressSink = Arc::new(move |p: Progress| kept.lock().unwrap().push(p));
        let informing = keep_informed(Some(&sink), "the console");
        let _ = tokio::time::timeout(Duration::from_millis(50), informing).await;
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "one report at once");
        assert_eq!(seen[0].done, 0);
        assert_eq!(seen[0].message, "waiting for approval from the console");
    }
}
