//! The fleet's quota ledger against a real PostgreSQL: places for calls at once are leased in
//! blocks and never past the limit, also when many daemons lease at once; a daemon gives back
//! only what it holds; a silent daemon's places are freed by the sweep; and the rows of idle, full
//! buckets are swept while a bucket in use keeps its row.

use std::sync::Arc;
use std::time::Duration;

use toolhost::exec::Ledger;
use toolhost_config::config::StateStore;
use toolhost_gate::quota::Rate;

use crate::services::Postgres;

const PLACES: &str = r#"["running","someone",null]"#;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn places_are_leased_in_blocks_within_the_limit_and_idle_rows_are_swept() {
    let Some(pg) = Postgres::start("ledger") else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = toolhost::state::open(&StateStore::Postgres {
            url: pg.url.clone(),
            ca_file: None,
        })
        .await
        .unwrap();
        let ledger = |daemon: &str| store.ledger(daemon).expect("PostgreSQL keeps a ledger");
        let (a, b) = (ledger("a"), ledger("b"));
        let held = |daemon: &str| {
            pg.psql(&format!(
                "SELECT COALESCE(SUM(running), 0) FROM quota_running WHERE daemon = '{daemon}'"
            ))
            .trim()
            .to_owned()
        };
        let total = || {
            pg.psql(&format!(
                "SELECT running FROM quota_buckets WHERE key = '{PLACES}'"
            ))
            .trim()
            .to_owned()
        };

        assert_eq!(a.enter(PLACES, 3, 2).await.unwrap(), 2);
        assert_eq!(
            b.enter(PLACES, 3, 2).await.unwrap(),
            1,
            "only as many as keep the fleet at its limit"
        );
        assert_eq!(b.enter(PLACES, 3, 2).await.unwrap(), 0, "none left");
        b.leave(PLACES, 5).await.unwrap();
        assert_eq!(
            (held("a"), held("b"), total()),
            ("2".into(), "1".into(), "3".into()),
            "giving back more than it holds gives back nothing"
        );
        a.leave(PLACES, 2).await.unwrap();
        assert_eq!(b.enter(PLACES, 3, 5).await.unwrap(), 2);
        b.leave(PLACES, 3).await.unwrap();
        assert_eq!((held("b"), total()), ("0".into(), "0".into()));

        // Eight daemons, 20 leases each, all at once: never more than the limit leased, and the
        // whole limit leased before any lease gets nothing.
        let mut leases = tokio::task::JoinSet::new();
        for d in 0..8 {
            for i in 0..20u32 {
                let l: Arc<dyn Ledger> = ledger(&format!("d{d}"));
                leases.spawn(async move { l.enter(PLACES, 50, 1 + i % 3).await.unwrap() });
            }
        }
        let got: u32 = leases.join_all().await.into_iter().sum();
        assert_eq!(got, 50, "every place leased once");
        assert_eq!(total(), "50");
        let per_daemon = pg.psql("SELECT SUM(running) FROM quota_running");
        assert_eq!(per_daemon.trim(), "50", "each daemon's count adds up");

        // Daemons d1..d7 fall silent (d0 beats): the sweep frees their places.
        store.heartbeat("d0", now_ms()).await.unwrap();
        let d0 = held("d0");
        store.sweep(now_ms(), now_ms() - 60_000, "a").await.unwrap();
        assert_eq!(total(), d0, "only the beating daemon's places remain");

        // A bucket that refills within the test, used once, is full again soon: its row goes,
        // as do the rows of places no longer held; a bucket still short of its burst stays.
        let fast = Rate {
            amount: 1000,
            per: Duration::from_secs(1),
            burst: 5,
        };
        let slow = Rate {
            amount: 1,
            per: Duration::from_secs(3600),
            burst: 5,
        };
        assert_eq!(a.take("fast", &fast, 2).await.unwrap().got, 2);
        assert_eq!(a.take("slow", &slow, 2).await.unwrap().got, 2);
        let d0_ledger = ledger("d0");
        let d0_places: u32 = d0.parse().unwrap();
        d0_ledger.leave(PLACES, d0_places).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        store.heartbeat("a", now_ms()).await.unwrap();
        store.sweep(now_ms(), now_ms() - 60_000, "a").await.unwrap();
        let keys = pg.psql("SELECT key FROM quota_buckets ORDER BY key");
        assert_eq!(keys.trim(), "slow", "{keys}");
        let rows = pg.psql("SELECT count(*) FROM quota_running");
        assert_eq!(rows.trim(), "0", "{rows}");
        // A swept bucket starts full again, as it would have been.
        assert_eq!(a.take("fast", &fast, 9).await.unwrap().got, 5);
    });
}
