//! Quotas as the pipeline asks them: each caller's share of calls, calls at once and fuel, a
//! tool's share per caller, the words of a refusal, fuel reservations settled or given back, and
//! a fleet's ledger shared (a fake one, with the store's semantics) or down.

use std::sync::atomic::Ordering;

use toolhost_gate::quota::RawQuota;

use super::*;

mod ledger;

pub(super) use self::ledger::FakeLedger;

/// Long windows, so that nothing refills noticeably while a test runs.
const HOUR: u64 = 3600;

pub(super) fn quota(raw: RawQuota) -> Quota {
    Quota::new(&RawQuota {
        per_s: Some(HOUR),
        ..raw
    })
    .unwrap()
}

pub(super) fn calls(n: u64) -> Quota {
    quota(RawQuota {
        calls: Some(n),
        ..RawQuota::default()
    })
}

pub(super) fn at_once(n: u32) -> Quota {
    quota(RawQuota {
        in_flight: Some(n),
        ..RawQuota::default()
    })
}

pub(super) fn fuel(n: u64) -> Quota {
    quota(RawQuota {
        fuel: Some(n),
        ..RawQuota::default()
    })
}

fn caller(subject: &str) -> Caller {
    Caller {
        issuer: "https://id.example".into(),
        subject: subject.into(),
        ..Caller::default()
    }
}

/// A caller's own quota only.
async fn admit(quotas: &Quotas, q: &Quota, fuel: u64) -> Result<Held, Refused> {
    quotas.admit(None, "grep", (Some(q), None), fuel).await
}

fn refused(result: Result<Held, Refused>) -> Refused {
    match result {
        Ok(_) => panic!("admitted, expected a refusal"),
        Err(r) => r,
    }
}

/// Let the tasks spawned to give back and to leave run (the runtime has one thread).
pub(super) async fn background() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn without_a_quota_nothing_is_counted_and_fuel_is_not_capped() {
    let quotas = Quotas::default();
    for _ in 0..100 {
        let held = quotas.admit(None, "grep", (None, None), 1_000).await;
        let held = held.ok().unwrap();
        assert_eq!(held.fuel(), None);
        assert!(matches!(held.by, Keeper::Nothing), "nothing kept");
    }
}

#[tokio::test]
async fn a_caller_starts_only_its_calls_per_window_and_is_told_when_to_retry() {
    let quotas = Quotas::default();
    let q = calls(2);
    for _ in 0..2 {
        drop(admit(&quotas, &q, 0).await.ok().unwrap());
    }
    let r = refused(admit(&quotas, &q, 0).await);
    assert_eq!(
        r.message,
        "Rate limited: (no token) may start 2 call(s) per hour (bursts of 2); retry in 1800 s."
    );
    let wait = r.retry_after.expect("when to retry");
    assert!(
        wait > Duration::from_secs(1790) && wait <= Duration::from_secs(1800),
        "one call's refill: {wait:?}"
    );
}

#[tokio::test]
async fn calls_at_once_are_counted_until_the_held_call_drops() {
    let quotas = Quotas::default();
    let q = at_once(1);
    let held = admit(&quotas, &q, 0).await.ok().unwrap();
    let r = refused(admit(&quotas, &q, 0).await);
    assert_eq!(
        r.message,
        "Rate limited: (no token) already has 1 call(s) running, the most allowed at once; retry \
         when one ends."
    );
    assert_eq!(r.retry_after, None, "no time to tell: when a call ends");
    drop(held);
    assert!(admit(&quotas, &q, 0).await.is_ok());
}

#[tokio::test]
async fn each_caller_has_its_own_share_and_is_named_in_its_refusal() {
    let quotas = Quotas::default();
    let q = calls(1);
    let (alice, bob) = (caller("alice"), caller("bob"));
    let call = |who| quotas.admit(Some(who), "grep", (Some(&q), None), 0);
    assert!(call(&alice).await.is_ok());
    let r = refused(call(&alice).await);
    assert!(
        r.message
            .starts_with(&format!("Rate limited: {alice} may start")),
        "{}",
        r.message
    );
    assert!(call(&bob).await.is_ok(), "alice's calls are not bob's");
}

