//! The terminal approver: `ask` decisions answered by a person at the controlling terminal.
//!
//! Waiting for a person is blocking I/O on `/dev/tty`: it runs on the blocking pool, never on a
//! runtime thread, so that other calls of a batch (and the Ctrl-C handler) keep running meanwhile.

use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use toolhost::exec::{Answer, ApprovalRequest, Approver};

/// Asks on the controlling terminal, so that `ask` rules work from a shell even when stdin is a pipe.
pub(super) struct TtyApprover {
    /// One question at a time: calls of a batch that ask wait for the terminal in turn.
    tty: Arc<Mutex<File>>,
}

impl TtyApprover {
    /// The approver for this process's terminal; `None` without one (ask then means deny).
    pub(super) fn open() -> Option<Arc<dyn Approver>> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        Some(Arc::new(Self {
            tty: Arc::new(Mutex::new(tty)),
        }))
    }
}

impl Approver for TtyApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        let question = request.question();
        let tty = self.tty.clone();
        Box::pin(async move {
            let asked = tokio::task::spawn_blocking(move || {
                let Ok(mut tty) = tty.lock() else {
                    return Answer::Unanswered(
                        "an earlier question left the terminal unusable".into(),
                    );
                };
                let _ = write!(tty, "{question}\n[y/N] ");
                let mut answer = [0u8; 1];
                match tty.read(&mut answer) {
                    Ok(1) => Answer::from_yes(answer[0] == b'y' || answer[0] == b'Y'),
                    Ok(_) => Answer::Unanswered("the terminal closed before an answer".into()),
                    Err(e) => Answer::Unanswered(format!("the terminal could not be read: {e}")),
                }
            });
            asked.await.unwrap_or_else(|e| {
                Answer::Unanswered(format!("the terminal could not be asked: {e}"))
            })
        })
    }
}
