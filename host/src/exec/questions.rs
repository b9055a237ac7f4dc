//! The console's approval queue: every `ask` the gate puts to the console waits here, whatever
//! front end the call came from, until an operator answers it, the call goes away, or the
//! question times out. An answer names the input it was given for (its SHA-256), so an operator
//! can never approve an input they were not shown, and each question takes one answer: a second
//! (a replayed request, a second operator) is told it came too late. In a fleet the questions
//! are also on the [`Board`] every daemon shares: any console lists and answers them, the store
//! lets one answer win, and the daemon whose call waits hears of it ([`Questions::heard`]).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::Value;
use tokio::sync::oneshot;

use super::board::Board;
use super::live::{Live, LiveEvent};
pub use super::question::{AnswerError, Verdict};
use super::question::{Question, Subject};
use toolhost_call::call::{Answer, ApprovalRequest};

/// How many answered questions are remembered, to tell a replay from an unknown id.
const REMEMBERED: usize = 4096;

/// How long an operator's last request to the console's API counts as someone there to answer.
pub const PRESENT_FOR: Duration = Duration::from_secs(30);

/// How long an open event stream counts as someone there, as told to the rest of a fleet: a
/// stream that closes (or a daemon that dies) stops counting this long after.
const STREAM_FOR: Duration = Duration::from_secs(3);

struct Waiting {
    question: Arc<Question>,
    reply: oneshot::Sender<Verdict>,
}

/// The queue. Closed (asks nothing) until the console is served.
#[derive(Default)]
pub struct Questions {
    open: AtomicBool,
    waiting: Mutex<HashMap<String, Waiting>>,
    ended: Mutex<VecDeque<String>>,
    /// Event streams open now.
    streams: Arc<AtomicUsize>,
    /// When an operator last used the console's API.
    seen: Mutex<Option<Instant>>,
    /// Until when someone at another daemon's console can answer (in a fleet).
    elsewhere: Mutex<Option<Instant>>,
    /// Where the console is (`http://ADDR/console/`), for the log and the model's messages.
    address: OnceLock<String>,
    /// The fleet's questions, when the daemon is one of a fleet.
    board: OnceLock<Arc<dyn Board>>,
}

/// An open event stream, counted as someone able to answer until dropped.
pub struct Attendance(Arc<AtomicUsize>);

impl Drop for Attendance {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Questions {
    /// Start taking questions: the console is served.
    pub fn open(&self) {
        self.open.store(true, Ordering::Release);
    }

    /// Where the console is served (`http://ADDR/console/`), once its address is bound.
    pub fn locate(&self, address: String) {
        let _ = self.address.set(address);
    }

    /// Whether the console is served (questions may go there).
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// Where the console is, once served.
    pub fn address(&self) -> Option<&str> {
        self.address.get().map(String::as_str)
    }

    /// An event stream opened: someone can answer while the guard lives.
    pub fn attend(&self) -> Attendance {
        self.streams.fetch_add(1, Ordering::AcqRel);
        Attendance(self.streams.clone())
    }

