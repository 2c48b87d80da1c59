//! The Dataspace Protocol provider: a catalog page against the shared list page of the same
//! consignments, negotiation request → agreement sent, transfer request → start sent, and a
//! pull against the linked-data read. A connector in this process (its did:web document, key
//! and callback on loopback) is the participant; on the main run's store (or a fresh one with
//! `--dsp-only`), after `--dsp-rounds` Creates shared with it and with a local agency.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path as UrlPath, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::pkcs8::EncodePrivateKey;
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};

use crate::cli::Args;
use crate::client::Client;
use crate::flood::organisation;
use crate::node::{operator_session, spawn_with, wait_healthy, BENCH_BASE_URL, OPERATOR_KEY};
use crate::progress;
use crate::report::Table;
use crate::stats::{percentile, sequentially};

const CONTEXT: &str = "https://w3id.org/dspace/2025/1/context.jsonld";

/// What arrived at the connector's callback: path → (when, body).
type Arrivals = Arc<Mutex<HashMap<String, (Instant, Value)>>>;

struct Connector {
    did: String,
    host: String,
    key: SigningKey,
    arrivals: Arrivals,
}

async fn arrived(
    State(seen): State<Arrivals>,
    UrlPath(rest): UrlPath<String>,
    Json(body): Json<Value>,
) -> &'static str {
    seen.lock().unwrap().insert(rest, (Instant::now(), body));
    "ok"
}

/// The connector's server, on a runtime of its own (`--others-nice`), kept for the process.
fn connector(nice: i32) -> Connector {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let did = format!("did:web:{}:org:connector", host.replace(':', "%3A"));
    let key = SigningKey::from_bytes(&[9; 32]);
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes());
    let host_did = format!("did:web:{}", host.replace(':', "%3A"));
    let served_host = host.clone();
    let doc = move |did: String| {
        json!({
            "@context": ["https://www.w3.org/ns/did/v1"],
            "id": did,
            "verificationMethod": [{
                "id": format!("{did}#key-1"), "type": "JsonWebKey2020", "controller": did,
                "publicKeyJwk": {"kty": "OKP", "crv": "Ed25519", "x": x},
            }],
            "capabilityInvocation": [format!("{did}#key-1")],
            "service": [{"id": format!("{did}#federation"), "type": "DataspaceNodeFederation",
                         "serviceEndpoint": format!("http://{served_host}/federation")}],
        })
    };
    let arrivals = Arrivals::default();
    let app = Router::new()
        .route(
            "/org/{name}/did.json",
            get(move |UrlPath(name): UrlPath<String>| {
                let body = doc(format!("{host_did}:org:{name}"));
                async move { Json(body) }
            }),
        )
        .route("/federation/inbox", post(|| async { "" }))
        .route("/callback/{*rest}", post(arrived))
        .with_state(arrivals.clone());
    let rt: &'static tokio::runtime::Runtime = Box::leak(Box::new(crate::others_runtime(nice)));
    rt.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        axum::serve(listener, app).await.unwrap()
    });
    Connector {
        did,
        host,
        key,
        arrivals,
    }
}

impl Connector {
    /// A fresh DCP self-issued ID token for the node.
    fn token(&self) -> String {
        self.token_as(&self.did)
    }

    /// The same for another participant of the connector's host (its document is the same
    /// but for the DID).
    fn token_as(&self, did: &str) -> String {
        let now = chrono::Utc::now().timestamp();
        let node = format!("did:web:{}", BENCH_BASE_URL.trim_start_matches("http://"));
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
        header.kid = Some(format!("{did}#key-1"));
        let claims = json!({"iss": did, "sub": did, "aud": node, "iat": now,
                            "exp": now + 120, "jti": uuid::Uuid::new_v4().to_string()});
        let der = self.key.to_pkcs8_der().unwrap();
        let key = jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes());
        jsonwebtoken::encode(&header, &claims, &key).unwrap()
    }

    /// Waits for the message at `path` under the callback: when it arrived, and its body.
    async fn wait_for(&self, path: &str) -> (Instant, Value) {
        for _ in 0..6000 {
            if let Some(found) = self.arrivals.lock().unwrap().get(path).cloned() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("no {path} arrived");
    }
}

