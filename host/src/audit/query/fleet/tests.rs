//! Fleet pages over an index in memory, filled as daemons ship their logs: the file's filters
//! select the same records, pages go on from their cursors to the oldest, each record names its
//! daemon, and a cursor from elsewhere is refused.

use std::collections::HashSet;

use super::super::tests::record;
use super::*;
use crate::audit::index::Indexed;
use crate::audit::index::memory::Memory;
use crate::audit::line;
use crate::audit::query::Params;

fn indexed(i: usize) -> Indexed {
    let r = record(i);
    let line = String::from_utf8(line::end(&r, false).unwrap()).unwrap();
    Indexed {
        call_id: r.call_id,
        ts_ms: r.ts_start.timestamp_millis(),
        tool: r.tool,
        line: line.trim_end().to_owned(),
    }
}

async fn filled(n: usize) -> Memory {
    let index = Memory::of("d1");
    let all: Vec<Indexed> = (0..n).map(indexed).collect();
    index.add(&all).await.unwrap();
    index
}

fn request(query: &[(&str, &str)]) -> (Filter, Option<FleetCursor>, usize) {
    let mut params = Params::default();
    for (k, v) in query {
        let v = Some((*v).to_owned());
        match *k {
            "tool" => params.tool = v,
            "caller" => params.caller = v,
            "outcome" => params.outcome = v,
            "q" => params.q = v,
            "limit" => params.limit = v,
            "cursor" => params.cursor = v,
            _ => unreachable!(),
        }
    }
    fleet_request(&params).unwrap()
}

fn ids(page: &FleetPage) -> Vec<&str> {
    page.records
        .iter()
        .map(|r| r["call_id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn the_files_filters_select_the_same_records_newest_first() {
    let index = filled(40).await;
    let (filter, _, limit) = request(&[("tool", "grep"), ("caller", "alice")]);
    let page = fleet_page(&index, &filter, None, limit).await.unwrap();
    // grep is every 4th call from 2; alice every even one: 2, 6, 10, …
    assert_eq!(
        ids(&page),
        [
            "c38", "c34", "c30", "c26", "c22", "c18", "c14", "c10", "c6", "c2"
        ]
    );
    assert!(page.records.iter().all(|r| r["daemon"] == "d1"));
    assert_eq!(page.next, None, "the oldest was read");
    let (filter, _, limit) = request(&[("outcome", "timeout"), ("q", "C15")]);
    let page = fleet_page(&index, &filter, None, limit).await.unwrap();
    assert_eq!(ids(&page), ["c15"], "case ignored, as in the file");
}

#[tokio::test]
async fn pages_go_on_from_their_cursors_to_the_oldest() {
    let index = filled(25).await;
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let (filter, _, _) = request(&[]);
        let page = fleet_page(&index, &filter, cursor.take(), 10)
            .await
            .unwrap();
        seen.extend(ids(&page).into_iter().map(str::to_owned));
        match page.next {
            Some(next) => cursor = Some(next.parse().unwrap()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 25);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 25, "none twice");
    assert_eq!(seen.first().map(String::as_str), Some("c24"));
    let (_, cursor, _) = request(&[("cursor", "fleet~5~c5")]);
    assert!(cursor.is_some());
    let params = Params {
        cursor: Some("not-a-cursor".into()),
        ..Params::default()
    };
    assert!(matches!(
        fleet_request(&params),
        Err(ParamError::FleetCursor(_))
    ));
}
