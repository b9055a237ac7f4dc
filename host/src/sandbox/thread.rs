//! A call that may touch files runs on a thread of its own, where its file operations block inline.
//!
//! wasmtime-wasi sends every file operation (open, stat, each read of at most 64 KiB) to tokio's
//! blocking pool unless told that the current thread may block: two thread hand-offs per operation,
//! which cost more than the operation itself (the fs plugin's grep over 64 files spent half its time
//! switching threads; BENCHMARKS-history.md). A call with granted directories instead runs whole
//! on one blocking-pool thread with its file operations inline: one hand-off per call, and the
//! runtime's workers still never block.
//!
//! A thread stuck in the kernel cannot be interrupted: a FIFO swapped in after the guard looked (the
//! guard refuses to open one), a hung network mount. The caller stops waiting once its deadline and a
//! grace have passed and answers without it; the thread frees the store when the kernel lets it go.

use std::future::Future;

/// The call's thread had not finished when the caller gave up on it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Abandoned;

/// Run `work` on a blocking-pool thread and wait for it, or until `give_up` resolves, whichever comes
/// first. A panic on the thread is the caller's panic, as it would be on a worker.
pub(super) async fn apart<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
    give_up: impl Future<Output = ()>,
) -> Result<T, Abandoned> {
    let mut thread = tokio::task::spawn_blocking(work);
    tokio::select! {
        biased;
        done = &mut thread => match done {
            Ok(value) => Ok(value),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // The runtime is shutting down and never started the thread.
            Err(_) => Err(Abandoned),
        },
        () = give_up => Err(Abandoned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[tokio::test]
    async fn returns_what_the_thread_returns() {
        let on = std::thread::current().id();
        let (value, ran_on) = apart(
            move || (7, std::thread::current().id()),
            std::future::pending(),
        )
        .await
        .unwrap();
        assert_eq!(value, 7);
        assert_ne!(ran_on, on, "the work ran on the caller's thread");
    }

    #[tokio::test]
    async fn answers_without_a_thread_stuck_in_the_kernel_and_lets_it_finish_later() {
        let (started, has_started) = tokio::sync::oneshot::channel();
        let (release, released) = mpsc::channel::<()>();
        let (finished, has_finished) = mpsc::channel();
        let stuck = apart(
            move || {
                started.send(()).unwrap();
                // A blocking wait, as a read from a FIFO with no writer would be.
                released.recv().unwrap();
                finished.send(()).unwrap();
            },
            async {
                has_started.await.unwrap();
            },
        )
        .await;
        assert_eq!(stuck, Err(Abandoned));
        assert!(has_finished.try_recv().is_err());
        release.send(()).unwrap();
        has_finished
            .recv_timeout(Duration::from_secs(30))
            .expect("the abandoned thread finishes once released");
    }

    #[tokio::test]
    #[should_panic(expected = "the guest's host panicked")]
    async fn a_panic_on_the_thread_reaches_the_caller() {
        let _ = apart(
            || panic!("the guest's host panicked"),
            std::future::pending(),
        )
        .await;
    }
}
