//! SPARQL queries as an organisation's user asks them, and their rows.

use reqwest::StatusCode;
use serde_json::Value;

use super::{json_body, Session, TestNode, SPARQL};

pub const PREFIXES: &str = "PREFIX dsn: <https://w3id.org/dataspace-node/ns#> \
                        PREFIX unece: <https://vocabulary.uncefact.org/> ";

/// A five-way cross product of every readable triple: runs into any time limit.
pub const EXPENSIVE: &str =
    "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o }";

/// `GET` of the SPARQL endpoint with `q` and `extra` parameters.
pub async fn query(
    node: &TestNode,
    who: &Session,
    q: &str,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut params = vec![("query", q)];
    params.extend_from_slice(extra);
    node.client
        .get(node.url(SPARQL))
        .query(&params)
        .header("x-api-key", &who.account.api_key)
        .bearer_auth(&who.token)
        .send()
        .await
        .unwrap()
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
