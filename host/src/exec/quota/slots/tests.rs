//! Places for calls at once, leased in blocks from a fake ledger with the store's semantics: a
//! steady stream of calls reaches the ledger once, spare places go back after the hold, the
//! fleet's limit holds across daemons leasing at once, and a daemon keeps at most a block spare.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::super::tests::{FakeLedger, background};
use super::*;

const ID: &str = "[\"running\",\"local\",null]";

fn daemon(ledger: &Arc<FakeLedger>) -> Arc<Slots> {
    Arc::new(Slots::new(ledger.clone()))
}

#[test]
fn a_block_is_a_twentieth_of_the_limit_and_at_least_one() {
    assert_eq!(block(1), 1);
    assert_eq!(block(39), 1);
    assert_eq!(block(40), 2);
    assert_eq!(block(100), 5);
}

#[tokio::test(start_paused = true)]
async fn calls_one_after_another_lease_once_and_give_the_place_back_after_the_hold() {
    let ledger = Arc::new(FakeLedger::default());
    let slots = daemon(&ledger);
    for _ in 0..50 {
        assert!(slots.enter(ID, 2).await.unwrap());
        slots.leave(ID);
        tokio::time::advance(Duration::from_millis(10)).await;
    }
    assert_eq!(
        ledger.enters.load(Ordering::Acquire),
        1,
        "one lease for 50 calls"
    );
    assert_eq!(ledger.running(ID), 1, "the place is kept spare");

    tokio::time::advance(HOLD - Duration::from_millis(20)).await;
    background().await;
    assert_eq!(ledger.running(ID), 1, "not before the hold has passed");
    tokio::time::advance(Duration::from_millis(30)).await;
    background().await;
    assert_eq!(ledger.running(ID), 0, "given back once it has");
    assert_eq!(slots.held(ID), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_running_call_keeps_its_place_past_the_hold() {
    let ledger = Arc::new(FakeLedger::default());
    let slots = daemon(&ledger);
    assert!(slots.enter(ID, 40).await.unwrap());
    assert!(slots.enter(ID, 40).await.unwrap());
    slots.leave(ID);
    tokio::time::advance(HOLD * 2).await;
    background().await;
    assert_eq!(
        slots.held(ID),
        (1, 1),
        "the spare went back, the running call's did not"
    );
    assert_eq!(ledger.running(ID), 1);
}

#[tokio::test(start_paused = true)]
async fn daemons_never_run_more_than_the_limit_and_a_spare_place_frees_for_the_other() {
    let ledger = Arc::new(FakeLedger::default());
    let (one, two) = (daemon(&ledger), daemon(&ledger));
    assert!(one.enter(ID, 2).await.unwrap());
    assert!(two.enter(ID, 2).await.unwrap());
    assert!(!one.enter(ID, 2).await.unwrap(), "two run fleet-wide");
    assert!(!two.enter(ID, 2).await.unwrap());
    one.leave(ID);
    assert!(
        one.enter(ID, 2).await.unwrap(),
        "one's spare place serves one's next call"
    );
    one.leave(ID);
    background().await;
    assert!(
        !two.enter(ID, 2).await.unwrap(),
        "held spare by one, within the hold"
    );
    tokio::time::advance(HOLD + Duration::from_millis(1)).await;
    background().await;
    assert!(two.enter(ID, 2).await.unwrap(), "given back after the hold");
    assert_eq!(ledger.running(ID), 2);
}

#[tokio::test(start_paused = true)]
async fn many_at_once_on_three_daemons_stay_within_the_limit_and_keep_at_most_a_block_spare() {
    let ledger = Arc::new(FakeLedger::default());
    let daemons = [daemon(&ledger), daemon(&ledger), daemon(&ledger)];
    let most = 100;
    let mut admitted = 0;
    for round in 0..60 {
        for d in &daemons {
            if d.enter(ID, most).await.unwrap() {
                admitted += 1;
            }
        }
        assert!(ledger.running(ID) <= most, "round {round}");
    }
    assert_eq!(
        admitted, most,
        "every place is used before any call is refused"
    );
    for d in &daemons {
        let (leased, used) = d.held(ID);
        for _ in 0..used {
            d.leave(ID);
        }
        assert!(
            d.held(ID).0 <= block(most),
            "{leased} leased, at most a block kept"
        );
    }
    background().await;
    assert!(
        ledger.running(ID) <= 3 * block(most),
        "{}",
        ledger.running(ID)
    );
    tokio::time::advance(HOLD * 2).await;
    background().await;
    assert_eq!(ledger.running(ID), 0);
}
