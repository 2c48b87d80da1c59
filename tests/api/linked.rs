//! Linked-data output of a consignment: JSON-LD compacted against the D23B context, Turtle,
//! N-Triples, N-Quads, TriG — one graph, exactly the stored triples the caller may read.

use std::collections::BTreeSet;

use dataspace_node::jsonld::Expander;
use oxigraph::io::{RdfFormat, RdfParser};
use oxigraph::model::dataset::CanonicalizationAlgorithm;
use oxigraph::model::{Graph, GraphName, NamedNode, NamedOrBlankNode, TermRef, Triple};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::*;

const D23B: &str = "https://vocabulary.uncefact.org/unece-context-D23B.jsonld";
const DSN: &str = "https://w3id.org/dataspace-node/ns#";

async fn get_as(
    node: &TestNode,
    who: &Session,
    path: &str,
    accept: Option<&str>,
) -> reqwest::Response {
    let mut request = node
        .client
        .get(node.url(path))
        .header("x-api-key", &who.account.api_key)
        .bearer_auth(&who.token);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    request.send().await.unwrap()
}

fn view_path(id: &str, scope: &str) -> String {
    format!("/supply-chain/data-space/consignments/{id}?scope={scope}")
}

fn canonical(triples: impl IntoIterator<Item = Triple>) -> Graph {
    let mut g: Graph = triples.into_iter().collect();
    g.canonicalize(CanonicalizationAlgorithm::Unstable);
    g
}

fn parse(format: RdfFormat, bytes: &[u8]) -> (Graph, BTreeSet<String>) {
    let mut graphs = BTreeSet::new();
    let triples: Vec<Triple> = RdfParser::from_format(format)
        .for_slice(bytes)
        .map(|q| {
            let q = q.unwrap();
            if let GraphName::NamedNode(g) = &q.graph_name {
                graphs.insert(g.as_str().to_owned());
            }
            Triple::new(q.subject, q.predicate, q.object)
        })
        .collect();
    (canonical(triples), graphs)
}

/// The JSON-LD expanded by the node's own processor with the shipped contexts.
fn expand(doc: &Value) -> Graph {
    let contexts = dataspace_node::jsonld::load_contexts().unwrap();
    let mut e = Expander::new(&contexts).with_included();
    e.document(doc.as_object().unwrap()).unwrap();
    let out = e.finish();
    assert!(
        out.dropped.is_empty(),
        "keys lost in expansion: {:?}",
        out.dropped
    );
    canonical(out.triples)
}

/// What the store holds in the caller's readable contribution graphs of one consignment,
/// read through the SPARQL endpoint in the same scope.
async fn stored(node: &TestNode, who: &Session, hex: &str, scope: &str) -> Graph {
    let q = format!(
        "CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH ?g {{ ?s ?p ?o }} \
         FILTER(STRSTARTS(STR(?g), \"urn:dataspace-node:contribution:{hex}:\")) }}"
    );
    let r = node
        .client
        .get(node.url("/supply-chain/data-space/sparql"))
        .query(&[("query", q.as_str()), ("scope", scope)])
        .header("x-api-key", &who.account.api_key)
        .bearer_auth(&who.token)
        .header("accept", "application/n-triples")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    parse(RdfFormat::NTriples, &r.bytes().await.unwrap()).0
}

struct Setup {
    node: TestNode,
    trader: Session,
    agency: Session,
    outsider: Session,
    hex: String,
}

/// The example consignment (entering Kenya) published by a trader, with an event and a
/// document of its own; the Kenyan agency it is routed to adds an event; an outsider.
async fn setup() -> Setup {
    let node = TestNode::start().await;
    let operator = Operator::new(&node).await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let agency = Session::new(&node, "officer@kra.example").await;
    let outsider = Session::new(&node, "someone@elsewhere.example").await;
    operator
        .policy(
            &node,
            rule(&node, agency.org(), "portOfEntryCountry", "eq", json!("KE")),
        )
        .await;
    trader.publish_example(&node, "create-consignment").await;
    trader.publish_example(&node, "add-event").await;
    let mut document = as_org(example("add-document"), trader.org());
    document["object"]["uRIId"] = json!("data:application/pdf;base64,JVBERi0xLjQK");
    assert_completed(&trader.publish(&node, &document).await);
    let mut inspection = as_org(example("add-event"), agency.org());
    inspection["object"]["typeCode"] = json!("tlip:inspection-completed");
    assert_completed(&agency.publish(&node, &inspection).await);
    let view = json_body(get_as(&node, &trader, &view_path(GLOBAL_ID, "own"), None).await).await;
    let hex = view["id"]
        .as_str()
        .unwrap()
        .trim_start_matches("aig:")
        .to_owned();
    Setup {
        node,
        trader,
        agency,
        outsider,
        hex,
    }
}

