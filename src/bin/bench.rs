//! Benchmark: starts a real node as a child process (temporary data dir, port 0), drives it
//! through HTTP and prints one table — inbox, reads, SPARQL, routing, memory, start-up, disk —
//! each figure next to a baseline measured in the same run (raw Oxigraph, raw SPARQL, an axum
//! hello-world endpoint), and writes the figures as JSON. `cargo run --release --bin bench --
//! --help`.

use std::time::{Duration, Instant};

use clap::Parser;
use dataspace_node::Config;
use serde_json::{json, Value};

#[derive(Parser)]
#[command(
    about = "One table of the node's figures through its HTTP API, each next to a baseline measured in the same run"
)]
struct Args {
    /// Creates posted one at a time (concurrency 1).
    #[arg(long, default_value_t = 2000)]
    sequential: usize,
    /// Creates posted by 16 concurrent clients.
    #[arg(long, default_value_t = 8000)]
    concurrent: usize,
    /// Concurrent clients for the second run.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Consignments in the store for the read measurements (loaded through HTTP; the inbox
    /// runs count towards it).
    #[arg(long, default_value_t = 0)]
    consignments: usize,
    /// Requests per read measurement.
    #[arg(long, default_value_t = 200)]
    reads: usize,
    /// Requests of the SPARQL aggregate (through the endpoint, and raw on the store); by
    /// default `--reads`, at most 20. Over 100,000 consignments each takes seconds.
    #[arg(long)]
    sparql_reads: Option<usize>,
    /// Sharing policies stored (through HTTP) after the reads, before a second Create run that
    /// measures routing. Two of them match the benchmark consignment (a KE border agency, the
    /// KEMBA terminal); the rest name other
    /// countries and UN/LOCODEs, as on a busy node. 0 skips the routing measurement.
    #[arg(long, default_value_t = 10_000)]
    policies: usize,
    /// How many of those policies match the benchmark consignment (0, 1 or 2).
    #[arg(long, default_value_t = 2)]
    matching: usize,
    /// Documents added (one at a time, each new content, as a `data:` URL) after the runs.
    #[arg(long, default_value_t = 0)]
    documents: usize,
    /// Size of each added document, in bytes.
    #[arg(long, default_value_t = 100_000)]
    document_bytes: usize,
    /// Updates and event `Add`s posted one at a time, and again by the concurrent clients.
    #[arg(long, default_value_t = 500)]
    changes: usize,
    /// Keep the node's data in this directory instead of a temporary one. When it already holds
    /// a loaded benchmark store (`bench-state.json`), the load is skipped and the reads,
    /// SPARQL, routing and memory are measured on it after a restart (the inbox runs only on a
    /// fresh store): load 100,000 consignments once, then measure as often as needed.
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
    /// Where the figures are written as JSON (to compare runs).
    #[arg(long, default_value = "bench-results.json")]
    json: std::path::PathBuf,
    /// Internal: run the node under test in this process (the benchmark starts itself as a
    /// child so that the node's memory and start-up are its own).
    #[arg(long, hide = true)]
    serve_node: Option<std::path::PathBuf>,
}

/// Ports of entry of the fill-up consignments.
const PORTS: &[&str] = &[
    "KEMBA", "TZDAR", "NLRTM", "SGSIN", "BEANR", "DEHAM", "CNSHA", "USNYC",
];

/// The analysts' aggregate of the benchmark: consignments per port of entry per month.
const AGGREGATE: &str = "PREFIX dsn: <https://w3id.org/dataspace-node/ns#>
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

const EXAMPLE: &str = include_str!("../../tests/fixtures/examples/create-consignment.json");
const ADD_DOCUMENT: &str = include_str!("../../tests/fixtures/examples/add-document.json");

struct Sample {
    latency: Duration,
    /// Statements the node wrote for the activity (the task's `result`).
    written: i64,
    /// parse, expand, shapes, store, route, fetch (ms), from Server-Timing.
    stages: [f64; 6],
}

fn stages(header: Option<&reqwest::header::HeaderValue>) -> [f64; 6] {
    let mut out = [0.0; 6];
    let Some(text) = header.and_then(|h| h.to_str().ok()) else {
        return out;
    };
    for part in text.split(',') {
        let (name, dur) = part.trim().split_once(";dur=").unwrap_or(("", "0"));
        let i = match name {
            "parse" => 0,
            "expand" => 1,
            "shapes" => 2,
            "store" => 3,
            "route" => 4,
            "fetch" => 5,
            _ => continue,
        };
        out[i] = dur.parse().unwrap_or(0.0);
    }
    out
}

struct Client {
    http: reqwest::Client,
    url: String,
    key: String,
    token: String,
    org: String,
}

