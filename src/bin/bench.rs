//! Benchmark: starts a real node (temporary data dir, port 0), drives it through HTTP and
//! prints figures. `cargo run --release --bin bench -- --help`.

use std::time::{Duration, Instant};

use clap::Parser;
use dataspace_node::Config;
use serde_json::{json, Value};

#[derive(Parser)]
#[command(about = "Inbox throughput and latency through the real HTTP API")]
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
    /// Sharing policies stored before the inbox runs (through HTTP). Two of them match the
    /// benchmark consignment (a KE border agency, the KEMBA terminal); the rest name other
    /// countries and UN/LOCODEs, as on a busy node.
    #[arg(long, default_value_t = 0)]
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

    /// A consignment entering at one of a few ports on one of 365 days (the fill-up for the
    /// read measurements, so that aggregates have groups).
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
        assert_eq!(status, 201, "{entry}");
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
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn report(name: &str, samples: &[Sample], wall: Duration) {
    let mut lat: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
    lat.sort();
    let n = samples.len() as f64;
    let mean = |i: usize| samples.iter().map(|s| s.stages[i]).sum::<f64>() / n;
    println!(
        "| {name} | {} | {:.0} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
        samples.len(),
        n / wall.as_secs_f64(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        mean(0),
        mean(1),
        mean(2),
        mean(4),
        mean(3),
    );
}

/// The floor: the same number of quads (the example's expansion, padded to what the node
/// wrote) inserted straight into a fresh Oxigraph store, one transaction per activity.
fn raw_oxigraph(activities: usize, quads_per_activity: usize) -> Vec<Duration> {
    use dataspace_node::jsonld::Expander;
    use oxigraph::model::{GraphName, Literal, NamedNode, Quad};
    let contexts = dataspace_node::intake::load_contexts().unwrap();
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

fn latency_row(name: &str, mut lat: Vec<Duration>) {
    lat.sort();
    println!(
        "| {name} | {} | | {:.3} | {:.3} | | | | |",
        lat.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
}

/// List pages (first and deep), view and events through HTTP. Returns the first page's ids.
async fn reads(client: &Client, base: &str, n: usize) -> Vec<String> {
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
    let mut lat = Vec::new();
    for _ in 0..n {
        lat.push(timed_get(client, &list).await.0);
    }
    latency_row("list page, limit 50, first", lat);
    if let Some(c) = &cursor {
        let mut lat = Vec::new();
        for _ in 0..n {
            lat.push(timed_get(client, &format!("{list}&cursor={c}")).await.0);
        }
        latency_row("list page, limit 50, after 20 pages", lat);
    }
    for (name, path) in [
        ("view", format!("/{id}")),
        ("events", format!("/{id}/events")),
    ] {
        let url = format!("{base}/supply-chain/data-space/consignments{path}");
        let mut lat = Vec::new();
        for _ in 0..n {
            lat.push(timed_get(client, &url).await.0);
        }
        latency_row(name, lat);
    }
    first["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["aigId"].as_str().unwrap().to_owned())
        .collect()
}

/// The same SPARQL the node runs for the first page (one summary query per row, same
/// records), straight on the store after the node stopped.
fn raw_page_query(data_dir: &std::path::Path, org: &str, aigs: &[String], n: usize) {
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
    latency_row(
        "baseline: raw SPARQL of the same first-page queries on the store",
        lat,
    );
}

/// The SPARQL of a view (look-up by aig id, then the parts of the publisher's graph) straight
/// on the store, each timed on its own.
fn raw_view_queries(data_dir: &std::path::Path, org: &str, aig: &str, n: usize) {
    use dataspace_node::intake::literal;
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
    latency_row("baseline: raw SPARQL, view look-up by aig id", lookup);
    latency_row("baseline: raw SPARQL, view parts of one graph", parts);
}

/// The aggregate through `/sparql` as the publishing organisation (SPARQL JSON results).
async fn sparql_endpoint(client: &Client, base: &str, n: usize) {
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
    latency_row(
        &format!(
            "SPARQL aggregate through the endpoint ({rows} rows, per port of entry per month)"
        ),
        lat,
    );
}

/// The same aggregate straight on the store after the node stopped: over the union of all
/// graphs as sent, and written with `GRAPH ?g`; and the endpoint's evaluation of it
/// (isolation included, no HTTP) as `org`. The three run in turn, round after round, so they
/// see the store in the same state (a store reopened after a bulk load compacts for a while)
/// and the machine under the same load.
fn raw_sparql(data_dir: &std::path::Path, org: &str, n: usize) {
    use dataspace_node::sparql::{Answer, Protocol, Sparql};
    use oxigraph::sparql::{CancellationToken, QueryResults, SparqlEvaluator};
    use std::sync::Arc;
    let store = Arc::new(dataspace_node::store::Store::open(&data_dir.join("store")).unwrap());
    let queries = Arc::new(dataspace_node::store::Queries::load().unwrap());
    let listing =
        Arc::new(dataspace_node::views::listing::Listing::load(&store, &queries).unwrap());
    let sharing = Arc::new(
        dataspace_node::sharing::Sharing::open(
            store.clone(),
            queries,
            Arc::new(dataspace_node::intake::load_countries().unwrap()),
            "http://127.0.0.1",
            b"bench",
        )
        .unwrap(),
    );
    let sparql = Sparql::new(
        store.clone(),
        sharing,
        listing,
        Duration::from_secs(600),
        1000,
    );
    let caller = dataspace_node::auth::Caller {
        user: String::new(),
        organization: org.to_owned(),
        operator: false,
        expiry_ms: i64::MAX,
    };
    let runs: [(&str, &dyn Fn() -> usize); 3] = [
        (
            "baseline: raw SPARQL of the same aggregate on the store, union default graph",
            &|| {
                let mut prepared = SparqlEvaluator::new().parse_query(AGGREGATE).unwrap();
                prepared.dataset_mut().set_default_graph_as_union();
                let QueryResults::Solutions(s) = prepared.on_store(store.db()).execute().unwrap()
                else {
                    panic!("not a SELECT");
                };
                s.map(Result::unwrap).count()
            },
        ),
        (
            "baseline: raw SPARQL of the same aggregate on the store, GRAPH ?g",
            &|| {
                let prepared = SparqlEvaluator::new()
                    .parse_query(AGGREGATE_BY_GRAPH)
                    .unwrap();
                let QueryResults::Solutions(s) = prepared.on_store(store.db()).execute().unwrap()
                else {
                    panic!("not a SELECT");
                };
                s.map(Result::unwrap).count()
            },
        ),
        (
            "the endpoint's evaluation of the aggregate on the store (isolation, no HTTP)",
            &|| {
                let parsed = Sparql::parse(AGGREGATE).unwrap();
                let answer = sparql
                    .run(
                        &caller,
                        dataspace_node::views::Scope::All,
                        parsed,
                        &Protocol::default(),
                        CancellationToken::new(),
                    )
                    .unwrap();
                let Answer::Solutions { rows, .. } = answer else {
                    panic!("not a SELECT");
                };
                rows.len()
            },
        ),
    ];
    let mut lat = vec![Vec::new(); runs.len()];
    let mut rows = vec![0; runs.len()];
    for round in 0..n + 1 {
        for (i, (_, run)) in runs.iter().enumerate() {
            let t = Instant::now();
            rows[i] = run();
            if round > 0 {
                lat[i].push(t.elapsed());
            }
        }
    }
    for (i, (name, _)) in runs.iter().enumerate() {
        latency_row(&format!("{name} ({} rows)", rows[i]), lat[i].clone());
    }
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
async fn load_policies(client: &Client, base: &str, operator: &str, n: usize, matching: usize) {
    let t = Instant::now();
    let mut orgs = Vec::new();
    for i in 0..50 {
        let created = create_account(
            &client.http,
            base,
            operator,
            &format!("agency{i}@bench.example"),
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
    println!(
        "{n} policies stored through HTTP in {:.1} s; {matching} match the benchmark consignment",
        t.elapsed().as_secs_f64()
    );
    println!();
}

fn main() {
    let args = Args::parse();
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::with_data_dir(dir.path());
    config.api_key = Some("bench-operator-key-0123456789".into());
    let listener = server_rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = server_rt.spawn(dataspace_node::run(listener, config.clone(), async {
        let _ = stopped.await;
    }));

    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let first_page = std::sync::Arc::new(std::sync::Mutex::new((String::new(), Vec::new())));
    let first_page_out = first_page.clone();
    let written = client_rt.block_on(async {
        let http = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
        for _ in 0..400 {
            if http.get(format!("{base}/health")).send().await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let operator = config.api_key.as_deref().unwrap();
        let created = create_account(&http, &base, operator, "bench@forwarder.example").await;
        let client = std::sync::Arc::new(Client {
            http,
            url: format!("{base}/supply-chain/data-space/inbox"),
            key: created["apiKey"].as_str().unwrap().into(),
            token: created["token"].as_str().unwrap().into(),
            org: created["organizationId"].as_str().unwrap().into(),
        });
        if args.policies > 0 {
            let operator = config.api_key.clone().unwrap();
            load_policies(&client, &base, &operator, args.policies, args.matching).await;
        }
        for n in 0..200 {
            client.create(n).await;
        }
        println!("Inbox Create, example-sized consignment (71 quads), through HTTP on {base}");
        println!();
        println!("| run | activities | per s | p50 ms | p99 ms | parse ms | expand ms | shapes ms | route ms | store ms (incl. route) |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        let t = Instant::now();
        let mut samples = Vec::with_capacity(args.sequential);
        for n in 0..args.sequential {
            samples.push(client.create(1_000_000 + n).await);
        }
        report("concurrency 1", &samples, t.elapsed());
        let written = samples[0].written.max(1) as usize;

        let t = Instant::now();
        let per_client = args.concurrent / args.clients.max(1);
        let mut tasks = Vec::new();
        for c in 0..args.clients {
            let client = client.clone();
            tasks.push(tokio::spawn(async move {
                let mut out = Vec::with_capacity(per_client);
                for n in 0..per_client {
                    out.push(client.create(2_000_000 + c * per_client + n).await);
                }
                out
            }));
        }
        let mut samples = Vec::new();
        for t in tasks {
            samples.extend(t.await.unwrap());
        }
        report(&format!("concurrency {}", args.clients), &samples, t.elapsed());

        let loaded = 200 + args.sequential + per_client * args.clients;
        if args.consignments > loaded {
            let missing = args.consignments - loaded;
            let per = missing.div_ceil(args.clients.max(1));
            let mut tasks = Vec::new();
            for c in 0..args.clients {
                let client = client.clone();
                tasks.push(tokio::spawn(async move {
                    for n in 0..per {
                        client.create_varied(c * per + n).await;
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        }
        if args.documents > 0 {
            let target = format!("urn:uuid:{}", uuid::Uuid::new_v4());
            client.create_with_id(0, &target).await;
            let t = Instant::now();
            let mut samples = Vec::with_capacity(args.documents);
            for n in 0..args.documents {
                samples.push(client.add_document(n, &target, args.document_bytes).await);
            }
            report(
                &format!("Add document, {} B data: URL, concurrency 1", args.document_bytes),
                &samples,
                t.elapsed(),
            );
            let fetch = samples.iter().map(|s| s.stages[5]).sum::<f64>() / samples.len() as f64;
            println!("(documents: decode + blob write + fsync, mean {fetch:.3} ms of the above)");
        }
        if args.consignments > 0 {
            sparql_endpoint(&client, &base, args.reads.min(20)).await;
            let ids = reads(&client, &base, args.reads).await;
            *first_page_out.lock().unwrap() = (client.org.clone(), ids);
        }
        written
    });
    let _ = stop.send(());
    server_rt.block_on(server).unwrap().unwrap();

    if args.consignments > 0 {
        let (org, aigs) = first_page.lock().unwrap().clone();
        raw_page_query(dir.path(), &org, &aigs, args.reads.min(50));
        raw_view_queries(dir.path(), &org, &aigs[0], args.reads.min(50));
        raw_sparql(dir.path(), &org, args.reads.min(20));
    }
    let mut raw = raw_oxigraph(args.sequential, written);
    let total: Duration = raw.iter().sum();
    raw.sort();
    println!(
        "| baseline: raw Oxigraph insert of the same {written} quads, 1 transaction each | {} | {:.0} | {:.3} | {:.3} | | | | |",
        raw.len(),
        raw.len() as f64 / total.as_secs_f64(),
        percentile(&raw, 0.5),
        percentile(&raw, 0.99),
    );
}