/// The representations of one view, each checked to be the same graph as the store's; the
/// JSON-LD document is returned.
async fn same_graph_everywhere(s: &Setup, who: &Session, scope: &str) -> (Value, BTreeSet<String>) {
    let path = view_path(GLOBAL_ID, scope);
    let expected = stored(&s.node, who, &s.hex, scope).await;
    assert!(expected.len() > 10, "{scope}: {}", expected.len());

    let r = get_as(&s.node, who, &path, Some("application/ld+json")).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/ld+json");
    assert_eq!(r.headers()["vary"], "accept");
    let doc = json_body(r).await;
    assert_eq!(
        expand(&doc),
        expected,
        "JSON-LD ({scope}) is not the stored graph:\n{doc:#}"
    );

    let mut graph_names = BTreeSet::new();
    for (media_type, format) in [
        ("text/turtle", RdfFormat::Turtle),
        ("application/n-triples", RdfFormat::NTriples),
        ("application/n-quads", RdfFormat::NQuads),
        ("application/trig", RdfFormat::TriG),
    ] {
        let r = get_as(&s.node, who, &path, Some(media_type)).await;
        assert_eq!(r.status(), StatusCode::OK, "{media_type}");
        assert_eq!(r.headers()["content-type"], media_type);
        let (graph, names) = parse(format, &r.bytes().await.unwrap());
        assert_eq!(
            graph, expected,
            "{media_type} ({scope}) is not the stored graph"
        );
        if format == RdfFormat::NQuads {
            graph_names = names;
        }
    }
    (doc, graph_names)
}