    /// An operator used the console's API just now.
    pub fn seen(&self) {
        *self.seen.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    /// An operator signed out: their last request no longer counts as someone there.
    pub fn left(&self) {
        *self.seen.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Whether someone can answer in the console now: an event stream is open, or an operator
    /// used the API within [`PRESENT_FOR`], here or (in a fleet) at another daemon's console.
    pub fn attended(&self) -> bool {
        self.is_open()
            && (!self.here_for().is_zero()
                || self
                    .elsewhere
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_some_and(|until| Instant::now() < until))
    }

    /// How much longer someone at this daemon's console can answer: while an event stream is
    /// open, [`STREAM_FOR`] (said again while it stays open); else what is left of
    /// [`PRESENT_FOR`] since an operator's last request.
    fn here_for(&self) -> Duration {
        if self.streams.load(Ordering::Acquire) > 0 {
            return STREAM_FOR;
        }
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map_or(Duration::ZERO, |at| {
                PRESENT_FOR.saturating_sub(at.elapsed())
            })
    }

    /// The questions waiting now, oldest first.
    pub fn waiting(&self) -> Vec<Arc<Question>> {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let mut list: Vec<_> = waiting.values().map(|w| w.question.clone()).collect();
        list.sort_by_key(|q| q.asked_at);
        list
    }

    /// Answer question `id` for the input whose digest is `input_sha256`. In a fleet the store
    /// decides which answer wins; the waiting call, here or on its own daemon, wakes at once.
    pub async fn answer(
        &self,
        id: &str,
        input_sha256: &str,
        verdict: Verdict,
    ) -> Result<(), AnswerError> {
        if let Some(board) = self.board.get() {
            match board.answer(id, input_sha256, &verdict).await {
                Ok(Ok(())) => {
                    self.deliver(id, verdict);
                    return Ok(());
                }
                // Only here, if posting it failed: answered here alone.
                Ok(Err(AnswerError::Unknown(_))) => {}
                Ok(Err(e)) => return Err(e),
                Err(e) => tracing::warn!(
                    "the fleet's questions could not be reached to answer {id} ({e}); a question \
                     of this daemon's is answered here alone"
                ),
            }
        }
        self.answer_here(id, input_sha256, verdict)
    }

    /// Answer question `id` of this daemon's, in its memory alone.
    fn answer_here(
        &self,
        id: &str,
        input_sha256: &str,
        verdict: Verdict,
    ) -> Result<(), AnswerError> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(w) = waiting.get(id) else {
            let ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
            return Err(if ended.iter().any(|e| e == id) {
                AnswerError::Ended(id.to_owned())
            } else {
                AnswerError::Unknown(id.to_owned())
            });
        };
        if w.question.input_sha256 != input_sha256 {
            return Err(AnswerError::Mismatched);
        }
        let Some(w) = waiting.remove(id) else {
            return Err(AnswerError::Unknown(id.to_owned()));
        };
        drop(waiting);
        self.remember(id);
        // The call may have gone this instant; its question is then simply over.
        w.reply
            .send(verdict)
            .map_err(|_| AnswerError::Ended(id.to_owned()))
    }

    fn remember(&self, id: &str) {
        let mut ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        if ended.len() == REMEMBERED {
            ended.pop_front();
        }
        ended.push_back(id.to_owned());
    }

    /// Put `request` (the call `call_id` by `caller` from `origin`) to the console and wait up to
    /// `timeout` for an operator. Dropping the future withdraws the question.
    pub(super) async fn ask(
        &self,
        live: &Live,
        call: (&str, &str, &'static str),
        request: &ApprovalRequest,
        timeout: Duration,
    ) -> (Answer, Option<String>) {
        let (call_id, caller, origin) = call;
        let now = Utc::now();
        let question = Arc::new(Question {
            id: new_id(),
            call_id: call_id.to_owned(),
            tool: request.tool.clone(),
            plugin: request.plugin.clone(),
            subject: request.subject.as_ref().map(|(pointer, value)| Subject {
                pointer: pointer.clone(),
                value: value.clone(),
            }),
            input: request.input.clone(),
            input_sha256: digest(&request.input),
            reason: request.reason.clone(),
            caller: caller.to_owned(),
            origin,
            asked_at: now,
            expires_at: now + chrono::Duration::from_std(timeout).unwrap_or(chrono::Duration::MAX),
        });
        let (reply, answered) = oneshot::channel();
        let id = question.id.clone();
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                id.clone(),
                Waiting {
                    question: question.clone(),
                    reply,
                },
            );
        if let Some(board) = self.board.get()
            && let Err(e) = board.post(&question).await
        {
            tracing::warn!(
                "the question for call {call_id} could not be shared with the fleet ({e}); only \
                 this daemon's console shows it"
            );
        }
        live.publish(|| LiveEvent::Question(question));
        let _withdraw = Withdraw {
            questions: self,
            live,
            id: &id,
        };
        match tokio::time::timeout(timeout, answered).await {
            Ok(Ok(verdict)) => {
                live.publish(|| LiveEvent::Answered {
                    id: id.clone(),
                    answer: if verdict.approve {
                        "approved"
                    } else {
                        "declined"
                    },
                    operator: Some(verdict.operator.clone()),
                });
                (Answer::from_yes(verdict.approve), Some(verdict.operator))
            }
            Ok(Err(_)) => (
                Answer::Unanswered("the console's question was withdrawn".into()),
                None,
            ),
            Err(_) => (
                Answer::Unanswered(format!(
                    "no operator answered in the console within {} s",
                    timeout.as_secs()
                )),
                None,
            ),
        }
    }
}

/// Takes a question off the queue when its call stops waiting, however that happens.
struct Withdraw<'a> {
    questions: &'a Questions,
    live: &'a Live,
    id: &'a str,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let removed = self
            .questions
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(self.id);
        if removed.is_some() {
            self.questions.remember(self.id);
            if let Some(board) = self.questions.board.get().cloned() {
                let id = self.id.to_owned();
                tokio::spawn(async move {
                    if let Err(e) = board.withdraw(&id).await {
                        tracing::warn!("the fleet's question {id} could not be withdrawn: {e}");
                    }
                });
            }
            self.live.publish(|| LiveEvent::Answered {
                id: self.id.to_owned(),
                answer: "unanswered",
                operator: None,
            });
        }
    }
}

/// SHA-256 of `value` as compact JSON, in hex: what an answer names.
pub fn digest(value: &Value) -> String {
    use sha2::{Digest, Sha256};
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// 128 random bits, hex.
fn new_id() -> String {
    crate::random::hex::<16>()
}

mod fleet;
#[cfg(test)]
mod tests;