#[tokio::test]
async fn a_tools_quota_counts_each_tool_apart() {
    let quotas = Quotas::default();
    let q = calls(1);
    let call = |tool| quotas.admit(None, tool, (None, Some(&q)), 0);
    assert!(call("grep").await.is_ok());
    let r = refused(call("grep").await);
    assert!(
        r.message
            .contains("(no token) may start 1 call(s) of 'grep' per hour (bursts of 1)"),
        "{}",
        r.message
    );
    assert!(call("read").await.is_ok());
}

#[tokio::test]
async fn a_refusal_by_one_quota_takes_nothing_from_the_other() {
    let quotas = Quotas::default();
    let (mine, tools) = (calls(2), at_once(1));
    let call = || quotas.admit(None, "grep", (Some(&mine), Some(&tools)), 0);
    let first = call().await.ok().unwrap();
    let r = refused(call().await);
    assert!(r.message.contains("running"), "{}", r.message);
    drop(first);
    // The refused call took no call of the caller's two: one is left.
    assert!(call().await.is_ok());
    assert!(
        refused(call().await)
            .message
            .contains("may start 2 call(s) per hour")
    );
}

#[tokio::test]
async fn a_call_reserves_its_fuel_limit_or_what_is_left_and_never_more_than_the_budget() {
    let quotas = Quotas::default();
    let q = fuel(1_000);
    let first = admit(&quotas, &q, 600).await.ok().unwrap();
    assert_eq!(first.fuel(), Some(600));
    let second = admit(&quotas, &q, 600).await.ok().unwrap();
    assert_eq!(second.fuel(), Some(400), "what is left, not its limit");
    let r = refused(admit(&quotas, &q, 600).await);
    assert!(
        r.message
            .starts_with("Rate limited: (no token) used its fuel budget (1000 per hour); retry in"),
        "{}",
        r.message
    );
    assert!(r.retry_after.is_some());
}

#[tokio::test]
async fn unused_fuel_goes_back_when_the_call_settles() {
    let quotas = Quotas::default();
    let q = fuel(1_000);
    let mut first = admit(&quotas, &q, 1_000).await.ok().unwrap();
    first.settle(300);
    assert_eq!(first.fuel(), None, "settled once");
    drop(first);
    let second = admit(&quotas, &q, 1_000).await.ok().unwrap();
    assert_eq!(
        second.fuel(),
        Some(700),
        "the 700 left unused came back, and no more"
    );
}

#[tokio::test]
async fn a_call_that_never_ran_gives_its_whole_reservation_back_when_dropped() {
    let quotas = Quotas::default();
    let q = fuel(1_000);
    drop(admit(&quotas, &q, 1_000).await.ok().unwrap());
    let again = admit(&quotas, &q, 1_000).await.ok().unwrap();
    assert_eq!(again.fuel(), Some(1_000));
}

#[tokio::test]
async fn a_call_that_used_all_it_reserved_gives_nothing_back() {
    let quotas = Quotas::default();
    let q = fuel(1_000);
    let mut first = admit(&quotas, &q, 1_000).await.ok().unwrap();
    first.settle(1_000);
    drop(first);
    assert!(admit(&quotas, &q, 1).await.is_err(), "the budget is spent");
}

#[tokio::test]
async fn a_call_under_two_fuel_budgets_reserves_the_smaller_share_from_both() {
    let quotas = Quotas::default();
    let (mine, tools) = (fuel(1_000), fuel(300));
    let call = |f| quotas.admit(None, "grep", (Some(&mine), Some(&tools)), f);
    let mut first = call(500).await.ok().unwrap();
    assert_eq!(first.fuel(), Some(300));
    first.settle(100);
    drop(first);
    // Both budgets got 200 back: the tool's has 200, the caller's 900; the smaller is reserved.
    let second = call(500).await.ok().unwrap();
    assert_eq!(second.fuel(), Some(200));
    // The caller's own budget alone, for a call of a tool without a quota: 700 left.
    let other = quotas.admit(None, "read", (Some(&mine), None), 1_000).await;
    assert_eq!(other.ok().unwrap().fuel(), Some(700));
}