impl Client {
    async fn create(&self, n: usize) -> Sample {
        self.create_with_id(n, &format!("urn:uuid:{}", uuid::Uuid::new_v4()))
            .await
    }

    async fn create_with_id(&self, n: usize, global_id: &str) -> Sample {
        self.post(&self.consignment(n, global_id)).await
    }

    fn consignment(&self, n: usize, global_id: &str) -> Value {
        let mut activity: Value = serde_json::from_str(EXAMPLE).unwrap();
        activity["actor"]["registeredId"]["@value"] = json!(self.org);
        activity["object"]["globalId"] = json!(global_id);
        activity["object"]["identifier"] =
            json!(format!("BENCH-{n}-{}", uuid::Uuid::new_v4().simple()));
        activity
    }

    /// A `Create` (or, with `kind` "Update", an update) of the consignment with these ids; the
    /// description carries `n` so that every update changes it.
    async fn change(&self, kind: &str, global_id: &str, identifier: &str, n: usize) -> Sample {
        let mut activity: Value = serde_json::from_str(EXAMPLE).unwrap();
        activity["type"] = json!(kind);
        activity["actor"]["registeredId"]["@value"] = json!(self.org);
        activity["object"]["globalId"] = json!(global_id);
        activity["object"]["identifier"] = json!(identifier);
        activity["object"]["summaryDescription"] = json!(format!("bench revision {n}"));
        self.post(&activity).await
    }

