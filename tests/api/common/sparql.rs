//! SPARQL queries as an organisation's user asks them, and their rows.

use reqwest::StatusCode;
use serde_json::Value;

use super::{json_body, Session, TestNode, SPARQL};

pub const PREFIXES: &str = "PREFIX dsn: <https://w3id.org/dataspace-node/ns#> \
                        PREFIX unece: <https://vocabulary.uncefact.org/> ";

/// A five-way cross product of every readable triple: runs into any time limit.
pub const EXPENSIVE: &str =
    "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o }";

/// `GET` of the SPARQL endpoint with `q` and `extra` parameters. On a node with a replica,
/// once the replica has every commit, and an answer must come from the replica.
pub async fn query(
    node: &TestNode,
    who: &Session,
    q: &str,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let replicated = node.config.replica.replica_query_url.is_some();
    if replicated {
        caught_up(node, who).await;
    }
    let mut params = vec![("query", q)];
    params.extend_from_slice(extra);
    let r = node
        .client
        .get(node.url(SPARQL))
        .query(&params)
        .header("x-api-key", &who.account.api_key)
        .bearer_auth(&who.token)
        .send()
        .await
        .unwrap();
    if replicated && r.status() == StatusCode::OK && replica_alike(q) {
        assert_eq!(r.headers()["sparql-source"], "replica", "{q}");
    }
    r
}

/// Whether the node sends `q` to its replica: only queries the replica computes as the
/// store does (`tests/api/replica_corpus.rs` compares the two on every form).
fn replica_alike(q: &str) -> bool {
    dataspace_node::sparql::Sparql::parse(q)
        .is_ok_and(|p| dataspace_node::sparql::replica_answers_alike(&p))
}

/// Waits until the node's replica has every commit (`Replica-Lag-Ms: 0`).
pub async fn caught_up(node: &TestNode, who: &Session) {
    let started = std::time::Instant::now();
    loop {
        let r = node
            .client
            .get(node.url(SPARQL))
            .query(&[("query", "ASK {}")])
            .header("x-api-key", &who.account.api_key)
            .bearer_auth(&who.token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let lag = r.headers()["replica-lag-ms"].to_str().unwrap().to_owned();
        if lag == "0" && r.headers()["sparql-source"] == "replica" {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the replica did not catch up (lag {lag} ms)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `q` asked for with one `Accept`.
pub async fn query_as(node: &TestNode, who: &Session, q: &str, accept: &str) -> reqwest::Response {
    node.client
        .get(node.url(SPARQL))
        .query(&[("query", q)])
        .header("x-api-key", &who.account.api_key)
        .bearer_auth(&who.token)
        .header("accept", accept)
        .send()
        .await
        .unwrap()
}

/// SELECT results (SPARQL JSON) as rows of variable → value.
pub async fn rows(node: &TestNode, who: &Session, q: &str, extra: &[(&str, &str)]) -> Vec<Value> {
    let r = query(node, who, &format!("{PREFIXES}{q}"), extra).await;
    assert_eq!(r.status(), StatusCode::OK, "{q}");
    assert_eq!(
        r.headers()["content-type"],
        "application/sparql-results+json"
    );
    let body = json_body(r).await;
    body["results"]["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let mut row = serde_json::Map::new();
            for (k, v) in b.as_object().unwrap() {
                row.insert(k.clone(), v["value"].clone());
            }
            Value::Object(row)
        })
        .collect()
}
