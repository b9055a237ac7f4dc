//! Schema checks kept off the async runtime. A check that is surely quick (the schema's bounded
//! cost times the value's size, see `gate::INLINE_EVALUATIONS`) runs in place; any other runs on a
//! blocking thread, one of a few, under a deadline, so that one costly validation never delays
//! other calls, the transports or `/health`.
//!
//! A check cannot be stopped part-way. One that overruns its deadline is abandoned by its call; its
//! thread finishes on its own and keeps its pool slot until then, so runaway checks can occupy at
//! most [`Checks`]' slots and never pile up threads. The static cost bound (`gate`) keeps that rare.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout_at};

use toolhost_call::call::ErrorKind;

/// How long one schema check may take, waiting for a slot included. Checking a 1 MiB input against
/// a real tool's schema takes milliseconds; seconds mean the schema, not the input, is at fault.
pub(crate) const CHECK_DEADLINE: Duration = Duration::from_secs(2);

/// Why a check gave no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unchecked {
    /// Every slot was taken for the whole deadline.
    Busy,
    /// The check ran past the deadline and was abandoned.
    Overdue,
    /// The validator panicked.
    Crashed,
}

impl Unchecked {
    /// The error kind a call gets.
    pub(crate) fn kind(self) -> ErrorKind {
        match self {
            Self::Busy => ErrorKind::Busy,
            Self::Overdue => ErrorKind::Timeout,
            Self::Crashed => ErrorKind::Internal,
        }
    }

    /// What a model reads when the check of `what` ("the input of 'x'") gave no answer.
    pub(crate) fn message(self, what: &str) -> String {
        let limit = CHECK_DEADLINE.as_secs_f64();
        match self {
            Self::Busy => format!(
                "toolhost is busy checking other calls against their schemas and could not check {what} \
                 within {limit} s; try again shortly."
            ),
            Self::Overdue => format!(
                "Checking {what} against its schema took longer than {limit} s and was abandoned; \
                 send a smaller or simpler value."
            ),
            Self::Crashed => format!("toolhost failed while checking {what} against its schema."),
        }
    }
}

/// The pool of threads schema checks run on, and its deadline.
pub(crate) struct Checks {
    slots: Arc<Semaphore>,
    deadline: Duration,
}

impl Checks {
    /// As many slots as the machine has cores (at least two), and [`CHECK_DEADLINE`].
    pub(crate) fn new() -> Self {
        Self::with(crate::system::cores().max(2), CHECK_DEADLINE)
    }

    pub(crate) fn with(slots: usize, deadline: Duration) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(slots)),
            deadline,
        }
    }

    /// Run `check` in place when `quick`, else on a pool thread under the deadline.
    pub(crate) async fn run<T, F>(&self, quick: bool, check: F) -> Result<T, Unchecked>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        if quick {
            return Ok(check());
        }
        let until = Instant::now() + self.deadline;
        let slot = match timeout_at(until, self.slots.clone().acquire_owned()).await {
            Ok(Ok(slot)) => slot,
            Ok(Err(_)) | Err(_) => return Err(Unchecked::Busy),
        };
        let running = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            check()
        });
        match timeout_at(until, running).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(Unchecked::Crashed),
            Err(_) => Err(Unchecked::Overdue),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(ms: u64) -> impl FnOnce() -> u64 + Send + 'static {
        move || {
            std::thread::sleep(Duration::from_millis(ms));
            ms
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn slow_checks_leave_the_runtime_free() {
        let checks = Checks::with(2, Duration::from_secs(5));
        // On a single-threaded runtime, a check run in place would hold the ticker back.
        let ticks = tokio::spawn(async {
            let mut n = 0;
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(10)).await;
                n += 1;
            }
            n
        });
        let started = std::time::Instant::now();
        assert_eq!(checks.run(false, spin(400)).await, Ok(400));
        assert_eq!(ticks.await.unwrap(), 20);
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn abandons_checks_past_the_deadline_and_keeps_their_slot() {
        let checks = Checks::with(1, Duration::from_millis(100));
        let started = std::time::Instant::now();
        assert_eq!(checks.run(false, spin(600)).await, Err(Unchecked::Overdue));
        assert!(started.elapsed() < Duration::from_millis(400));
        // The runaway check still holds the only slot.
        assert_eq!(checks.run(false, spin(0)).await, Err(Unchecked::Busy));
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(checks.run(false, spin(0)).await, Ok(0));
        // Quick checks never wait for a slot.
        assert_eq!(checks.run(true, spin(0)).await, Ok(0));
    }

    #[test]
    fn says_what_to_do() {
        let text = Unchecked::Overdue.message("the input of 'q'");
        assert_eq!(
            text,
            "Checking the input of 'q' against its schema took longer than 2 s and was abandoned; \
             send a smaller or simpler value."
        );
        assert_eq!(Unchecked::Busy.kind(), ErrorKind::Busy);
    }
}