    /// An event `Add` to consignment `global_id`.
    async fn add_event(&self, global_id: &str, n: usize) -> Sample {
        let activity = json!({
            "@context": "https://www.w3.org/ns/activitystreams",
            "type": "Add",
            "actor": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld",
                      "type": "TradeParty",
                      "registeredId": {"@type": "https://ref.gs1.org/voc/OrganizationID_Type-DID", "@value": self.org}},
            "object": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld",
                       "type": "SupplyChainEvent", "typeCode": format!("bench:event-{n}"),
                       "occurrenceDateTime": "2026-12-24T10:00:00Z"},
            "target": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld",
                       "type": "Consignment", "globalId": global_id}
        });
        self.post(&activity).await
    }

    /// A consignment entering at one of a few ports on one of 365 days (the fill-up for the
    /// read measurements, so that aggregates have groups).
    /// The benchmark consignment with another port of arrival.
    async fn create_to_port(&self, n: usize, port: &str) -> Sample {
        let mut activity = self.consignment(n, &format!("urn:uuid:{}", uuid::Uuid::new_v4()));
        activity["object"]["atArrivalTransportMovement"]["arrivalEvent"][0]
            ["occurrenceLogisticsLocation"]["identifier"]["@value"] = json!(port);
        self.post(&activity).await
    }

    async fn create_varied(&self, n: usize) -> Sample {
        let mut activity = self.consignment(n, &format!("urn:uuid:{}", uuid::Uuid::new_v4()));
        let arrival = &mut activity["object"]["atArrivalTransportMovement"]["arrivalEvent"][0];
        arrival["occurrenceLogisticsLocation"]["identifier"]["@value"] =
            json!(PORTS[n % PORTS.len()]);
        let day = chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap()
            + chrono::Days::new((n % 365) as u64);
        arrival["scheduledOccurrenceDateTime"] = json!(format!("{day}T06:00:00Z"));
        self.post(&activity).await
    }

    /// Adds document `n` (fresh random bytes, a `data:` URL) to consignment `global_id`.
    async fn add_document(&self, n: usize, global_id: &str, size: usize) -> Sample {
        use base64::Engine;
        use rand::RngCore;
        let mut bytes = vec![0u8; size];
        rand::thread_rng().fill_bytes(&mut bytes);
        let mut activity: Value = serde_json::from_str(ADD_DOCUMENT).unwrap();
        activity["actor"]["registeredId"]["@value"] = json!(self.org);
        activity["target"]["globalId"] = json!(global_id);
        activity["object"]["identifier"] = json!(format!("DOC-{n}"));
        activity["object"]["uRIId"] = json!(format!(
            "data:application/pdf;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&bytes)
        ));
        self.post(&activity).await
    }

    async fn post(&self, activity: &Value) -> Sample {
        let body = serde_json::to_vec(activity).unwrap();
        let t = Instant::now();
        let r = self
            .http
            .post(&self.url)
            .header("x-api-key", &self.key)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("request");
        let status = r.status();
        let stages = stages(r.headers().get("server-timing"));
        let entry: Value = r.json().await.expect("entry");
        let latency = t.elapsed();
        assert!(status.is_success(), "{status} {entry}");
        assert_eq!(entry["status"], "completed", "{entry}");
        let written = entry["tasks"][0]["result"].as_i64().unwrap_or(0);
        Sample {
            latency,
            written,
            stages,
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

/// Throughput and latency of one inbox run.
struct Run {
    per_s: f64,
    p50: f64,
    p99: f64,
    /// Mean of routing inside the store stage (ms).
    route: f64,
}

fn run_of(samples: &[Sample], wall: Duration) -> Run {
    let mut lat: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
    lat.sort();
    let n = samples.len() as f64;
    let mean = |i: usize| samples.iter().map(|s| s.stages[i]).sum::<f64>() / n;
    Run {
        per_s: n / wall.as_secs_f64(),
        p50: percentile(&lat, 0.5),
        p99: percentile(&lat, 0.99),
        route: mean(4),
    }
}

/// The floor: the same number of quads (the example's expansion, padded to what the node
/// wrote) inserted straight into a fresh Oxigraph store, one transaction per activity.
fn raw_oxigraph(activities: usize, quads_per_activity: usize) -> Vec<Duration> {
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

async fn timed_get(client: &Client, url: &str) -> (Duration, Value) {
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

fn p50(mut lat: Vec<Duration>) -> f64 {
    lat.sort();
    percentile(&lat, 0.5)
}

/// p50 of the reads through HTTP.
#[derive(Default)]
struct Reads {
    list_first: f64,
    list_deep: f64,
    /// Pages read once each (walking on from the deep cursor): rows not cached yet.
    list_cold: f64,
    /// p99 of each read above, by name.
    p99: Vec<(&'static str, f64)>,
    view: f64,
    events: f64,
    documents: f64,
    /// The first page's aig ids.
    ids: Vec<String>,
}

/// List pages (first and deep), view, events and documents through HTTP.
async fn reads(client: &Client, base: &str, n: usize) -> Reads {
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
    let timed = |url: String| async move {
        let mut lat = Vec::new();
        for _ in 0..n {
            lat.push(timed_get(client, &url).await.0);
        }
        lat.sort();
        (percentile(&lat, 0.5), percentile(&lat, 0.99))
    };
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
    for _ in 0..n.min(100) {
        let Some(c) = &walk else { break };
        let (t, page) = timed_get(client, &format!("{list}&cursor={c}")).await;
        cold.push(t);
        walk = page["cursor"].as_str().map(str::to_owned);
    }
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
fn raw_page_query(data_dir: &std::path::Path, org: &str, aigs: &[String], n: usize) -> f64 {
    use dataspace_node::store::graphs;
    use oxigraph::model::Term;
    let store = dataspace_node::store::Store::open(&data_dir.join("store")).unwrap();
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
            let rows = queries.select(&store, "consignment_summary", b).unwrap();
            assert_eq!(rows.len(), 1);
        }
        lat.push(t.elapsed());
    }
    p50(lat)
}

/// The SPARQL of a view (look-up by aig id, then the parts of the publisher's graph) straight
/// on the store, each timed on its own.
fn raw_view_queries(data_dir: &std::path::Path, org: &str, aig: &str, n: usize) -> (f64, f64) {
    use dataspace_node::rdf::literal;
    use dataspace_node::store::graphs;
    let store = dataspace_node::store::Store::open(&data_dir.join("store")).unwrap();
    let queries = dataspace_node::store::Queries::load().unwrap();
    let hex = aig.strip_prefix("aig:").unwrap_or(aig);
    let mut lookup = Vec::new();
    let mut parts = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let rows = queries
            .select(&store, "consignment_by_any_id", &[("key", literal(aig))])
            .unwrap();
        assert_eq!(rows.len(), 1);
        lookup.push(t.elapsed());
        let t = Instant::now();
        let rows = queries
            .select(
                &store,
                "consignment_parts",
                &[
                    ("graph", graphs::contribution(hex, org).into()),
                    ("record", graphs::consignment(hex).into()),
                ],
            )
            .unwrap();
        assert!(!rows.is_empty());
        parts.push(t.elapsed());
    }
    (p50(lookup), p50(parts))
}

/// The aggregate through `/sparql` as the publishing organisation (SPARQL JSON results).
async fn sparql_endpoint(client: &Client, base: &str, n: usize) -> (f64, usize) {
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
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.unwrap();
        lat.push(t.elapsed());
        rows = body["results"]["bindings"].as_array().map_or(0, Vec::len);
    }
    lat.remove(0);
    (p50(lat), rows)
}

/// The same aggregate straight on the store after the node stopped: over the union of all
/// graphs as sent, and written with `GRAPH ?g`.
fn raw_sparql(data_dir: &std::path::Path, n: usize) -> Vec<f64> {
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

/// Valid ISO 3166 codes other than the benchmark consignment's KE (entry) and BR (exit).
const OTHER_COUNTRIES: &[&str] = &[
    "NL", "DE", "BE", "FR", "ES", "PT", "IT", "GR", "TR", "EG", "MA", "NG", "GH", "CI", "SN", "ZA",
    "TZ", "UG", "RW", "ET", "DJ", "SO", "MZ", "AO", "NA", "IN", "PK", "BD", "LK", "CN", "JP", "KR",
    "SG", "MY", "TH", "VN", "ID", "PH", "AU", "NZ", "US", "CA", "MX", "PA", "CO", "PE", "CL", "AR",
    "UY", "GB", "IE", "NO", "SE", "DK", "FI", "PL", "AE", "SA", "OM", "QA",
];

/// A new organisation and its first user, created with the operator key: the answer body.
async fn create_account(http: &reqwest::Client, base: &str, operator: &str, email: &str) -> Value {
    http.post(format!("{base}/authentication/login/create"))
        .header("x-api-key", operator)
        .json(&json!({"email": email, "password": "bench password"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Stores `n` policies through the API (operator key + session) for 50 assignee organisations.
async fn load_policies(
    client: &Client,
    base: &str,
    operator: &str,
    n: usize,
    matching: usize,
) -> f64 {
    let t = Instant::now();
    let mut orgs = Vec::new();
    // New organisations on every run (a kept data dir already has a previous run's).
    let run = uuid::Uuid::new_v4().simple().to_string();
    for i in 0..50 {
        let created = create_account(
            &client.http,
            base,
            operator,
            &format!("agency{i}-{}@bench.example", &run[..8]),
        )
        .await;
        orgs.push(created["organizationId"].as_str().unwrap().to_owned());
    }
    let target = format!("{base}/supply-chain/data-space/consignments");
    let letters = |i: usize| -> String {
        let a = b'A' + (i % 26) as u8;
        let b = b'A' + (i / 26 % 26) as u8;
        let c = b'A' + (i / 676 % 26) as u8;
        String::from_utf8(vec![a, b, c]).unwrap()
    };
    let policy = |i: usize| -> Value {
        let country = OTHER_COUNTRIES[i % OTHER_COUNTRIES.len()];
        let next = OTHER_COUNTRIES[(i + 7) % OTHER_COUNTRIES.len()];
        let (operand, operator, right) = match i {
            0 if matching > 0 => ("portOfEntryCountry", "eq", json!("KE")),
            1 if matching > 1 => ("portOfEntry", "eq", json!("KEMBA")),
            _ => match i % 4 {
                0 => ("portOfEntryCountry", "eq", json!(country)),
                1 => ("portOfExitCountry", "isAnyOf", json!([country, next])),
                2 => (
                    "portOfEntry",
                    "eq",
                    json!(format!("{country}{}", letters(i))),
                ),
                _ => (
                    "portOfExit",
                    "isAnyOf",
                    json!([
                        format!("{country}{}", letters(i)),
                        format!("{next}{}", letters(i + 1))
                    ]),
                ),
            },
        };
        json!({
            "@context": "http://www.w3.org/ns/odrl.jsonld", "@type": "Set",
            "permission": [{"action": "read", "assignee": orgs[i % orgs.len()], "target": target,
                            "constraint": [{"leftOperand": operand, "operator": operator, "rightOperand": right}]}]
        })
    };
    let bodies: Vec<Value> = (0..n).map(policy).collect();
    let url = format!("{base}/supply-chain/data-space/policies");
    let mut sent = futures_util::stream::iter(bodies.into_iter().map(|body| {
        client
            .http
            .post(&url)
            .header("x-api-key", operator)
            .bearer_auth(&client.token)
            .json(&body)
            .send()
    }))
    .buffer_unordered(8);
    use futures_util::StreamExt;
    while let Some(r) = sent.next().await {
        let r = r.unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
    }
    t.elapsed().as_secs_f64()
}

/// One figure of the table, with the baseline it is compared with.
struct Figure {
    name: String,
    value: f64,
    unit: &'static str,
    baseline: Option<(String, f64)>,
}

#[derive(Default)]
struct Table(Vec<Figure>);

impl Table {
    fn add(&mut self, name: impl Into<String>, value: f64, unit: &'static str) {
        self.0.push(Figure {
            name: name.into(),
            value,
            unit,
            baseline: None,
        });
    }

    fn compared(
        &mut self,
        name: impl Into<String>,
        value: f64,
        unit: &'static str,
        baseline: impl Into<String>,
        base: f64,
    ) {
        self.0.push(Figure {
            name: name.into(),
            value,
            unit,
            baseline: Some((baseline.into(), base)),
        });
    }

    fn inbox(&mut self, name: &str, run: &Run, raw: Option<(&str, f64, f64)>) {
        match raw {
            Some((what, per_s, p50)) => {
                self.compared(format!("{name}: per s"), run.per_s, "/s", what, per_s);
                self.compared(format!("{name}: p50"), run.p50, "ms", what, p50);
            }
            None => {
                self.add(format!("{name}: per s"), run.per_s, "/s");
                self.add(format!("{name}: p50"), run.p50, "ms");
            }
        }
        self.add(format!("{name}: p99"), run.p99, "ms");
    }

    fn print(&self) {
        println!("| measurement | figure | baseline (same run) | ratio |");
        println!("|---|---|---|---|");
        for f in &self.0 {
            let (baseline, ratio) = match &f.baseline {
                Some((name, b)) => (
                    format!("{name}: {b:.3} {}", f.unit),
                    if *b > 0.0 {
                        format!("{:.2}", f.value / b)
                    } else {
                        String::new()
                    },
                ),
                None => (String::new(), String::new()),
            };
            println!(
                "| {} | {:.3} {} | {baseline} | {ratio} |",
                f.name, f.value, f.unit
            );
        }
    }

    fn json(&self, args: &Args) -> Value {
        json!({
            "date": chrono::Utc::now().to_rfc3339(),
            "args": {
                "sequential": args.sequential, "concurrent": args.concurrent,
                "clients": args.clients, "consignments": args.consignments,
                "reads": args.reads, "policies": args.policies, "changes": args.changes,
                "documents": args.documents,
            },
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "figures": self.0.iter().map(|f| json!({
                "name": f.name, "value": f.value, "unit": f.unit,
                "baseline": f.baseline.as_ref().map(|(n, v)| json!({"name": n, "value": v})),
                "ratio": f.baseline.as_ref().filter(|(_, b)| *b > 0.0).map(|(_, b)| f.value / b),
            })).collect::<Vec<_>>(),
        })
    }
}

const OPERATOR_KEY: &str = "bench-operator-key-0123456789";

/// The child: the node under test, on a data dir, until SIGTERM. Prints its address.
fn serve_node(dir: &std::path::Path) {
    dataspace_node::store::memory::tune_allocator();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("listening {}", listener.local_addr().unwrap());
        use std::io::Write;
        std::io::stdout().flush().unwrap();
        let mut config = Config::with_data_dir(dir);
        config.api_key = Some(OPERATOR_KEY.into());
        // The aggregate over 100,000 consignments is measured, not guarded against.
        config.sparql_timeout_secs = 600;
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
            term.recv().await;
        };
        dataspace_node::run(listener, config, shutdown)
            .await
            .unwrap();
    });
}

/// Peak resident memory of a process (VmHWM), in MB.
fn peak_rss_mb(pid: u32) -> f64 {
    rss_mb(pid, "VmHWM:")
}

/// A process's memory figure from `/proc/<pid>/status` (`VmHWM:` peak, `VmRSS:` now), in MB.
fn rss_mb(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn dir_bytes(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// The HTTP floor: an axum hello-world endpoint on its own runtime thread.
fn hello_world() -> (tokio::runtime::Runtime, String) {
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

async fn plain_gets(http: &reqwest::Client, url: &str, n: usize) -> f64 {
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

/// `per_client` activities from each of `clients` concurrent clients.
async fn concurrently<F, Fut>(clients: usize, per_client: usize, f: F) -> Run
where
    F: Fn(usize, usize) -> Fut,
    Fut: std::future::Future<Output = Sample> + Send + 'static,
{
    let t = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let futures: Vec<Fut> = (0..per_client).map(|n| f(c, n)).collect();
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::with_capacity(futures.len());
            for fut in futures {
                out.push(fut.await);
            }
            out
        }));
    }
    let mut samples = Vec::new();
    for t in tasks {
        samples.extend(t.await.unwrap());
    }
    run_of(&samples, t.elapsed())
}

async fn sequentially<F, Fut>(n: usize, f: F) -> (Run, i64)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Sample>,
{
    let t = Instant::now();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        samples.push(f(i).await);
    }
    (run_of(&samples, t.elapsed()), samples[0].written)
}

/// What the HTTP part of the run measured.
struct Measured {
    org: String,
    written: i64,
    inbox: Vec<(String, Run)>,
    sparql: f64,
    rows: usize,
    reads: Reads,
    routed: Option<(Run, Run)>,
    rss: f64,
    /// Resident memory once the load finished (before the reads), and at the end.
    rss_loaded: f64,
    rss_rest: f64,
    rss_end: f64,
    /// Consignments in the store.
    consignments: usize,
}

/// What a kept data dir holds besides the store: the benchmark organisation's credentials and
/// what was loaded, so a later run measures on it without loading again.
#[derive(serde::Serialize, serde::Deserialize)]
struct Loaded {
    api_key: String,
    email: String,
    organization: String,
    consignments: usize,
    written: i64,
}

const STATE_FILE: &str = "bench-state.json";

/// A session token for a kept organisation (the cookie `POST /authentication/login` sets).
async fn log_in(http: &reqwest::Client, base: &str, loaded: &Loaded) -> String {
    let r = http
        .post(format!("{base}/authentication/login"))
        .header("x-api-key", &loaded.api_key)
        .json(&json!({"email": loaded.email, "password": "bench password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "log-in to the kept benchmark organisation");
    let cookie = r
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    cookie
        .split(';')
        .next()
        .and_then(|kv| kv.split_once('='))
        .map(|(_, v)| v.to_owned())
        .unwrap_or_default()
}

/// Stops the node child however the run ends, before its temporary data dir goes away.
struct ChildGuard(std::process::Child);

impl ChildGuard {
    /// SIGTERM (graceful: the store is flushed), then wait.
    fn stop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn main() {
    let args = Args::parse();
    if let Some(dir) = &args.serve_node {
        serve_node(dir);
        return;
    }
    let temporary = tempfile::tempdir().unwrap();
    let dir = match &args.data_dir {
        Some(d) => {
            std::fs::create_dir_all(d).unwrap();
            d.clone()
        }
        None => temporary.path().to_owned(),
    };
    let kept: Option<Loaded> = std::fs::read(dir.join(STATE_FILE))
        .ok()
        .map(|b| serde_json::from_slice(&b).expect("a readable bench-state.json"));
    let sparql_reads = args.sparql_reads.unwrap_or(args.reads.min(20)).max(1);
    let started = Instant::now();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--serve-node")
        .arg(&dir)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the node as a child process");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let base = format!("http://{}", line.trim().trim_start_matches("listening "));
    let pid = child.id();
    let mut child = ChildGuard(child);
    let (_hello_rt, hello) = hello_world();
    let mut table = Table::default();

    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let measured = client_rt.block_on(async {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .unwrap();
        loop {
            if let Ok(r) = http.get(format!("{base}/health")).send().await {
                if r.status().is_success() {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        table.add(
            "start-up to the first healthy answer",
            started.elapsed().as_secs_f64() * 1e3,
            "ms",
        );
        let floor = plain_gets(&http, &hello, args.reads).await;
        let health = plain_gets(&http, &format!("{base}/health"), args.reads).await;
        table.compared("GET /health p50", health, "ms", "axum hello-world", floor);

        let email = "bench@forwarder.example";
        let (api_key, token, org) = match &kept {
            Some(loaded) => (
                loaded.api_key.clone(),
                log_in(&http, &base, loaded).await,
                loaded.organization.clone(),
            ),
            None => {
                let created = create_account(&http, &base, OPERATOR_KEY, email).await;
                let text = |k: &str| created[k].as_str().unwrap().to_owned();
                (text("apiKey"), text("token"), text("organizationId"))
            }
        };
        let client = std::sync::Arc::new(Client {
            http,
            url: format!("{base}/supply-chain/data-space/inbox"),
            key: api_key,
            token,
            org,
        });
        let mut inbox = Vec::new();
        let mut written = kept.as_ref().map_or(0, |k| k.written);
        let c = args.clients;
        let per_client = args.concurrent / args.clients.max(1);
        let loaded = 200 + args.sequential + per_client * args.clients + args.clients.max(1);
        let mut consignments = match &kept {
            Some(k) => k.consignments,
            None => args.consignments.max(loaded) + 1,
        };
        if kept.is_none() {
            for n in 0..200 {
                client.create(n).await;
            }
            eprintln!("[{:>6.1} s] inbox runs", started.elapsed().as_secs_f64());
            let (create_c1, w) =
                sequentially(args.sequential, |n| client.create(1_000_000 + n)).await;
            written = w;
            let create_cn = concurrently(args.clients, per_client, |c, n| {
                let client = client.clone();
                async move { client.create(2_000_000 + c * per_client + n).await }
            })
            .await;
            // Consignments with known ids for the Update and Add runs, one per client.
            let targets: Vec<(String, String)> = (0..args.clients.max(1))
                .map(|c| {
                    (
                        format!("urn:uuid:{}", uuid::Uuid::new_v4()),
                        format!("BENCH-TARGET-{c}"),
                    )
                })
                .collect();
            for (n, (g, i)) in targets.iter().enumerate() {
                client.change("Create", g, i, n).await;
            }
            let (update_c1, _) = sequentially(args.changes, |n| {
                let (g, i) = &targets[0];
                client.change("Update", g, i, n)
            })
            .await;
            let changes_per_client = args.changes / args.clients.max(1);
            let update_cn = concurrently(args.clients, changes_per_client, |c, n| {
                let client = client.clone();
                let (g, i) = targets[c].clone();
                async move { client.change("Update", &g, &i, n).await }
            })
            .await;
            let (add_c1, _) =
                sequentially(args.changes, |n| client.add_event(&targets[0].0, n)).await;
            let add_cn = concurrently(args.clients, changes_per_client, |c, n| {
                let client = client.clone();
                let g = targets[c].0.clone();
                async move { client.add_event(&g, n).await }
            })
            .await;
            eprintln!(
                "[{:>6.1} s] filling up to {} consignments",
                started.elapsed().as_secs_f64(),
                args.consignments
            );
            if args.consignments > loaded {
                let per = (args.consignments - loaded).div_ceil(args.clients.max(1));
                concurrently(args.clients, per, |c, n| {
                    let client = client.clone();
                    async move { client.create_varied(c * per + n).await }
                })
                .await;
            }
            // The newest consignment, the first row of the list, carries a document.
            let newest = format!("urn:uuid:{}", uuid::Uuid::new_v4());
            client.create_with_id(0, &newest).await;
            client.add_document(0, &newest, 2_000).await;
            if args.documents > 0 {
                let (run, _) = sequentially(args.documents, |n| {
                    client.add_document(n + 1, &newest, args.document_bytes)
                })
                .await;
                table.inbox(
                    &format!(
                        "Add document ({} B data: URL), concurrency 1",
                        args.document_bytes
                    ),
                    &run,
                    None,
                );
            }
            inbox = vec![
                ("Create, concurrency 1".into(), create_c1),
                (format!("Create, concurrency {c}"), create_cn),
                ("Update, concurrency 1".into(), update_c1),
                (format!("Update, concurrency {c}"), update_cn),
                ("Add event, concurrency 1".into(), add_c1),
                (format!("Add event, concurrency {c}"), add_cn),
            ];
        } else if args.consignments > consignments {
            // A kept store grows to --consignments: memory after a load on a large store
            // without loading it all again.
            eprintln!(
                "[{:>6.1} s] adding {} consignments to the kept store",
                started.elapsed().as_secs_f64(),
                args.consignments - consignments
            );
            let per = (args.consignments - consignments).div_ceil(args.clients.max(1));
            let from = consignments;
            concurrently(args.clients, per, |c, n| {
                let client = client.clone();
                async move { client.create_varied(from + c * per + n).await }
            })
            .await;
            consignments += per * args.clients.max(1);
        }
        if args.data_dir.is_some() {
            let state = Loaded {
                api_key: client.key.clone(),
                email: email.into(),
                organization: client.org.clone(),
                consignments,
                written,
            };
            std::fs::write(dir.join(STATE_FILE), serde_json::to_vec(&state).unwrap()).unwrap();
        }
        let rss_loaded = rss_mb(pid, "VmRSS:");
        // At rest: within 30 s of the last write the node flushes what is left and hands the
        // allocator's free memory back (store::memory).
        if kept
            .as_ref()
            .is_none_or(|k| args.consignments > k.consignments)
        {
            tokio::time::sleep(Duration::from_secs(35)).await;
        }
        let rss_rest = rss_mb(pid, "VmRSS:");
        eprintln!("[{:>6.1} s] reads", started.elapsed().as_secs_f64());
        let (sparql, rows) = sparql_endpoint(&client, &base, sparql_reads).await;
        let reads = reads(&client, &base, args.reads).await;

        let mut routed = None;
        if args.policies > 0 {
            eprintln!(
                "[{:>6.1} s] {} policies, then routed Creates",
                started.elapsed().as_secs_f64(),
                args.policies
            );
            let n = (args.sequential / 2).max(1);
            let seconds =
                load_policies(&client, &base, OPERATOR_KEY, args.policies, args.matching).await;
            table.add(
                format!("storing {} policies through HTTP", args.policies),
                seconds,
                "s",
            );
            // Routed Creates (Santos → Mombasa: the matching policies grant and notify) and
            // Creates to a port no policy names (Hong Kong: the index is asked, nothing
            // matches), taken in turns so both see the same store: a Create's cost moves with
            // the store's size and its compactions.
            let t = Instant::now();
            let (mut matched, mut unmatched) = (Vec::new(), Vec::new());
            for i in 0..n {
                matched.push(client.create(3_000_000 + i).await);
                unmatched.push(client.create_to_port(3_500_000 + i, "HKHKG").await);
            }
            let wall = t.elapsed() / 2;
            routed = Some((run_of(&unmatched, wall), run_of(&matched, wall)));
        }
        let rss = peak_rss_mb(pid);
        Measured {
            org: client.org.clone(),
            written,
            inbox,
            sparql,
            rows,
            reads,
            routed,
            rss,
            rss_loaded,
            rss_rest,
            rss_end: rss_mb(pid, "VmRSS:"),
            consignments,
        }
    });
    let Measured {
        org,
        written,
        inbox: inbox_rows,
        sparql,
        rows,
        reads,
        routed,
        rss,
        rss_loaded,
        rss_rest,
        rss_end,
        consignments,
    } = measured;
    child.stop();
    let bytes = dir_bytes(&dir);
    eprintln!(
        "[{:>6.1} s] baselines on the store",
        started.elapsed().as_secs_f64()
    );

    let n = args.reads.min(50);
    let raw_page = raw_page_query(&dir, &org, &reads.ids, n);
    let (raw_lookup, raw_parts) = raw_view_queries(&dir, &org, &reads.ids[0], n);
    let raw_aggregate = raw_sparql(&dir, sparql_reads);
    let mut raw = if inbox_rows.is_empty() {
        Vec::new()
    } else {
        raw_oxigraph(args.sequential, written.max(1) as usize)
    };
    let raw_total: Duration = raw.iter().sum();
    raw.sort();
    let raw_per_s = raw.len() as f64 / raw_total.as_secs_f64();
    let raw_p50 = percentile(&raw, 0.5);
    let raw_name = format!("raw Oxigraph insert of the same {written} quads");
    for (name, run) in &inbox_rows {
        let baseline =
            name.starts_with("Create")
                .then_some((raw_name.as_str(), raw_per_s, raw_p50));
        table.inbox(name, run, baseline);
    }
    if let Some((unrouted, run)) = &routed {
        table.compared(
            format!(
                "Create p50 with {} policies ({} matching)",
                args.policies, args.matching
            ),
            run.p50,
            "ms",
            "Create p50, same time, a port no policy names",
            unrouted.p50,
        );
        table.add("  of which routing (mean)", run.route, "ms");
    }
    let page = "raw SPARQL of the page's row queries";
    table.compared(
        "list page (limit 50), first: p50",
        reads.list_first,
        "ms",
        page,
        raw_page,
    );
    if reads.list_deep > 0.0 {
        table.compared(
            "list page (limit 50), after 20 pages: p50",
            reads.list_deep,
            "ms",
            page,
            raw_page,
        );
    }
    table.compared(
        "list page (limit 50), each page read once: p50",
        reads.list_cold,
        "ms",
        page,
        raw_page,
    );
    let view_raw = raw_lookup + raw_parts;
    let raw_view_name = "raw SPARQL look-up by aig id + parts";
    table.compared("view: p50", reads.view, "ms", raw_view_name, view_raw);
    table.compared("events: p50", reads.events, "ms", raw_view_name, view_raw);
    table.compared(
        "documents: p50",
        reads.documents,
        "ms",
        raw_view_name,
        view_raw,
    );
    for (name, p99) in &reads.p99 {
        table.add(format!("{name}: p99"), *p99, "ms");
    }
    table.compared(
        format!("SPARQL aggregate through /sparql ({rows} rows): p50"),
        sparql,
        "ms",
        "raw SPARQL, union default graph",
        raw_aggregate[0],
    );
    table.add(
        "  raw SPARQL, the pattern in GRAPH ?g",
        raw_aggregate[1],
        "ms",
    );
    table.add("node peak RSS (VmHWM)", rss, "MB");
    table.add("node RSS right after the load (VmRSS)", rss_loaded, "MB");
    table.add("node RSS at rest, 35 s after the load", rss_rest, "MB");
    table.add("node RSS at the end (VmRSS)", rss_end, "MB");
    let total = consignments;
    table.add(
        "data dir per 1,000 consignments",
        bytes as f64 / 1e6 / (total as f64 / 1000.0),
        "MB",
    );
    table.add("data dir", bytes as f64 / 1e6, "MB");
    println!(
        "dataspace-node benchmark: {total} consignments, {} cores, {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        chrono::Utc::now().to_rfc3339()
    );
    println!();
    table.print();
    std::fs::write(
        &args.json,
        serde_json::to_string_pretty(&table.json(&args)).unwrap(),
    )
    .unwrap();
    println!();
    println!("figures written to {}", args.json.display());
}
