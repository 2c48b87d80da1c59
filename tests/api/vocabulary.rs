//! The node's vocabulary (`vocab/dataspace-node.ttl`, `GET /ns`): served and parseable, and
//! defining every `dsn:` term a node writes, with domains and ranges that hold; and the
//! analyst queries of the README, each answering with the rows the published data implies.

use std::collections::{BTreeSet, HashMap, HashSet};

use oxigraph::io::{RdfFormat, RdfParser};
use oxigraph::model::vocab::{rdf, rdfs, xsd};
use oxigraph::model::{
    Graph, NamedNode, NamedNodeRef, NamedOrBlankNode, Quad, Term, TermRef, Triple,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::*;

const DSN: &str = "https://w3id.org/dataspace-node/ns#";
const PDF: &[u8] = b"%PDF-1.4\n%second revision\n%%EOF\n";

/// GET /ns with an `Accept`, parsed as the format it says it is.
async fn served(node: &TestNode, accept: &str, format: RdfFormat) -> Graph {
    let r = node
        .client
        .get(node.url("/ns"))
        .header("accept", accept)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{accept}");
    assert_eq!(r.headers()["content-type"], accept);
    let text = r.text().await.unwrap();
    RdfParser::from_format(format)
        .for_slice(&text)
        .map(|q| Triple::from(q.unwrap_or_else(|e| panic!("{accept}: {e}"))))
        .collect()
}

/// The `dsn:` terms a vocabulary defines (subjects with an `rdf:type`).
fn defined(vocabulary: &Graph) -> BTreeSet<String> {
    vocabulary
        .triples_for_predicate(rdf::TYPE)
        .filter_map(|t| match t.subject {
            oxigraph::model::NamedOrBlankNodeRef::NamedNode(n) if n.as_str().starts_with(DSN) => {
                Some(n.as_str().to_owned())
            }
            _ => None,
        })
        .collect()
}

/// One node with everything the node writes: four consignments (one updated to another
/// port), policies with every operand, events of the publisher and of a border agency, a
/// document in two revisions and an external one.
pub struct World {
    pub node: TestNode,
    pub trader: Session,
    pub kenya: Session,
}

/// Sets the scheduled departure of a consignment activity.
fn departing(activity: &mut Value, at: &str) {
    activity["object"]["atDepartureTransportMovement"]["departureEvent"][0]
        ["scheduledOccurrenceDateTime"] = json!(at);
}

async fn world() -> World {
    world_on(TestNode::start().await).await
}

/// The analyst queries' world on `node`: a trader, the Kenyan and Tanzanian agencies and a
/// terminal operator with their policies, consignments updated across ports, events and
/// document revisions.
pub async fn world_on(node: TestNode) -> World {
    let (operator, trader, kenya) = kenya_circle(&node).await;
    let tanzania = Session::new(&node, "officer@tra.example").await;
    let santos = Session::new(&node, "ops@santos-terminal.example").await;
    for policy in [
        rule(
            &node,
            tanzania.org(),
            "portOfEntryCountry",
            "isAnyOf",
            json!(["TZ", "UG"]),
        ),
        rule(&node, santos.org(), "portOfExit", "eq", json!("BRSSZ")),
        rule(&node, santos.org(), "portOfExitCountry", "eq", json!("BR")),
        rule(&node, kenya.org(), "portOfEntry", "eq", json!("KEMBA")),
    ] {
        operator.policy(&node, policy).await;
    }
    // Mombasa twice in ISO week 2026-W52; Dar es Salaam in 2026-W53 (1 January 2027) and,
    // after an update from Rotterdam, in 2026-W52 (Sunday 27 December).
    trader.publish_example(&node, "create-consignment").await; // KEMBA, 2026-12-24
    let mut created = consignment_at(trader.org(), 503, "NLRTM", "2026-12-28T06:00:00Z");
    for activity in [
        consignment_at(trader.org(), 501, "KEMBA", "2026-12-21T10:00:00Z"),
        consignment_at(trader.org(), 502, "TZDAR", "2027-01-01T00:00:00Z"),
    ] {
        assert_completed(&trader.publish(&node, &activity).await);
    }
    // 503 departs in 2099: its port changes before departure. 504 departed in January 2026,
    // so the update to Dar es Salaam (dated when it is applied) comes after its departure.
    let mut update = consignment_at(trader.org(), 503, "TZDAR", "2026-12-27T06:00:00Z");
    update["type"] = json!("Update");
    for activity in [&mut created, &mut update] {
        departing(activity, "2099-01-01T08:00:00Z");
    }
    assert_completed(&trader.publish(&node, &created).await);
    assert_completed(&trader.publish(&node, &update).await);
    let mut departed = consignment_at(trader.org(), 504, "KEMBA", "2026-02-01T06:00:00Z");
    departing(&mut departed, "2026-01-10T08:00:00Z");
    assert_completed(&trader.publish(&node, &departed).await);
    let mut moved = consignment_at(trader.org(), 504, "TZDAR", "2026-02-01T06:00:00Z");
    moved["type"] = json!("Update");
    departing(&mut moved, "2026-01-10T08:00:00Z");
    assert_completed(&trader.publish(&node, &moved).await);
    // Arrival by the trader, release by the Kenyan agency (a circle member) on FWD-2026-000417.
    trader.publish_example(&node, "add-event").await;
    let arrived = example_event(&trader, "tlip:vessel-arrived", "2026-12-24T07:30:00Z");
    assert_completed(&trader.publish(&node, &arrived).await);
    let released = example_event(&kenya, "tlip:customs-released", "2026-12-26T10:00:00Z");
    assert_completed(&kenya.publish(&node, &released).await);
    // The invoice, then a new revision of it, and an external bill of lading.
    trader.publish_example(&node, "add-document").await;
    let revised = add_document(
        trader.org(),
        &data_url("application/pdf", PDF),
        "INV-2026-0917",
    );
    assert_completed(&trader.publish(&node, &revised).await);
    let mut lading = add_document(trader.org(), "https://docs.example.com/bl.pdf", "BL-1");
    lading["object"]["documentTypeCode"] = json!("unece:DocumentCodeList#705");
    assert_completed(&trader.publish(&node, &lading).await);
    World {
        node,
        trader,
        kenya,
    }
}

#[tokio::test]
async fn the_vocabulary_is_served_and_defines_every_term_the_node_writes() {
    let w = world().await;
    // No credentials; Turtle by default, the other forms by Accept, all the same graph.
    let r = w.node.client.get(w.node.url("/ns")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "text/turtle");
    let turtle = served(&w.node, "text/turtle", RdfFormat::Turtle).await;
    let vocabulary = defined(&turtle);
    for (accept, format) in [
        ("application/n-triples", RdfFormat::NTriples),
        (
            "application/ld+json",
            RdfFormat::from_extension("jsonld").unwrap(),
        ),
    ] {
        let graph = served(&w.node, accept, format).await;
        assert_eq!(graph.len(), turtle.len(), "{accept}");
        assert_eq!(defined(&graph), vocabulary, "{accept}");
    }
    // The JSON-LD form is also the node's context, the third `@context` entry of a
    // DocumentRecord: it names every record field the other two contexts do not, with a term
    // of the vocabulary.
    let r = w
        .node
        .client
        .get(w.node.url("/ns"))
        .header("accept", "application/ld+json")
        .send()
        .await
        .unwrap();
    let doc = json_body(r).await;
    let context = doc["@context"].as_object().expect("a context object");
    for field in [
        "documentRevision",
        "blobStorageId",
        "integrity",
        "attestationId",
        "dateCreated",
        "dateModified",
        "dateDeleted",
        "organizationIdentity",
        "userIdentity",
    ] {
        let id = context[field]["@id"]
            .as_str()
            .unwrap_or_else(|| panic!("{field}"));
        let iri = format!("{DSN}{}", id.strip_prefix("dsn:").unwrap());
        assert!(
            vocabulary.contains(&iri),
            "{field} → {iri} is not in the vocabulary"
        );
    }
    let r = w
        .node
        .client
        .get(w.node.url("/ns"))
        .header("accept", "image/png")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);

    // Every dsn: predicate and class in what the trader and the agency can query.
    let used = "SELECT DISTINCT ?term WHERE { { ?s ?term ?o } UNION { ?s a ?term } \
                FILTER(STRSTARTS(STR(?term), STR(dsn:))) }";
    let mut readable = BTreeSet::new();
    for who in [&w.trader, &w.kenya] {
        for row in rows(&w.node, who, used, &[]).await {
            readable.insert(row["term"].as_str().unwrap().to_owned());
        }
    }
    assert_defined(
        &readable,
        &[
            "portOfEntryCode",
            "occurredAt",
            "supersededBy",
            "attests",
            "SystemEvent",
        ],
        &vocabulary,
    );

    // The whole store, bookkeeping included: every dsn: IRI in any position is defined, and
    // every domain and range the vocabulary states holds.
    let dir = w.node.stop().await;
    let store = oxigraph::store::Store::open(dir.path().join("store")).unwrap();
    let quads: Vec<Quad> = store.iter().map(|q| q.unwrap()).collect();
    let mut anywhere = BTreeSet::new();
    for q in &quads {
        let terms: [Option<&str>; 4] = [
            match &q.subject {
                NamedOrBlankNode::NamedNode(n) => Some(n.as_str()),
                _ => None,
            },
            Some(q.predicate.as_str()),
            match &q.object {
                Term::NamedNode(n) => Some(n.as_str()),
                _ => None,
            },
            match &q.graph_name {
                oxigraph::model::GraphName::NamedNode(n) => Some(n.as_str()),
                _ => None,
            },
        ];
        for t in terms.into_iter().flatten() {
            if t.starts_with(DSN) {
                anywhere.insert(t.to_owned());
            }
        }
    }
    assert_defined(
        &anywhere,
        &[
            "portOfEntry",
            "portOfExit",
            "portOfExitCountry",
            "portOfEntryCountry",
        ],
        &vocabulary,
    );
    check_domains_and_ranges(&turtle, &quads);
}

