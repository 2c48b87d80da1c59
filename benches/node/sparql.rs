//! The analysts' aggregate through `/sparql` and straight on the store.

use std::time::Instant;

use serde_json::Value;

use crate::client::Client;
use crate::stats::p50;

/// The analysts' aggregate of the benchmark: consignments per port of entry per month.
pub const AGGREGATE: &str = "PREFIX dsn: <https://w3id.org/dataspace-node/ns#>
SELECT ?port ?month (COUNT(?consignment) AS ?consignments) WHERE {
  ?summary dsn:summarizes ?consignment ;
           dsn:portOfEntryCode ?port ;
           dsn:dateOfEntry ?date .
  BIND(SUBSTR(STR(?date), 1, 7) AS ?month)
} GROUP BY ?port ?month ORDER BY ?port ?month";

/// The same aggregate written for a plain store where every graph is readable: the pattern in
/// one `GRAPH ?g` (no union default graph to merge).
const AGGREGATE_BY_GRAPH: &str = "PREFIX dsn: <https://w3id.org/dataspace-node/ns#>
SELECT ?port ?month (COUNT(?consignment) AS ?consignments) WHERE {
  GRAPH ?g {
    ?summary dsn:summarizes ?consignment ;
             dsn:portOfEntryCode ?port ;
             dsn:dateOfEntry ?date .
  }
  BIND(SUBSTR(STR(?date), 1, 7) AS ?month)
} GROUP BY ?port ?month ORDER BY ?port ?month";

/// The aggregate through `/sparql` as the publishing organisation (SPARQL JSON results).
pub async fn sparql_endpoint(client: &Client, base: &str, n: usize) -> (f64, usize) {
    let url = format!("{base}/supply-chain/data-space/sparql");
    let mut lat = Vec::new();
    let mut rows = 0;
    for _ in 0..n + 1 {
        let t = Instant::now();
        let r = client
            .http
            .get(&url)
            .query(&[("query", AGGREGATE)])
            .header("x-api-key", &client.key)
            .bearer_auth(&client.token)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap();
        assert_eq!(status, 200, "{body}");
        lat.push(t.elapsed());
        rows = body["results"]["bindings"].as_array().map_or(0, Vec::len);
    }
    lat.remove(0);
    (p50(lat), rows)
}

/// The same aggregate straight on the store after the node stopped: over the union of all
/// graphs as sent, and written with `GRAPH ?g`.
pub fn raw_sparql(data_dir: &std::path::Path, n: usize) -> Vec<f64> {
    use oxigraph::sparql::{QueryResults, SparqlEvaluator};
    let store = oxigraph::store::Store::open(data_dir.join("store")).unwrap();
    let mut out = Vec::new();
    for (_, query, union) in [
        ("union default graph", AGGREGATE, true),
        ("GRAPH ?g", AGGREGATE_BY_GRAPH, false),
    ] {
        let mut lat = Vec::new();
        let mut rows = 0;
        for _ in 0..n + 1 {
            let t = Instant::now();
            let mut prepared = SparqlEvaluator::new().parse_query(query).unwrap();
            if union {
                prepared.dataset_mut().set_default_graph_as_union();
            }
            let QueryResults::Solutions(solutions) = prepared.on_store(&store).execute().unwrap()
            else {
                panic!("not a SELECT");
            };
            rows = solutions.map(Result::unwrap).count();
            lat.push(t.elapsed());
        }
        lat.remove(0);
        assert!(rows > 0);
        out.push(p50(lat));
    }
    out
}