#[tokio::test(start_paused = true)]
async fn a_shared_ledger_enforces_one_budget_across_daemons() {
    let ledger = Arc::new(FakeLedger::default());
    let (one, two) = (Quotas::default(), Quotas::default());
    one.share(ledger.clone());
    two.share(ledger.clone());
    let q = at_once(1);
    let held = admit(&one, &q, 0).await.ok().unwrap();
    assert!(matches!(held.by, Keeper::Fleet(_)), "kept by the ledger");
    assert!(
        refused(admit(&two, &q, 0).await)
            .message
            .contains("running"),
        "the other daemon's call counts"
    );
    drop(held);
    background().await;
    assert!(
        admit(&one, &q, 0).await.is_ok(),
        "its place is kept for its daemon's next call"
    );
    tokio::time::advance(HOLD * 2).await;
    background().await;
    assert!(
        admit(&two, &q, 0).await.is_ok(),
        "its end was counted fleet-wide once the hold passed"
    );
}

#[tokio::test]
async fn fuel_left_unused_goes_back_to_the_fleets_ledger() {
    let ledger = Arc::new(FakeLedger::default());
    let (one, two) = (Quotas::default(), Quotas::default());
    one.share(ledger.clone());
    two.share(ledger.clone());
    let q = fuel(1_000);
    let mut first = admit(&one, &q, 1_000).await.ok().unwrap();
    assert_eq!(first.fuel(), Some(1_000));
    assert!(
        admit(&two, &q, 1_000).await.is_err(),
        "all of it is reserved"
    );
    first.settle(250);
    background().await;
    assert_eq!(admit(&two, &q, 1_000).await.ok().unwrap().fuel(), Some(750));
}

#[tokio::test]
async fn while_the_ledger_is_down_each_daemon_enforces_the_quota_alone() {
    let ledger = Arc::new(FakeLedger::default());
    ledger.down.store(true, Ordering::Release);
    let quotas = Quotas::default();
    quotas.share(ledger.clone());
    let q = at_once(1);
    let held = admit(&quotas, &q, 0).await.ok().unwrap();
    assert!(matches!(held.by, Keeper::Local(_)), "kept by this daemon");
    assert!(
        admit(&quotas, &q, 0).await.is_err(),
        "still enforced, by this daemon"
    );
    drop(held);
    assert!(admit(&quotas, &q, 0).await.is_ok());
}

#[test]
fn a_window_is_named_as_a_person_reads_it() {
    let rate = |s| Rate {
        amount: 1,
        per: Duration::from_secs(s),
        burst: 1,
    };
    assert_eq!(window(&rate(1)), "second");
    assert_eq!(window(&rate(60)), "minute");
    assert_eq!(window(&rate(3600)), "hour");
    assert_eq!(window(&rate(90)), "90 s");
}

#[test]
fn ledger_keys_cannot_be_confused_whatever_the_names_hold() {
    let key = |who: &str, tool: Option<&str>| Key {
        who: who.into(),
        tool: tool.map(str::to_owned),
    };
    for (one, other) in [
        (key("a\",\"b", None), key("a", Some("b"))),
        (key("a:b", Some("c")), key("a", Some("b:c"))),
        (key("a", None), key("a", Some(""))),
    ] {
        assert_ne!(
            one.ledger("calls"),
            other.ledger("calls"),
            "{one:?} {other:?}"
        );
    }
    assert_ne!(
        key("a", None).ledger("calls"),
        key("a", None).ledger("fuel")
    );
}
