//! The admit stage: whether a call may start at all. A call that is part of admitted work (a
//! batch, a task, a calling call) runs under that work's ticket; any other takes its own, or is
//! refused once shutdown has started. Admitted work's later call is refused after the shutdown's
//! grace period, and a batch's later call after its deadline passed while earlier ones ran.

use super::admission::Admission;
use super::request::CallRequest;
use super::shape;
use toolhost_call::call::ErrorKind;

/// The admit stage, over the daemon's admission.
pub(super) struct Admit<'a> {
    pub(super) admission: &'a Admission,
}

impl Admit<'_> {
    /// Admit `req`, leaving the ticket it runs under on it (held until the call ends, and by its
    /// nested calls); or the kind and sentence it is refused with.
    pub(super) fn admit(&self, req: &mut CallRequest) -> Result<(), (ErrorKind, String)> {
        let ticket = match req.admitted.take() {
            Some(ticket) => ticket,
            None => self
                .admission
                .admit()
                .map_err(|stopping| (ErrorKind::Busy, stopping.to_string()))?,
        };
        req.admitted = Some(ticket);
        if self.admission.calls().is_cancelled() {
            return Err((ErrorKind::Cancelled, shape::shut_down(&req.tool)));
        }
        if let Some(deadline) = req.deadline.filter(|d| d.at() <= std::time::Instant::now()) {
            return Err((
                ErrorKind::Timeout,
                shape::request_timeout(&req.tool, deadline.limit()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::exec::admission::Deadline;

    fn request() -> CallRequest {
        CallRequest {
            tool: "echo".into(),
            ..CallRequest::default()
        }
    }

    #[tokio::test]
    async fn a_call_takes_a_ticket_and_holds_it_until_it_ends() {
        let admission = Admission::new();
        let stage = Admit {
            admission: &admission,
        };
        let mut req = request();
        stage.admit(&mut req).unwrap();
        assert!(req.admitted.is_some());
        assert_eq!(admission.in_flight(), 1);
        drop(req);
        assert_eq!(admission.in_flight(), 0);
    }

    #[tokio::test]
    async fn after_shutdown_starts_new_calls_are_busy_and_admitted_work_goes_on() {
        let admission = Admission::new();
        let stage = Admit {
            admission: &admission,
        };
        let batch = admission.admit().unwrap();
        let drained = admission.drain(Duration::from_secs(5));
        tokio::pin!(drained);
        // Polled once: the shutdown has started and waits for the batch.
        assert!(futures_util::poll!(&mut drained).is_pending());
        let (kind, message) = stage.admit(&mut request()).unwrap_err();
        assert_eq!(kind, ErrorKind::Busy);
        assert!(message.contains("shutting down"), "{message}");
        let mut part = CallRequest {
            admitted: Some(batch.clone()),
            ..request()
        };
        stage.admit(&mut part).unwrap();
        drop((part, batch));
        assert!(
            drained.await,
            "the batch was in flight when the shutdown began"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_call_of_admitted_work_ends_at_the_grace_or_the_deadline() {
        let admission = Admission::new();
        let stage = Admit {
            admission: &admission,
        };
        let mut late = CallRequest {
            deadline: Some(Deadline::after(Duration::ZERO)),
            ..request()
        };
        let (kind, message) = stage.admit(&mut late).unwrap_err();
        assert_eq!(kind, ErrorKind::Timeout);
        assert!(message.contains("echo"), "{message}");

        let batch = admission.admit().unwrap();
        // The grace ends with the batch still holding its ticket: its later calls are cut short.
        assert!(admission.drain(Duration::from_millis(10)).await);
        let mut part = CallRequest {
            admitted: Some(batch.clone()),
            ..request()
        };
        let (kind, _) = stage.admit(&mut part).unwrap_err();
        assert_eq!(kind, ErrorKind::Cancelled);
    }
}
