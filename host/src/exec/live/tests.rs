//! The console's live view: listing while a call runs, marking it waiting, cancelling it on an
//! operator's behalf, keeping the last ended calls, and telling followers.

use std::time::Duration;

use serde_json::json;

use super::*;

fn alice() -> Arc<Caller> {
    Arc::new(Caller {
        issuer: "https://id.example".into(),
        subject: "alice".into(),
        ..Caller::default()
    })
}

fn ended(call_id: &str) -> AuditRecord {
    AuditRecord::begin(call_id, "mcp", "grep", &json!({}))
}

#[test]
fn a_started_call_is_listed_as_admitted_until_its_guard_drops() {
    let live = Live::default();
    let alice = alice();
    let listed = live.start(
        "c1",
        ("grep", Some(&alice), "mcp", Some("batch-1")),
        CancellationToken::new(),
    );
    let running = live.running();
    assert_eq!(running.len(), 1);
    let view = &running[0];
    assert_eq!(view.call_id, "c1");
    assert_eq!(view.tool, "grep");
    assert_eq!(view.caller, alice.to_string());
    assert_eq!(view.origin, "mcp");
    assert_eq!(view.parent_id.as_deref(), Some("batch-1"));
    assert!(!view.waiting);
    drop(listed);
    assert!(live.running().is_empty());
}

#[test]
fn a_call_without_a_token_is_listed_as_having_none() {
    let live = Live::default();
    let _listed = live.start("c1", ("grep", None, "cli", None), CancellationToken::new());
    assert_eq!(live.running()[0].caller, "(no token)");
    assert_eq!(caller_name(Some(&alice())), alice().to_string());
}

#[test]
fn running_calls_are_listed_oldest_first() {
    let live = Live::default();
    let mut guards = Vec::new();
    for id in ["c1", "c2", "c3", "c4"] {
        guards.push(live.start(id, ("grep", None, "mcp", None), CancellationToken::new()));
        std::thread::sleep(Duration::from_millis(2));
    }
    let ids: Vec<_> = live.running().into_iter().map(|r| r.call_id).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
}

#[test]
fn a_call_is_marked_waiting_while_it_waits_for_an_approval() {
    let live = Live::default();
    let _listed = live.start("c1", ("grep", None, "mcp", None), CancellationToken::new());
    live.set_waiting("c1", true);
    assert!(live.running()[0].waiting);
    live.set_waiting("c1", false);
    assert!(!live.running()[0].waiting);
    live.set_waiting("gone", true);
    assert_eq!(live.running().len(), 1, "an unknown call is not listed");
}

#[test]
fn an_operator_cancels_a_running_call_and_its_guard_says_who() {
    let live = Live::default();
    let stop = CancellationToken::new();
    let listed = live.start("c1", ("grep", None, "mcp", None), stop.clone());
    assert_eq!(listed.cancelled_by(), None);
    live.cancel("c1", "ops@example").unwrap();
    assert!(stop.is_cancelled());
    assert_eq!(listed.cancelled_by(), Some("ops@example"));
    // A second operator is too late: the first one stopped it.
    live.cancel("c1", "other@example").unwrap();
    assert_eq!(listed.cancelled_by(), Some("ops@example"));
}

#[test]
fn a_call_that_is_not_running_cannot_be_cancelled() {
    let live = Live::default();
    let stop = CancellationToken::new();
    let listed = live.start("c1", ("grep", None, "mcp", None), stop.clone());
    let e = live.cancel("c2", "ops").unwrap_err();
    assert_eq!(e, NotRunning("c2".into()));
    assert_eq!(e.to_string(), "call c2 is not running");
    assert!(!stop.is_cancelled(), "another call's cancel stops nothing");
    drop(listed);
    assert_eq!(live.cancel("c1", "ops"), Err(NotRunning("c1".into())));
    assert!(!stop.is_cancelled());
}

#[test]
fn ended_calls_are_kept_newest_first_up_to_recent() {
    let live = Live::default();
    for i in 0..RECENT + 5 {
        live.end(&ended(&format!("c{i}")));
    }
    let recent = live.recent();
    assert_eq!(recent.len(), RECENT);
    assert_eq!(recent[0].call_id, format!("c{}", RECENT + 4));
    assert_eq!(recent[RECENT - 1].call_id, "c5");
    assert!(live.find("c4").is_none(), "the oldest went first");
    assert_eq!(live.find("c5").unwrap().call_id, "c5");
    assert!(live.find("nope").is_none());
}

#[test]
fn followers_see_each_call_start_and_end() {
    let live = Live::default();
    let mut events = live.subscribe();
    let listed = live.start("c1", ("grep", None, "mcp", None), CancellationToken::new());
    live.end(&ended("c1"));
    drop(listed);
    match events.try_recv().unwrap() {
        LiveEvent::Started(view) => {
            assert_eq!((view.call_id.as_str(), view.tool.as_str()), ("c1", "grep"))
        }
        other => panic!("expected Started, got {other:?}"),
    }
    match events.try_recv().unwrap() {
        LiveEvent::Ended(record) => assert_eq!(record.call_id, "c1"),
        other => panic!("expected Ended, got {other:?}"),
    }
    assert!(events.try_recv().is_err(), "nothing else");
}

#[test]
fn events_are_built_only_while_someone_follows() {
    let live = Live::default();
    live.publish(|| unreachable!("nobody follows"));
    let _listed = live.start("c1", ("grep", None, "mcp", None), CancellationToken::new());
    live.end(&ended("c1"));
    let events = live.subscribe();
    let mut built = false;
    live.publish(|| {
        built = true;
        LiveEvent::Ended(Arc::new(ended("c2")))
    });
    assert!(built);
    drop(events);
}
