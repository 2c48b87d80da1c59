//! List, view, events and documents reads through HTTP, and the same SPARQL straight on the
//! store.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::Client;
use crate::stats::{p50, percentile};
use dataspace_node::store::Query;

/// A GET as the benchmark organisation that must answer 200: its latency and body.
pub async fn timed_get(client: &Client, url: &str) -> (Duration, Value) {
    let t = Instant::now();
    let r = client
        .http
        .get(url)
        .header("x-api-key", &client.key)
        .bearer_auth(&client.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{url}");
    let body: Value = r.json().await.unwrap();
    (t.elapsed(), body)
}

/// p50 and p99 of `n` GETs of `url`.
async fn repeated(client: &Client, url: String, n: usize) -> (f64, f64) {
    let mut lat = Vec::new();
    for _ in 0..n {
        lat.push(timed_get(client, &url).await.0);
    }
    lat.sort();
    (percentile(&lat, 0.5), percentile(&lat, 0.99))
}

/// p50 of the reads through HTTP.
#[derive(Default)]
pub struct Reads {
    pub list_first: f64,
    pub list_deep: f64,
    /// Pages read once each (walking on from the deep cursor): rows not cached yet.
    pub list_cold: f64,
    /// Views of consignments read once each (the second row of each of those pages).
    pub view_once: f64,
    /// p99 of each read above, by name.
    pub p99: Vec<(&'static str, f64)>,
    pub view: f64,
    pub events: f64,
    pub documents: f64,
    /// The history of the newest consignment after three Updates (five revisions with its
    /// Create and document), and its view at the instant of the second Update.
    pub history: f64,
    pub view_at: f64,
    /// The first page's aig ids.
    pub ids: Vec<String>,
}

/// List pages (first and deep), view, events and documents through HTTP.
pub async fn reads(client: &Client, base: &str, n: usize) -> Reads {
    let list = format!("{base}/supply-chain/data-space/consignments?limit=50");
    let (_, first) = timed_get(client, &list).await;
    // A deep cursor: follow pages to about the middle of the list.
    let mut cursor = first["cursor"].as_str().map(str::to_owned);
    let total_pages = 20;
    for _ in 0..total_pages {
        let Some(c) = &cursor else { break };
        let (_, page) = timed_get(client, &format!("{list}&cursor={c}")).await;
        cursor = page["cursor"].as_str().map(str::to_owned);
    }
    let id = first["entities"][0]["aigId"].as_str().unwrap().to_owned();
    let mut out = Reads::default();
    let timed = |url: String| repeated(client, url, n);
    let (p50_first, p99) = timed(list.clone()).await;
    out.list_first = p50_first;
    out.p99.push(("list page (limit 50), first", p99));
    if let Some(c) = &cursor {
        let (p50_deep, p99) = timed(format!("{list}&cursor={c}")).await;
        out.list_deep = p50_deep;
        out.p99.push(("list page (limit 50), after 20 pages", p99));
    }
    let mut walk = cursor.clone();
    let mut cold = Vec::new();
    let mut once = Vec::new();
    for _ in 0..n.min(100) {
        let Some(c) = &walk else { break };
        let (t, page) = timed_get(client, &format!("{list}&cursor={c}")).await;
        cold.push(t);
        walk = page["cursor"].as_str().map(str::to_owned);
        if let Some(aig) = page["entities"][1]["aigId"].as_str() {
            once.push(format!("{base}/supply-chain/data-space/consignments/{aig}"));
        }
    }
    let mut viewed = Vec::new();
    for url in &once {
        viewed.push(timed_get(client, url).await.0);
    }
    out.view_once = if viewed.is_empty() {
        f64::NAN
    } else {
        p50(viewed)
    };
    if !cold.is_empty() {
        // The first is the deep page, read many times above.
        cold.remove(0);
    }
    out.list_cold = if cold.is_empty() { f64::NAN } else { p50(cold) };
    let one = format!("{base}/supply-chain/data-space/consignments/{id}");
    let (p50_view, p99) = timed(one.clone()).await;
    out.view = p50_view;
    out.p99.push(("view", p99));
    let (p50_events, p99) = timed(format!("{one}/events")).await;
    out.events = p50_events;
    out.p99.push(("events", p99));
    let (p50_documents, p99) = timed(format!("{one}/documents")).await;
    out.documents = p50_documents;
    out.p99.push(("documents", p99));
    let (p50_history, p50_view_at) =
        history(client, &first["entities"][0], &one, n, &mut out.p99).await;
    out.history = p50_history;
    out.view_at = p50_view_at;
    out.ids = first["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["aigId"].as_str().unwrap().to_owned())
        .collect();
    out
}

/// The same SPARQL the node runs for the first page (one summary query per row, same
/// records), straight on the store after the node stopped.
pub fn raw_page_query(data_dir: &std::path::Path, org: &str, aigs: &[String], n: usize) -> f64 {
    use dataspace_node::store::graphs;
    use oxigraph::model::Term;
    let store = dataspace_node::store::Store::open_read_only(&data_dir.join("store")).unwrap();
    let queries = dataspace_node::store::Queries::load().unwrap();
    let bindings: Vec<[(&str, Term); 4]> = aigs
        .iter()
        .map(|a| {
            let hex = a.strip_prefix("aig:").unwrap_or(a);
            [
                ("record", graphs::consignment(hex).into()),
                ("graph", graphs::contribution(hex, org).into()),
                ("summaryNode", graphs::summary(hex).into()),
                (
                    "status",
                    graphs::minted("status", &format!("{hex}:{}", graphs::org_key(org))).into(),
                ),
            ]
        })
        .collect();
    let mut lat = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        for b in &bindings {
            let rows = queries
                .select(&store, Query::ConsignmentSummary, b)
                .unwrap();
            assert_eq!(rows.len(), 1);
        }
        lat.push(t.elapsed());
    }
    p50(lat)
}

/// The store reads of a view (the index look-up by aig id, then the parts in the publisher's
/// graph) straight on the store, each timed on its own.
pub fn raw_view_queries(data_dir: &std::path::Path, org: &str, aig: &str, n: usize) -> (f64, f64) {
    use dataspace_node::store::parts as store_parts;
    use dataspace_node::store::{graphs, index};
    let store = dataspace_node::store::Store::open_read_only(&data_dir.join("store")).unwrap();
    let hex = aig.strip_prefix("aig:").unwrap_or(aig);
    let mut lookup = Vec::new();
    let mut parts = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let rows = index::by_any_id(&store, aig).unwrap();
        assert_eq!(rows.len(), 1);
        lookup.push(t.elapsed());
        let t = Instant::now();
        let rows = store_parts::parts(
            &store,
            &graphs::contribution(hex, org),
            &graphs::consignment(hex),
        )
        .unwrap();
        assert!(!rows.is_empty());
        parts.push(t.elapsed());
    }
    (p50(lookup), p50(parts))
}

/// Three Updates of the list's first consignment (`row`), then its history and its view at the
/// second Update, each read `n` times.
async fn history(
    client: &Client,
    row: &Value,
    view: &str,
    n: usize,
    p99: &mut Vec<(&'static str, f64)>,
) -> (f64, f64) {
    let (global_id, identifier) = (
        row["globalId"].as_str().unwrap(),
        row["identifier"].as_str().unwrap(),
    );
    for k in 0..3 {
        client.change("Update", global_id, identifier, k).await;
    }
    let (_, page) = timed_get(client, &format!("{view}/history")).await;
    let updates: Vec<&str> = page["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "UPDATE")
        .map(|e| e["date"].as_str().unwrap())
        .collect();
    assert!(updates.len() >= 3, "{page}");
    let at = updates[1].replace('+', "%2B");
    let timed = |url: String| repeated(client, url, n);
    let (p50_history, p99_history) = timed(format!("{view}/history")).await;
    p99.push(("history", p99_history));
    let (p50_at, p99_at) = timed(format!("{view}?at={at}")).await;
    p99.push(("view at an instant", p99_at));
    (p50_history, p50_at)
}
