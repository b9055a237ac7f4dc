//! Two daemons' live calls over one board in memory: each lists the other's calls naming its
//! daemon, a cancel made on one stops the call on the other (and names the operator), and a
//! board that does not answer leaves each daemon its own list.

use std::sync::atomic::Ordering;

use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::super::super::board::fake::{Fake, Store};
use super::*;
use crate::audit::AuditRecord;

fn daemon(store: &Arc<Store>, name: &str) -> Arc<Live> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    store.listeners.lock().unwrap().push(tx);
    let live = Arc::new(Live::default());
    live.share(Arc::new(Fake {
        store: store.clone(),
        daemon: name.to_owned(),
    }));
    let hears = live.clone();
    tokio::spawn(async move {
        while let Some(notice) = rx.recv().await {
            hears.heard(&notice);
        }
    });
    live
}

#[tokio::test]
async fn each_daemon_lists_the_fleets_calls_and_cancels_on_the_owner() {
    let store = Arc::new(Store::default());
    let (one, two) = (daemon(&store, "one"), daemon(&store, "two"));
    let mut two_hears = two.subscribe();
    let stop = CancellationToken::new();
    let listed = one.start("c1", ("sleep", None, "mcp", None), stop.clone());
    let _mine = two.start("c2", ("echo", None, "mcp", None), CancellationToken::new());
    one.show_fleet(false).await;
    two.show_fleet(false).await;

    let seen = two.listed(false).await;
    let named: Vec<_> = seen
        .running
        .iter()
        .map(|r| {
            (
                r["call_id"].as_str().unwrap(),
                r["daemon"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(named, [("c2", "two"), ("c1", "one")]);
    // Two's console was told to look again when one showed its calls.
    tokio::task::yield_now().await;
    let mut told = false;
    while let Ok(event) = two_hears.try_recv() {
        told |= matches!(event, LiveEvent::Elsewhere);
    }
    assert!(told, "told of one's calls");

    // A cancel made on two reaches one, which stops the call for the operator.
    assert_eq!(
        two.cancel_anywhere("c1", "bob").await,
        Ok(Cancelled::Elsewhere("one".into()))
    );
    tokio::time::timeout(std::time::Duration::from_secs(5), stop.cancelled())
        .await
        .expect("one stopped the call");
    assert_eq!(listed.cancelled_by(), Some("bob"));
    assert_eq!(
        two.cancel_anywhere("c9", "bob").await,
        Err(NotRunning("c9".into()))
    );
    assert_eq!(
        two.cancel_anywhere("c2", "bob").await,
        Ok(Cancelled::Here),
        "its own call is cancelled here"
    );

    // The call ends on one: two lists it among the recent, on one, once one shows it.
    drop(listed);
    let mut record = AuditRecord::begin("c1", "mcp", "sleep", &json!({"ms": 5}));
    record.input = Some(json!({"secret": "kept out"}));
    one.end(&record);
    one.show_fleet(false).await;
    let seen = two.listed(false).await;
    assert_eq!(seen.running.len(), 1, "only two's own call runs");
    let recent = seen.recent.iter().find(|r| r["call_id"] == "c1").unwrap();
    assert_eq!(recent["daemon"], "one");
    assert!(
        recent.get("input").is_none(),
        "no input unless the log keeps inputs"
    );
}

#[tokio::test]
async fn with_the_board_down_a_daemon_lists_its_own_calls() {
    let store = Arc::new(Store::default());
    let one = daemon(&store, "one");
    let _listed = one.start("c1", ("sleep", None, "mcp", None), CancellationToken::new());
    store.down.store(true, Ordering::Release);
    one.show_fleet(false).await;
    let seen = one.listed(false).await;
    assert_eq!(seen.running.len(), 1);
    assert_eq!(seen.running[0]["daemon"], "one");
    assert_eq!(
        one.cancel_anywhere("c9", "bob").await,
        Err(NotRunning("c9".into()))
    );
    // Shown once the board answers again, though nothing changed meanwhile.
    store.down.store(false, Ordering::Release);
    one.show_fleet(false).await;
    let two = daemon(&store, "two");
    assert_eq!(two.listed(false).await.running.len(), 1);
}
