//! The replica answers as the store would: the README's analyst queries and a corpus of
//! queries over SPARQL 1.1's functions, aggregates, paths, subqueries and negation, asked
//! through the node while a real Virtuoso replica serves, then again with the replica gone
//! (the store answers), and compared answer by answer. Whichever path a query takes — the
//! node sends the replica only what it computes alike — the answer is the same.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::*;
use crate::vocabulary::{readme_queries, world_on};

const P: &str = "PREFIX dsn: <https://w3id.org/dataspace-node/ns#> \
                 PREFIX unece: <https://vocabulary.uncefact.org/> \
                 PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> \
                 PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> ";

/// The corpus: (name, query). Each is compared as an ordered list when it has ORDER BY over
/// a total order, else as a multiset of rows.
const CORPUS: &[(&str, &str)] = &[
    ("count-all", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"),
    ("count-summaries", "SELECT (COUNT(?s) AS ?n) WHERE { ?s a dsn:ConsignmentSummary }"),
    ("count-distinct-ports", "SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?s dsn:portOfEntryCode ?c }"),
    ("per-port", "SELECT ?c (COUNT(?s) AS ?n) WHERE { ?s dsn:portOfEntryCode ?c } GROUP BY ?c ORDER BY ?c"),
    ("per-country", "SELECT ?k (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s dsn:portOfEntryCountry ?k } GROUP BY ?k HAVING (COUNT(DISTINCT ?s) > 0) ORDER BY DESC(?n) ?k"),
    ("min-max-identifier", "SELECT (MIN(?i) AS ?first) (MAX(?i) AS ?last) WHERE { ?s dsn:identifier ?i }"),
    ("sum-revisions", "SELECT (SUM(?r) AS ?total) WHERE { ?d dsn:documentRevision ?r }"),
    ("identifiers", "SELECT ?i WHERE { ?s a dsn:ConsignmentSummary ; dsn:identifier ?i } ORDER BY ?i"),
    ("distinct-types", "SELECT DISTINCT ?t WHERE { ?s a ?t } ORDER BY ?t"),
    ("reduced-codes", "SELECT REDUCED ?c WHERE { ?s dsn:portOfEntryCode ?c }"),
    ("limit-offset", "SELECT ?i WHERE { ?s dsn:identifier ?i } ORDER BY DESC(?i) LIMIT 3 OFFSET 1"),
    ("strstarts", "SELECT ?i WHERE { ?s dsn:identifier ?i FILTER(STRSTARTS(?i, 'FWD-2026-0005')) } ORDER BY ?i"),
    ("contains-ucase", "SELECT ?s (UCASE(?n) AS ?up) WHERE { ?s dsn:portOfEntryName ?n FILTER(CONTAINS(LCASE(?n), 'mba')) }"),
    ("strlen-substr", "SELECT ?i (STRLEN(?i) AS ?len) (SUBSTR(?i, 5, 4) AS ?year) WHERE { ?s dsn:identifier ?i } ORDER BY ?i"),
    ("concat", "SELECT (CONCAT(?c, '/', ?k) AS ?where) WHERE { ?s dsn:portOfEntryCode ?c ; dsn:portOfEntryCountry ?k } ORDER BY ?where"),
    ("strends", "SELECT ?i WHERE { ?s dsn:identifier ?i FILTER(STRENDS(?i, '1')) } ORDER BY ?i"),
    ("in-list", "SELECT ?s ?c WHERE { ?s dsn:portOfEntryCode ?c FILTER(?c IN ('KEMBA', 'TZDAR')) }"),
    ("not-in", "SELECT ?s ?c WHERE { ?s dsn:portOfEntryCode ?c FILTER(?c NOT IN ('KEMBA')) }"),
    ("if-coalesce", "SELECT ?s (IF(?c = 'KEMBA', 'kenya', 'other') AS ?where) (COALESCE(?x, 'none') AS ?opt) WHERE { ?s dsn:portOfEntryCode ?c OPTIONAL { ?s dsn:portOfExitCode ?x } }"),
    ("bound-optional", "SELECT ?s (BOUND(?x) AS ?hasExit) WHERE { ?s a dsn:ConsignmentSummary OPTIONAL { ?s dsn:portOfExitCode ?x } }"),
    ("lang-str", "SELECT ?s (STR(?t) AS ?code) (LANG(?t) AS ?l) WHERE { ?s unece:typeCode ?t }"),
    ("is-literal", "SELECT ?s WHERE { ?s dsn:identifier ?i FILTER(isLITERAL(?i)) }"),
    ("cast-string", "SELECT (xsd:string(?r) AS ?text) WHERE { ?d dsn:documentRevision ?r }"),
    ("cast-integer", "SELECT (xsd:integer('42') AS ?n) {}"),
    ("equality-sameterm", "SELECT ?s WHERE { ?s dsn:portOfEntryCode ?c FILTER(sameTerm(?c, 'KEMBA') || ?c = 'TZDAR') }"),
    ("comparison-strings", "SELECT ?i WHERE { ?s dsn:identifier ?i FILTER(?i >= 'FWD-2026-000501' && ?i < 'FWD-2026-000504') } ORDER BY ?i"),
    ("comparison-numbers", "SELECT ?d WHERE { ?d dsn:documentRevision ?r FILTER(?r >= 1) }"),
    ("optional-nested", "SELECT ?s ?c ?n WHERE { ?s a dsn:ConsignmentSummary OPTIONAL { ?s dsn:portOfEntryCode ?c OPTIONAL { ?s dsn:portOfEntryName ?n } } }"),
    ("union", "SELECT ?x WHERE { { ?s dsn:portOfEntryCode ?x } UNION { ?s dsn:portOfExitCode ?x } }"),
    ("minus", "SELECT ?s WHERE { ?s a dsn:ConsignmentSummary MINUS { ?s dsn:portOfEntryCode 'KEMBA' } }"),
    ("not-exists", "SELECT ?d WHERE { ?d a unece:Document FILTER NOT EXISTS { ?d dsn:supersededBy ?later } }"),
    ("exists", "SELECT ?c WHERE { ?e dsn:consignment ?c FILTER EXISTS { ?e unece:typeCode 'tlip:vessel-arrived' } }"),
    ("values", "SELECT ?c ?s WHERE { VALUES ?c { 'KEMBA' 'TZDAR' 'NLRTM' } OPTIONAL { ?s dsn:portOfEntryCode ?c } }"),
    ("values-multi", "SELECT ?c ?k WHERE { VALUES (?c ?k) { ('KEMBA' 'KE') ('TZDAR' UNDEF) } ?s dsn:portOfEntryCode ?c }"),
    ("bind", "SELECT ?s ?label WHERE { ?s dsn:portOfEntryCode ?c BIND(CONCAT('port ', ?c) AS ?label) }"),
    ("subquery", "SELECT ?c ?n WHERE { { SELECT ?c (COUNT(*) AS ?n) WHERE { ?s dsn:portOfEntryCode ?c } GROUP BY ?c } FILTER(?n >= 1) } ORDER BY ?c"),
    ("consignment-parts", "SELECT ?e ?c WHERE { ?e dsn:consignment ?c }"),
    ("parts-per-consignment", "SELECT ?c (COUNT(?e) AS ?n) WHERE { ?e dsn:consignment ?c } GROUP BY ?c"),
    ("subquery-join", "SELECT ?i ?events WHERE { ?sum dsn:summarizes ?c ; dsn:identifier ?i { SELECT ?c (COUNT(?e) AS ?events) WHERE { ?e dsn:consignment ?c } GROUP BY ?c } } ORDER BY ?i"),
    ("path-sequence", "SELECT ?s ?code WHERE { ?s unece:atArrivalTransportMovement/unece:arrivalEvent/unece:occurrenceLogisticsLocation/unece:identifier ?code }"),
    ("path-alternative", "SELECT ?s ?m WHERE { ?s unece:atArrivalTransportMovement|unece:atDepartureTransportMovement ?m }"),
    ("path-inverse", "SELECT ?sum ?c WHERE { ?c ^dsn:summarizes ?sum }"),
    ("graph-var", "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s a dsn:ConsignmentSummary } } GROUP BY ?g"),
    ("ask-yes", "ASK { ?s dsn:portOfEntryCode 'KEMBA' }"),
    ("ask-no", "ASK { ?s dsn:portOfEntryCode 'XXXXX' }"),
    ("event-order", "SELECT ?c (MIN(?at) AS ?first) (MAX(?at) AS ?last) (COUNT(?e) AS ?n) WHERE { ?e dsn:consignment ?c ; dsn:occurredAt ?at } GROUP BY ?c"),
    ("regex", "SELECT ?i WHERE { ?s dsn:identifier ?i FILTER(REGEX(?i, '^FWD-2026-0005[0-9]{2}$')) } ORDER BY ?i"),
    ("dates", "SELECT ?s (YEAR(?d) AS ?y) (MONTH(?d) AS ?m) WHERE { ?s dsn:occurredAt ?d }"),
    ("date-compare", "SELECT ?e WHERE { ?e dsn:occurredAt ?d FILTER(?d > '2026-12-25T00:00:00Z'^^xsd:dateTime) }"),
    ("arithmetic", "SELECT ?d ((?r * 2) + 1 AS ?x) (?r / 2 AS ?half) WHERE { ?d dsn:documentRevision ?r }"),
    ("avg", "SELECT (AVG(?r) AS ?mean) WHERE { ?d dsn:documentRevision ?r }"),
    ("group-concat", "SELECT (GROUP_CONCAT(DISTINCT ?c; SEPARATOR=',') AS ?all) WHERE { ?s dsn:portOfEntryCode ?c }"),
    ("exists-value", "SELECT ?d (EXISTS { ?d dsn:supersededBy ?x } AS ?old) WHERE { ?d a unece:Document }"),
    ("transitive", "SELECT ?s ?o WHERE { ?s (unece:atArrivalTransportMovement/unece:arrivalEvent)+ ?o }"),
    ("hash", "SELECT (SHA256(?i) AS ?h) WHERE { ?s dsn:identifier ?i }"),
    ("construct", "CONSTRUCT { ?s dsn:portOfEntryCode ?c } WHERE { ?s dsn:portOfEntryCode ?c }"),
];

/// An answer as compared: SELECT rows (each variable → its term), ASK's boolean, a
/// CONSTRUCT's sorted lines.
fn normal(body: &str, content_type: &str, ordered: bool) -> Value {
    if content_type.starts_with("application/n-triples") {
        let mut lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
        lines.sort();
        return json!(lines);
    }
    let v: Value = serde_json::from_str(body).unwrap();
    if let Some(b) = v.get("boolean") {
        return b.clone();
    }
    // Blank nodes compare by label: the replica's answers carry the store's own blank nodes.
    let mut rows: Vec<Value> = v["results"]["bindings"].as_array().unwrap().clone();
    if !ordered {
        rows.sort_by_key(|r| r.to_string());
    }
    json!(rows)
}

struct Asked {
    source: String,
    answer: Value,
}

async fn ask(node: &TestNode, who: &Session, q: &str, scope: &str) -> Asked {
    let construct = q.contains("CONSTRUCT");
    let r = node
        .client
        .get(node.url(SPARQL))
        .query(&[("query", q), ("scope", scope)])
        .header("x-api-key", &who.account.api_key)
        .header(
            "accept",
            if construct {
                "application/n-triples"
            } else {
                "application/sparql-results+json"
            },
        )
        .bearer_auth(&who.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{q}");
    let source = r.headers()["sparql-source"].to_str().unwrap().to_owned();
    let content_type = r.headers()["content-type"].to_str().unwrap().to_owned();
    let body = r.text().await.unwrap();
    let ordered = q.contains("ORDER BY");
    Asked {
        source,
        answer: normal(&body, &content_type, ordered),
    }
}

#[tokio::test]
async fn the_replica_answers_the_readme_queries_and_the_corpus_as_the_store_does() {
    let v = Virtuoso::start().await;
    let node = TestNode::start_with(|c| {
        v.configure(c);
        c.replica.replica_max_lag_ms = 0;
    })
    .await;
    let w = world_on(node).await;
    // More consignments of the benchmark's form, at several ports.
    for (n, port) in [
        (601, "KEMBA"),
        (602, "TZDAR"),
        (603, "NLRTM"),
        (604, "BRSSZ"),
        (605, "KEMBA"),
    ] {
        let activity = consignment_at(w.trader.org(), n, port, "2026-12-20T06:00:00Z");
        assert_completed(&w.trader.publish(&w.node, &activity).await);
    }
    let mut queries: Vec<(String, String)> = readme_queries();
    queries.extend(
        CORPUS
            .iter()
            .map(|(n, q)| (n.to_string(), format!("{P}{q}"))),
    );
    assert!(CORPUS.len() >= 40);
    let askers = [
        (&w.trader, "own"),
        (&w.trader, "all"),
        (&w.kenya, "all"),
        (&w.kenya, "shared"),
    ];

    caught_up(&w.node, &w.trader).await;
    caught_up(&w.node, &w.kenya).await;
    let mut first = Vec::new();
    for (name, q) in &queries {
        for (who, scope) in askers {
            first.push((name.clone(), scope, ask(&w.node, who, q, scope).await));
        }
    }
    let on_replica = first
        .iter()
        .filter(|(_, _, a)| a.source == "replica")
        .count();
    // A good part of the corpus is what the replica computes alike (the rest is there to
    // show the store takes what it does not).
    assert!(
        on_replica >= first.len() / 3,
        "{on_replica} of {} on the replica",
        first.len()
    );

    // The replica gone: the store answers everything, and the same.
    drop(v);
    let mut i = 0;
    let mut differ = Vec::new();
    for (name, q) in &queries {
        for (who, scope) in askers {
            let again = ask(&w.node, who, q, scope).await;
            assert_eq!(again.source, "store", "{name}");
            let (_, _, before) = &first[i];
            if before.answer != again.answer {
                differ.push(difference(
                    name,
                    scope,
                    &before.source,
                    &before.answer,
                    &again.answer,
                ));
            }
            i += 1;
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// What differs between two answers: the rows only one of them has (or both whole).
fn difference(name: &str, scope: &str, source: &str, first: &Value, store: &Value) -> String {
    let (Some(a), Some(b)) = (first.as_array(), store.as_array()) else {
        return format!("{name} ({scope}): the {source} {first}, the store {store}");
    };
    let only = |x: &Vec<Value>, y: &Vec<Value>| -> Vec<String> {
        x.iter()
            .filter(|r| !y.contains(r))
            .map(|r| r.to_string())
            .collect()
    };
    format!(
        "{name} ({scope}): {} rows from the {source}, {} from the store; only the {source}'s: {:?}; only the store's: {:?}",
        a.len(),
        b.len(),
        only(a, b),
        only(b, a)
    )
}