fn included_with<'a>(doc: &'a Value, property: &str) -> Vec<&'a Value> {
    doc["@included"]
        .as_array()
        .map(|items| items.iter().filter(|n| n.get(property).is_some()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_publisher_gets_json_ld_that_expands_to_exactly_the_stored_triples() {
    let s = setup().await;
    let (doc, graphs) = same_graph_everywhere(&s, &s.trader, "all").await;
    if std::env::var_os("SHOW_JSONLD").is_some() {
        eprintln!("{doc:#}");
    }
    // Consignment at the top, compacted against D23B, nested objects embedded.
    assert_eq!(doc["@context"], D23B);
    assert_eq!(
        doc["id"],
        format!("urn:dataspace-node:consignment:{}", s.hex)
    );
    assert_eq!(doc["type"], "Consignment");
    assert_eq!(doc["identifier"], "FWD-2026-000417");
    assert_eq!(
        doc["atArrivalTransportMovement"]["arrivalEvent"]["occurrenceLogisticsLocation"]["name"],
        "Mombasa",
        "{doc:#}"
    );
    assert!(doc["includedConsignment"].is_object() || doc["includedConsignment"].is_array());
    // Events of both organisations and the document are included, each once.
    let contributor = format!("{DSN}contributor");
    let events: Vec<&Value> = included_with(&doc, "typeCode")
        .into_iter()
        .filter(|n| n["type"] == "SupplyChainEvent")
        .collect();
    assert_eq!(events.len(), 2, "{doc:#}");
    let contributors: BTreeSet<&str> = events
        .iter()
        .map(|e| e[&contributor]["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        contributors,
        BTreeSet::from([s.trader.org(), s.agency.org()])
    );
    let documents = included_with(&doc, &format!("{DSN}integrity"));
    assert_eq!(documents.len(), 1, "{doc:#}");
    // N-Quads keep who contributed what: the trader's and the agency's contribution graphs.
    assert_eq!(graphs.len(), 2, "{graphs:?}");
    assert!(graphs
        .iter()
        .all(|g| g.starts_with(&format!("urn:dataspace-node:contribution:{}:", s.hex))));

    // `own` leaves the agency's event out, and is still exactly the stored graph.
    let (own, graphs) = same_graph_everywhere(&s, &s.trader, "own").await;
    assert_eq!(graphs.len(), 1);
    let events = included_with(&own, "typeCode")
        .into_iter()
        .filter(|n| n["type"] == "SupplyChainEvent")
        .count();
    assert_eq!(events, 1);
}

#[tokio::test]
async fn a_grantee_reads_the_shared_description_and_an_outsider_nothing() {
    let s = setup().await;
    let (shared, graphs) = same_graph_everywhere(&s, &s.agency, "shared").await;
    assert_eq!(shared["identifier"], "FWD-2026-000417");
    assert_eq!(graphs.len(), 1);
    let trader_key = dataspace_node::store::graphs::org_key(s.trader.org());
    assert!(
        graphs
            .iter()
            .all(|g| g.ends_with(&format!(":{trader_key}"))),
        "{graphs:?}"
    );
    // The agency's own scope holds only its event, with the consignment as a reference.
    let (own, _) = same_graph_everywhere(&s, &s.agency, "own").await;
    assert!(own.get("identifier").is_none(), "{own:#}");
    assert_eq!(
        own["id"],
        format!("urn:dataspace-node:consignment:{}", s.hex)
    );

    for accept in ["application/ld+json", "text/turtle", "application/n-quads"] {
        let r = get_as(
            &s.node,
            &s.outsider,
            &view_path(GLOBAL_ID, "all"),
            Some(accept),
        )
        .await;
        assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    }
}

#[tokio::test]
async fn the_rest_view_stays_the_default_and_unknown_types_are_406() {
    let s = setup().await;
    let path = view_path(GLOBAL_ID, "all");
    for accept in [
        None,
        Some("application/json"),
        Some("*/*"),
        Some("text/html, */*;q=0.1"),
    ] {
        let r = get_as(&s.node, &s.trader, &path, accept).await;
        assert_eq!(r.status(), StatusCode::OK, "{accept:?}");
        assert_eq!(
            r.headers()["content-type"],
            "application/json",
            "{accept:?}"
        );
        let body = json_body(r).await;
        assert!(body.get("@context").is_none());
        assert_eq!(body["id"], format!("aig:{}", s.hex));
        assert!(body["includedConsignments"].is_array());
    }
    let r = get_as(&s.node, &s.trader, &path, Some("image/png")).await;
    let body = assert_error(r, StatusCode::NOT_ACCEPTABLE, "GeneralError").await;
    assert!(body.to_string().contains("application/ld+json"), "{body}");
    // The same consignment by its identifier and by its aig id.
    for id in ["FWD-2026-000417".to_owned(), format!("aig:{}", s.hex)] {
        let r = get_as(
            &s.node,
            &s.trader,
            &view_path(&id, "all"),
            Some("application/ld+json"),
        )
        .await;
        assert_eq!(r.status(), StatusCode::OK, "{id}");
    }
}

/// The stored triples reachable from the consignment node, stopping at nodes the node minted
/// (what an `Update` replaces), the consignment node renamed so that two consignments compare.
fn description(stored: &Graph, root: &NamedNode) -> BTreeSet<String> {
    let same = NamedNode::new_unchecked("urn:test:consignment");
    let rename = |n: NamedOrBlankNode| {
        if n == root.clone().into() {
            same.clone().into()
        } else {
            n
        }
    };
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut stack = vec![NamedOrBlankNode::from(root.clone())];
    while let Some(node) = stack.pop() {
        if !seen.insert(node.to_string()) {
            continue;
        }
        for t in stored.triples_for_subject(node.as_ref()) {
            match t.object {
                TermRef::BlankNode(b) => stack.push(b.into_owned().into()),
                TermRef::NamedNode(n) if !n.as_str().starts_with("urn:dataspace-node:") => {
                    stack.push(n.into_owned().into())
                }
                _ => {}
            }
            let t = t.into_owned();
            out.push(Triple::new(rename(t.subject), t.predicate, t.object));
        }
    }
    canonical(out).iter().map(|t| t.to_string()).collect()
}

/// The stored description of `who`'s consignment [`GLOBAL_ID`].
async fn stored_description(node: &TestNode, who: &Session) -> BTreeSet<String> {
    let view = json_body(get_as(node, who, &view_path(GLOBAL_ID, "own"), None).await).await;
    let hex = view["id"]
        .as_str()
        .unwrap()
        .trim_start_matches("aig:")
        .to_owned();
    let root = NamedNode::new_unchecked(format!("urn:dataspace-node:consignment:{hex}"));
    description(&stored(node, who, &hex, "own").await, &root)
}

/// An `Update` keeps the stored nodes of what it does not change: afterwards the description
/// must be exactly what a `Create` of the same object stores, nothing of the one before left.
#[tokio::test]
async fn after_updates_the_stored_description_is_what_a_create_of_it_stores() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let create = as_org(example("create-consignment"), trader.org());
    assert_completed(&trader.publish(&node, &create).await);
    let original = create["object"].clone();
    // A nested field changed, a subtree dropped, a top-level literal changed; then back to the
    // original with a change deeper down; then the same object again.
    let mut first = original.clone();
    first["includedConsignment"][0]["consigneeParty"]["name"] = json!("Nairobi Roasters Holdings");
    first
        .as_object_mut()
        .unwrap()
        .remove("utilizedTransportEquipment");
    first["summaryDescription"] = json!("first update");
    let mut second = original.clone();
    second["atArrivalTransportMovement"]["arrivalEvent"][0]["occurrenceLogisticsLocation"]
        ["name"] = json!("Port of Mombasa");
    for (n, object) in [first, second.clone(), second].into_iter().enumerate() {
        let mut update = create.clone();
        update["type"] = json!("Update");
        update["object"] = object.clone();
        // The activity differs each time (an identical one would be a replay).
        update["summary"] = json!(format!("update {n}"));
        assert_completed(&trader.publish(&node, &update).await);
        // The same object created afresh by an organisation of its own.
        let other = Session::new(&node, &format!("other{n}@elsewhere.example")).await;
        let mut fresh = as_org(example("create-consignment"), other.org());
        fresh["object"] = object;
        assert_completed(&other.publish(&node, &fresh).await);
        let (got, want) = (
            stored_description(&node, &trader).await,
            stored_description(&node, &other).await,
        );
        assert!(want.len() > 30, "{want:#?}");
        let extra: Vec<_> = got.difference(&want).collect();
        let missing: Vec<_> = want.difference(&got).collect();
        assert!(
            extra.is_empty() && missing.is_empty(),
            "update {n}: stored but not sent {extra:#?}\nsent but not stored {missing:#?}"
        );
    }
}

#[tokio::test]
async fn a_description_that_chains_thousands_of_nodes_reads_back_whole() {
    // 3,000 nodes, each naming the next once, reachable from the consignment: the JSON-LD
    // read embedded each in the one before, and the node ran out of stack and stopped.
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let mut create = as_org(example("create-consignment"), trader.org());
    create["object"]["acceptanceEvent"] = json!("http://x.example/0");
    let chain: Vec<Value> = (0..3000)
        .map(|i| {
            json!({"@id": format!("http://x.example/{i}"),
                   "https://vocabulary.uncefact.org/acceptanceEvent":
                       {"@id": format!("http://x.example/{}", i + 1)}})
        })
        .collect();
    create["zzz"] = json!(chain);
    assert_completed(&trader.publish(&node, &create).await);
    let view = json_body(get_as(&node, &trader, &view_path(GLOBAL_ID, "own"), None).await).await;
    let hex = view["id"].as_str().unwrap().trim_start_matches("aig:");
    let expected = stored(&node, &trader, hex, "own").await;
    assert!(expected.len() > 3000, "{}", expected.len());
    let r = get_as(
        &node,
        &trader,
        &view_path(GLOBAL_ID, "own"),
        Some("application/ld+json"),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let doc = json_body(r).await;
    assert_eq!(expand(&doc), expected);
    assert!(doc["@included"].as_array().unwrap().len() > 10);
}