/// A DSP POST as the connector; the answer's body.
async fn dsp_post(
    http: &reqwest::Client,
    base: &str,
    c: &Connector,
    path: &str,
    body: &Value,
) -> Value {
    let r = http
        .post(format!("{base}/dsp/2025-1/{path}"))
        .header("authorization", c.token())
        .json(body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{path}: {}", r.status());
    r.json().await.unwrap_or(Value::Null)
}

/// The section: on `dir`'s store, the node started with the connector as a partner.
pub async fn phase(args: &Args, dir: &Path, table: &mut Table, t0: Instant) {
    let c = connector(args.others_nice);
    let env = [
        ("DATASPACE_NODE_FEDERATION_PARTNERS", c.host.clone()),
        ("DATASPACE_NODE_FEDERATION_ALLOW_HTTP", c.host.clone()),
    ];
    let (mut child, base, _) = spawn_with(dir, &env);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(16)
        .build()
        .unwrap();
    wait_healthy(&http, &base).await;
    let trader = organisation(&http, &base, "dsp-trader").await;
    let agency = organisation(&http, &base, "dsp-agency").await;
    share_with(&http, &base, &[&c.did, &agency.org]).await;
    let n = args.dsp_rounds;
    let (created, _) = sequentially(n, |i| trader.create(i)).await;
    eprintln!("dsp: {n} Creates, p50 {:.2} ms", created.p50);
    progress(
        t0,
        "dsp: consignments shared with the connector and an agency",
    );
    let reads = args.reads.max(20);
    let (catalog, list) = catalog_against_list(&http, &base, &c, &agency, reads).await;
    let empty = empty_catalog(&http, &base, &c, reads).await;
    progress(t0, "dsp: catalog pages and shared list pages");
    let datasets = catalog_ids(&http, &base, &c).await;
    let rounds = n.min(datasets.len()).min(100);
    eprintln!(
        "dsp: {} datasets offered, {rounds} negotiations and transfers",
        datasets.len()
    );
    let (agreements, agreed_ms) = negotiate(&http, &base, &c, &datasets[..rounds]).await;
    progress(t0, "dsp: negotiations");
    let (pulls, started_ms) = transfers(&http, &base, &c, &agreements).await;
    progress(t0, "dsp: transfers");
    let (pull, read) = pull_against_read(&http, &base, &agency, &pulls, reads).await;
    child.stop();
    let (mut agreed_ms, mut started_ms) = (agreed_ms, started_ms);
    agreed_ms.sort();
    started_ms.sort();
    table.compared(
        "DSP catalog page (limit 20): p50",
        catalog,
        "ms",
        "the agency's shared list page (limit 20): p50",
        list,
    );
    table.add(
        "DSP catalog page, nothing shared (the token check and the request): p50",
        empty,
        "ms",
    );
    table.add(
        "DSP negotiation request → agreement at the callback: p50",
        percentile(&agreed_ms, 0.5),
        "ms",
    );
    table.add(
        "DSP negotiation request → agreement at the callback: p99",
        percentile(&agreed_ms, 0.99),
        "ms",
    );
    table.add(
        "DSP transfer request → start at the callback: p50",
        percentile(&started_ms, 0.5),
        "ms",
    );
    table.add(
        "DSP transfer request → start at the callback: p99",
        percentile(&started_ms, 0.99),
        "ms",
    );
    table.compared(
        "DSP pull (JSON-LD): p50",
        pull,
        "ms",
        "the agency's linked-data read (JSON-LD): p50",
        read,
    );
}

/// One policy sharing what the benchmark's Creates publish (port of entry KEMBA) with `orgs`.
async fn share_with(http: &reqwest::Client, base: &str, orgs: &[&str]) {
    let session = operator_session(http, base).await;
    let target = format!("{BENCH_BASE_URL}/supply-chain/data-space/consignments");
    let permissions: Vec<Value> = orgs
        .iter()
        .map(|org| json!({"action": "read", "assignee": org, "target": target,
            "constraint": [{"leftOperand": "portOfEntry", "operator": "eq", "rightOperand": "KEMBA"}]}))
        .collect();
    let r = http
        .post(format!("{base}/supply-chain/data-space/policies"))
        .header("x-api-key", OPERATOR_KEY)
        .bearer_auth(session)
        .json(&json!({"@context": "http://www.w3.org/ns/odrl.jsonld", "@type": "Set", "permission": permissions}))
        .send()
        .await
        .unwrap();
    let status = r.status();
    assert_eq!(
        status,
        201,
        "the DSP benchmark's policy: {}",
        r.text().await.unwrap()
    );
}

fn p50_of(mut lat: Vec<Duration>) -> f64 {
    lat.sort();
    percentile(&lat, 0.5)
}

/// Catalog page p50 and the agency's shared list page p50, alternating.
async fn catalog_against_list(
    http: &reqwest::Client,
    base: &str,
    c: &Connector,
    agency: &Client,
    n: usize,
) -> (f64, f64) {
    let request = json!({"@context": [CONTEXT], "@type": "CatalogRequestMessage"});
    let (mut catalog, mut list) = (Vec::new(), Vec::new());
    for _ in 0..n {
        catalog.push(timed_catalog(http, base, c.token(), &request).await);
        let t = Instant::now();
        let r = http
            .get(format!(
                "{base}/supply-chain/data-space/consignments?scope=shared"
            ))
            .header("x-api-key", &agency.key)
            .bearer_auth(&agency.token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap();
        list.push(t.elapsed());
    }
    (p50_of(catalog), p50_of(list))
}

/// One catalog request with `token`, timed to its whole answer.
async fn timed_catalog(
    http: &reqwest::Client,
    base: &str,
    token: String,
    request: &Value,
) -> Duration {
    let t = Instant::now();
    let r = http
        .post(format!("{base}/dsp/2025-1/catalog/request"))
        .header("authorization", token)
        .json(request)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.bytes().await.unwrap();
    t.elapsed()
}

/// Catalog p50 of a participant nothing is shared with: what the token check and the request
/// cost without datasets.
async fn empty_catalog(http: &reqwest::Client, base: &str, c: &Connector, n: usize) -> f64 {
    let request = json!({"@context": [CONTEXT], "@type": "CatalogRequestMessage"});
    let other = format!("{}:org:other", c.did.rsplit_once(":org:").unwrap().0);
    let mut lat = Vec::new();
    for _ in 0..n {
        lat.push(timed_catalog(http, base, c.token_as(&other), &request).await);
    }
    p50_of(lat)
}

/// The first catalog page's datasets: (dataset id, offer).
async fn catalog_ids(http: &reqwest::Client, base: &str, c: &Connector) -> Vec<(String, Value)> {
    let request = json!({"@context": [CONTEXT], "@type": "CatalogRequestMessage"});
    let catalog = dsp_post(http, base, c, "catalog/request?limit=100", &request).await;
    catalog["dataset"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|d| {
            (
                d["@id"].as_str().unwrap().to_owned(),
                d["hasPolicy"][0].clone(),
            )
        })
        .collect()
}

/// One negotiation per dataset, one at a time, each finalized: the agreement ids and the
/// request → agreement-at-the-callback times.
async fn negotiate(
    http: &reqwest::Client,
    base: &str,
    c: &Connector,
    datasets: &[(String, Value)],
) -> (Vec<(String, String)>, Vec<Duration>) {
    let mut agreements = Vec::new();
    let mut lat = Vec::new();
    for (dataset, offer) in datasets {
        let cpid = format!("urn:uuid:{}", uuid::Uuid::new_v4());
        let mut offer = offer.clone();
        offer["target"] = json!(dataset);
        let request = json!({"@context": [CONTEXT], "@type": "ContractRequestMessage", "consumerPid": cpid,
                             "offer": offer, "callbackAddress": format!("http://{}/callback", c.host)});
        let t = Instant::now();
        let n = dsp_post(http, base, c, "negotiations/request", &request).await;
        let (at, agreed) = c.wait_for(&format!("negotiations/{cpid}/agreement")).await;
        lat.push(at - t);
        let pid = n["providerPid"].as_str().unwrap().to_owned();
        // The node records AGREED once the callback answered; the verification waits for it.
        let verification = json!({"@context": [CONTEXT], "@type": "ContractAgreementVerificationMessage",
                                  "providerPid": pid, "consumerPid": cpid});
        let path = format!("negotiations/{pid}/agreement/verification");
        loop {
            let r = http
                .post(format!("{base}/dsp/2025-1/{path}"))
                .header("authorization", c.token())
                .json(&verification)
                .send()
                .await
                .unwrap();
            if r.status().is_success() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        c.wait_for(&format!("negotiations/{cpid}/events")).await;
        let aig = format!("aig:{}", dataset.rsplit(':').next().unwrap_or_default());
        agreements.push((agreed["agreement"]["@id"].as_str().unwrap().to_owned(), aig));
    }
    (agreements, lat)
}

/// A pull: its endpoint, token and the consignment's aig id.
type Pull = (String, String, String);

/// One transfer per agreement, once its negotiation is finalized: the pulls, and the request
/// → start-at-the-callback times.
async fn transfers(
    http: &reqwest::Client,
    base: &str,
    c: &Connector,
    agreements: &[(String, String)],
) -> (Vec<Pull>, Vec<Duration>) {
    let mut pulls = Vec::new();
    let mut lat = Vec::new();
    for (agreement, aig) in agreements {
        let cpid = format!("urn:uuid:{}", uuid::Uuid::new_v4());
        let request = json!({"@context": [CONTEXT], "@type": "TransferRequestMessage", "consumerPid": cpid,
                             "agreementId": agreement, "format": "HttpData-PULL",
                             "callbackAddress": format!("http://{}/callback", c.host)});
        let t = loop {
            let t = Instant::now();
            let r = http
                .post(format!("{base}/dsp/2025-1/transfers/request"))
                .header("authorization", c.token())
                .json(&request)
                .send()
                .await
                .unwrap();
            if r.status().is_success() {
                break t;
            }
            // The negotiation's FINALIZED is recorded once the callback answered.
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        let (at, start) = c.wait_for(&format!("transfers/{cpid}/start")).await;
        lat.push(at - t);
        let address = &start["dataAddress"];
        let endpoint = address["endpoint"]
            .as_str()
            .unwrap()
            .replace(BENCH_BASE_URL, base);
        let token = address["endpointProperties"][0]["value"]
            .as_str()
            .unwrap()
            .to_owned();
        pulls.push((endpoint, token, aig.clone()));
    }
    (pulls, lat)
}

/// Pull p50 against the agency's linked-data read of the same consignments, in turns: the one
/// that reads a consignment first finds it cold, so which goes first alternates.
async fn pull_against_read(
    http: &reqwest::Client,
    base: &str,
    agency: &Client,
    pulls: &[Pull],
    n: usize,
) -> (f64, f64) {
    // The transfers start once the callback answered: the first pull waits for that.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (mut pull, mut read) = (Vec::new(), Vec::new());
    for i in 0..n {
        let (endpoint, token, aig) = &pulls[i % pulls.len()];
        for turn in 0..2 {
            if (i + turn) % 2 == 0 {
                let t = Instant::now();
                let r = http
                    .get(endpoint)
                    .bearer_auth(token)
                    .header("accept", "application/ld+json")
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200, "pull");
                r.bytes().await.unwrap();
                pull.push(t.elapsed());
            } else {
                let t = Instant::now();
                let r = http
                    .get(format!("{base}/supply-chain/data-space/consignments/{aig}"))
                    .header("x-api-key", &agency.key)
                    .bearer_auth(&agency.token)
                    .header("accept", "application/ld+json")
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200, "linked-data read");
                r.bytes().await.unwrap();
                read.push(t.elapsed());
            }
        }
    }
    (p50_of(pull), p50_of(read))
}
