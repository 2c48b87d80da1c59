//! Floors measured in the same run: raw Oxigraph inserts and an axum hello-world endpoint.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::EXAMPLE;
use crate::stats::p50;

/// The floor: the same number of quads (the example's expansion, padded to what the node
/// wrote) inserted straight into a fresh Oxigraph store, one transaction per activity.
pub fn raw_oxigraph(activities: usize, quads_per_activity: usize) -> Vec<Duration> {
    use dataspace_node::jsonld::Expander;
    use oxigraph::model::{GraphName, Literal, NamedNode, Quad};
    let contexts = dataspace_node::jsonld::load_contexts().unwrap();
    let doc: Value = serde_json::from_str(EXAMPLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = oxigraph::store::Store::open(dir.path()).unwrap();
    let mut out = Vec::with_capacity(activities);
    for i in 0..activities {
        let mut expander = Expander::new(&contexts);
        expander.document(doc.as_object().unwrap()).unwrap();
        let triples = expander.finish().triples;
        let graph = GraphName::NamedNode(NamedNode::new_unchecked(format!("urn:bench:graph:{i}")));
        let subject = NamedNode::new_unchecked(format!("urn:bench:summary:{i}"));
        let t = Instant::now();
        let mut tx = store.start_transaction().unwrap();
        for triple in &triples {
            tx.insert(&Quad::new(
                triple.subject.clone(),
                triple.predicate.clone(),
                triple.object.clone(),
                graph.clone(),
            ));
        }
        for k in triples.len()..quads_per_activity {
            tx.insert(&Quad::new(
                subject.clone(),
                NamedNode::new_unchecked(format!("urn:bench:p{k}")),
                Literal::new_simple_literal(format!("value {k} of {i}")),
                graph.clone(),
            ));
        }
        tx.commit().unwrap();
        out.push(t.elapsed());
    }
    out
}

/// The HTTP floor: an axum hello-world endpoint on its own runtime thread.
pub fn hello_world() -> (tokio::runtime::Runtime, String) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    rt.spawn(async move {
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        axum::serve(listener, app).await.unwrap();
    });
    (rt, url)
}

/// The median of `n` plain GETs of `url`.
pub async fn plain_gets(http: &reqwest::Client, url: &str, n: usize) -> f64 {
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = http.get(url).send().await.unwrap();
        assert!(r.status().is_success());
        r.bytes().await.unwrap();
        lat.push(t.elapsed());
    }
    p50(lat)
}