/// `used` has the `expected` terms (so the data exercised them), and each of its terms is
/// defined in the vocabulary.
fn assert_defined(used: &BTreeSet<String>, expected: &[&str], vocabulary: &BTreeSet<String>) {
    for term in expected {
        assert!(used.contains(&format!("{DSN}{term}")), "{term}: {used:?}");
    }
    let undefined: Vec<_> = used.difference(vocabulary).collect();
    assert!(undefined.is_empty(), "not in vocab/: {undefined:?}");
}

/// Every stated `rdfs:domain` is a type of each subject using the property, every class range
/// a type of each object, every datatype range the datatype of each literal.
fn check_domains_and_ranges(vocabulary: &Graph, quads: &[Quad]) {
    let as_ = |l: &str| format!("https://www.w3.org/ns/activitystreams#{l}");
    let odrl = |l: &str| format!("http://www.w3.org/ns/odrl/2/{l}");
    // The subclasses the data uses of the classes the vocabulary names.
    let superclass: HashMap<String, String> = [
        (as_("Create"), as_("Activity")),
        (as_("Update"), as_("Activity")),
        (as_("Add"), as_("Activity")),
        (odrl("Set"), odrl("Policy")),
    ]
    .into_iter()
    .collect();
    let mut types: HashMap<Term, HashSet<String>> = HashMap::new();
    for q in quads.iter().filter(|q| q.predicate == rdf::TYPE) {
        if let Term::NamedNode(class) = &q.object {
            let set = types.entry(q.subject.clone().into()).or_default();
            set.insert(class.as_str().to_owned());
            if let Some(sup) = superclass.get(class.as_str()) {
                set.insert(sup.clone());
            }
        }
    }
    let stated = |p: &NamedNode, which: NamedNodeRef<'_>| match vocabulary
        .object_for_subject_predicate(p, which)
    {
        Some(TermRef::NamedNode(n)) => Some(n.as_str().to_owned()),
        _ => None,
    };
    let datatypes: HashSet<String> = [
        xsd::STRING.as_str(),
        xsd::DATE_TIME.as_str(),
        xsd::INTEGER.as_str(),
        "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    let mut checked = 0;
    for q in quads
        .iter()
        .filter(|q| q.predicate.as_str().starts_with(DSN))
    {
        if let Some(domain) = stated(&q.predicate, rdfs::DOMAIN) {
            let subject: Term = q.subject.clone().into();
            assert!(
                types.get(&subject).is_some_and(|t| t.contains(&domain)),
                "{q}: subject is no {domain}"
            );
            checked += 1;
        }
        if let Some(range) = stated(&q.predicate, rdfs::RANGE) {
            match &q.object {
                Term::Literal(l) => {
                    assert!(datatypes.contains(&range), "{q}: literal for class {range}");
                    assert_eq!(l.datatype().as_str(), range, "{q}");
                }
                node => {
                    assert!(!datatypes.contains(&range), "{q}: node for {range}");
                    assert!(
                        types.get(node).is_some_and(|t| t.contains(&range)),
                        "{q}: object is no {range}"
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 200, "{checked} checks");
}

/// The README's analyst queries, by their `<!-- analyst-query: name -->` marker.
pub fn readme_queries() -> Vec<(String, String)> {
    let readme = include_str!("../../README.md");
    let marker = "<!-- analyst-query: ";
    let mut out = Vec::new();
    for part in readme.split(marker).skip(1) {
        let (name, rest) = part.split_once(" -->").expect("marker closes");
        let body = rest
            .trim_start()
            .strip_prefix("```sparql\n")
            .expect("a sparql block follows the marker");
        let (query, _) = body.split_once("```").expect("block closes");
        out.push((name.to_owned(), query.to_owned()));
    }
    out
}

async fn run(node: &TestNode, who: &Session, query: &str, scope: &str) -> Vec<Value> {
    rows(node, who, query, &[("scope", scope)]).await
}

#[tokio::test]
async fn the_readme_analyst_queries_answer_what_was_published() {
    let w = world().await;
    let queries = readme_queries();
    let names: Vec<&str> = queries.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "per-port-week",
            "dwell-time",
            "documents-per-type",
            "shared-per-publisher",
            "port-changed-after-departure"
        ]
    );
    for (name, query) in &queries {
        let answer = match name.as_str() {
            "per-port-week" => {
                let got = run(&w.node, &w.trader, query, "own").await;
                assert_eq!(
                    got,
                    vec![
                        json!({"portOfEntry": "TZDAR", "week": "2026-W05", "consignments": "1"}),
                        json!({"portOfEntry": "KEMBA", "week": "2026-W52", "consignments": "2"}),
                        json!({"portOfEntry": "TZDAR", "week": "2026-W52", "consignments": "1"}),
                        json!({"portOfEntry": "TZDAR", "week": "2026-W53", "consignments": "1"}),
                    ]
                );
                got
            }
            "dwell-time" => {
                // The agency (its own release, the trader's arrival) sees the same.
                let got = run(&w.node, &w.trader, query, "all").await;
                assert_eq!(
                    got,
                    vec![json!({
                        "consignment": "FWD-2026-000417",
                        "portOfEntry": "KEMBA",
                        "arrived": "2026-12-24T07:30:00Z",
                        "released": "2026-12-26T10:00:00Z",
                        "dwell": "P2DT2H30M",
                    })]
                );
                assert_eq!(run(&w.node, &w.kenya, query, "all").await, got);
                got
            }
            "documents-per-type" => {
                let got = run(&w.node, &w.trader, query, "own").await;
                assert_eq!(
                    got,
                    vec![
                        json!({"documentType": "https://vocabulary.uncefact.org/DocumentCodeList#380",
                               "documents": "1", "bytes": PDF.len().to_string()}),
                        json!({"documentType": "https://vocabulary.uncefact.org/DocumentCodeList#705",
                               "documents": "1", "bytes": "0"}),
                    ]
                );
                got
            }
            "shared-per-publisher" => {
                let got = run(&w.node, &w.kenya, query, "shared").await;
                assert_eq!(got.len(), 1, "{got:?}");
                assert_eq!(got[0]["publisher"], w.trader.org());
                // FWD-2026-000417 and -000501 enter at Mombasa; -000504 was routed when it
                // still did (a grant stays when the port changes).
                assert_eq!(got[0]["consignments"], "3");
                assert!(got[0]["lastUpdate"].as_str().unwrap().starts_with("20"));
                got
            }
            "port-changed-after-departure" => {
                let got = run(&w.node, &w.trader, query, "own").await;
                assert_eq!(got.len(), 1, "{got:?}");
                assert_eq!(got[0]["consignment"], "FWD-2026-000504");
                assert_eq!(got[0]["from"], "KEMBA");
                assert_eq!(got[0]["to"], "TZDAR");
                assert_eq!(got[0]["departure"], "2026-01-10T08:00:00Z");
                // The agency it was shared with asks the same of what it may read.
                assert_eq!(run(&w.node, &w.kenya, query, "shared").await, got);
                got
            }
            other => panic!("README query {other} has no check here"),
        };
        assert!(!answer.is_empty(), "{name}");
    }
}
