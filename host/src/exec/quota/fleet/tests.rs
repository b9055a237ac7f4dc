//! One budget across a fleet, against a fake ledger with the store's semantics: call tokens
//! taken in blocks and spent locally first, a reservation past its hold given back, a refused
//! admission undone, fuel reserved once for every budget.

use std::sync::atomic::Ordering;

use toolhost_gate::quota::RawQuota;

use super::super::tests::{FakeLedger, background, calls, fuel, quota};
use super::*;

fn key(tool: Option<&str>) -> Key {
    Key {
        who: "local".into(),
        tool: tool.map(str::to_owned),
    }
}

fn fleet() -> (Arc<FakeLedger>, Fleet) {
    let ledger = Arc::new(FakeLedger::default());
    (ledger.clone(), Fleet::new(ledger))
}

/// Admitted, with what fuel it reserved.
async fn admitted(fleet: &Fleet, wanted: &[(Key, Quota)], fuel: u64) -> Option<u64> {
    match fleet.admit(wanted, "(no token)", fuel).await {
        Ok(Ok(reserved)) => reserved,
        Ok(Err(r)) => panic!("refused: {}", r.message),
        Err(e) => panic!("the ledger failed: {e}"),
    }
}

#[test]
fn a_block_is_a_twentieth_of_the_burst_and_at_least_one() {
    let rate = |burst| Rate {
        amount: burst,
        per: Duration::from_secs(60),
        burst,
    };
    assert_eq!(block(&rate(1)), 1);
    assert_eq!(block(&rate(39)), 1);
    assert_eq!(block(&rate(40)), 2);
    assert_eq!(block(&rate(100)), 5);
}

#[tokio::test]
async fn a_daemon_takes_call_tokens_in_blocks_and_spends_its_reservation_first() {
    let (ledger, fleet) = fleet();
    let wanted = [(key(None), calls(40))];
    admitted(&fleet, &wanted, 0).await;
    assert_eq!(ledger.takes.load(Ordering::Acquire), 1);
    admitted(&fleet, &wanted, 0).await;
    assert_eq!(
        ledger.takes.load(Ordering::Acquire),
        1,
        "the second call's token was reserved by the first"
    );
    admitted(&fleet, &wanted, 0).await;
    assert_eq!(ledger.takes.load(Ordering::Acquire), 2);
}

#[tokio::test]
async fn a_reservation_unused_past_its_hold_goes_back_to_the_ledger() {
    let (ledger, fleet) = fleet();
    let q = calls(40);
    let wanted = [(key(None), q)];
    let id = key(None).ledger("calls");
    admitted(&fleet, &wanted, 0).await;
    // One token used, one reserved: 38 left in the ledger.
    fleet.lock().get_mut(&id).expect("reserved").until = Instant::now();
    admitted(&fleet, &wanted, 0).await;
    background().await;
    let level = ledger.level(&id, q.calls.as_ref().unwrap()).unwrap();
    assert_eq!(
        level.floor(),
        37.0,
        "the stale token went back, then a new block was taken: {level}"
    );
}

#[tokio::test]
async fn daemons_sharing_a_ledger_never_start_more_calls_than_its_burst() {
    let ledger = Arc::new(FakeLedger::default());
    let daemons = [Fleet::new(ledger.clone()), Fleet::new(ledger.clone())];
    let wanted = [(key(None), calls(4))];
    let mut started = 0;
    for i in 0..10 {
        match daemons[i % 2]
            .admit(&wanted, "(no token)", 0)
            .await
            .unwrap()
        {
            Ok(_) => started += 1,
            Err(r) => {
                assert!(
                    r.message.contains("may start 4 call(s) per hour"),
                    "{}",
                    r.message
                );
                assert!(r.retry_after.is_some());
            }
        }
    }
    assert_eq!(started, 4);
}

#[tokio::test(start_paused = true)]
async fn a_refused_admission_gives_back_everything_it_took() {
    let (ledger, fleet) = fleet();
    let mine = quota(RawQuota {
        calls: Some(40),
        in_flight: Some(1),
        fuel: Some(1_000),
        ..RawQuota::default()
    });
    let tools = calls(1);
    // The tool's one call is spent.
    admitted(&fleet, &[(key(Some("grep")), tools)], 0).await;

    let wanted = [(key(None), mine), (key(Some("grep")), tools)];
    let refused = match fleet.admit(&wanted, "(no token)", 500).await.unwrap() {
        Ok(_) => panic!("the tool's quota is spent"),
        Err(r) => r,
    };
    assert!(refused.message.contains("of 'grep'"), "{}", refused.message);
    background().await;
    let running = key(None).ledger("running");
    assert_eq!(
        fleet.slots().held(&running),
        (1, 0),
        "its place is kept spare"
    );
    tokio::time::advance(HOLD * 2).await;
    background().await;
    assert_eq!(ledger.running(&running), 0, "and given back after the hold");
    let fuel_level = ledger
        .level(&key(None).ledger("fuel"), mine.fuel.as_ref().unwrap())
        .unwrap();
    assert!(fuel_level >= 1_000.0, "the fuel went back: {fuel_level}");
    let tokens = fleet.lock()[&key(None).ledger("calls")].tokens;
    assert_eq!(tokens, 2, "the call token went back to the reservation");
}

#[tokio::test]
async fn each_fuel_budget_keeps_only_the_smallest_reservation() {
    let (ledger, fleet) = fleet();
    let (mine, tools) = (fuel(1_000), fuel(300));
    let wanted = [(key(None), mine), (key(Some("grep")), tools)];
    assert_eq!(admitted(&fleet, &wanted, 500).await, Some(300));
    background().await;
    let level = ledger
        .level(&key(None).ledger("fuel"), mine.fuel.as_ref().unwrap())
        .unwrap();
    assert_eq!(level.floor(), 700.0, "500 taken, 200 given back: {level}");
}

#[tokio::test]
async fn a_ledger_that_does_not_answer_is_an_error() {
    let (ledger, fleet) = fleet();
    ledger.down.store(true, Ordering::Release);
    let result = fleet.admit(&[(key(None), calls(1))], "(no token)", 0).await;
    assert!(matches!(result, Err(LedgerError(_))));
}
