//! The Dataspace Protocol 2025-1 provider, driven by a consumer written here (`consumer`):
//! discovery, DCP self-issued ID tokens, and the catalog of what the sharing policies give the
//! consumer's participant DID. Every DSP message either side sends is validated against the
//! DSP 2025-1 JSON Schemas (`schemas`).

mod consumer;
mod negotiation;
mod schemas;
mod transfer;

use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::common::*;
use consumer::{node_did, Consumer, CONTEXT};
use schemas::assert_valid;

/// A node whose partner is the consumer's host, the operator, a trader, and a policy sharing
/// the consignments that enter Kenya with the consumer's participant DID.
struct World {
    node: TestNode,
    consumer: Consumer,
    operator: Operator,
    trader: Session,
    policy: String,
}

impl World {
    async fn new() -> Self {
        let consumer = Consumer::serve(TcpListener::bind("127.0.0.1:0").await.unwrap()).await;
        let host = consumer.host.clone();
        let node = TestNode::start_with(move |c| {
            c.federation_partners = vec![host.clone()];
            c.federation_allow_http = vec![host];
        })
        .await;
        let operator = Operator::new(&node).await;
        let trader = Session::new(&node, "trader@forwarder.example").await;
        let rule = rule(
            &node,
            &consumer.did,
            "portOfEntryCountry",
            "eq",
            json!("KE"),
        );
        let policy = operator.policy(&node, rule).await["uid"]
            .as_str()
            .unwrap()
            .to_owned();
        Self {
            node,
            consumer,
            operator,
            trader,
            policy,
        }
    }

    async fn publish(&self, n: u32, locode: &str) {
        let activity = consignment_at(self.trader.org(), n, locode, "2026-12-24T06:00:00Z");
        assert_completed(&self.trader.publish(&self.node, &activity).await);
    }

    fn catalog_url(&self) -> String {
        self.node.url("/dsp/2025-1/catalog/request")
    }

    /// The catalog (one page from `url`), checked against the schema; its `Link` next URL.
    async fn catalog_page(&self, url: &str) -> (Value, Option<String>) {
        let request =
            json!({"@context": [CONTEXT], "@type": "CatalogRequestMessage", "filter": []});
        assert_valid("catalog/catalog-request-message-schema.json", &request);
        let token = self.consumer.token(&self.node);
        let r = self
            .consumer
            .catalog_with(&self.node, url, Some(&token), &request)
            .await;
        assert_eq!(r.status(), StatusCode::OK);
        let next = r
            .headers()
            .get("link")
            .map(|l| l.to_str().unwrap().to_owned())
            .map(|l| {
                assert!(l.ends_with("; rel=\"next\""), "{l}");
                l.trim_start_matches('<')
                    .split('>')
                    .next()
                    .unwrap()
                    .to_owned()
            });
        let catalog = json_body(r).await;
        assert_valid("catalog/catalog-schema.json", &catalog);
        (catalog, next)
    }

    /// Every dataset of the catalog, page after page.
    async fn datasets(&self, first: &str) -> Vec<Value> {
        let mut url = first.to_owned();
        let mut all = Vec::new();
        loop {
            let (catalog, next) = self.catalog_page(&url).await;
            all.extend(catalog["dataset"].as_array().cloned().unwrap_or_default());
            match next {
                Some(n) => url = n,
                None => return all,
            }
        }
    }

    async fn dataset(&self, id: &str) -> reqwest::Response {
        let path = format!("/dsp/2025-1/catalog/datasets/{}", percent_encoded(id));
        self.node
            .client
            .get(self.node.url(&path))
            .header(
                "authorization",
                format!("Bearer {}", self.consumer.token(&self.node)),
            )
            .send()
            .await
            .unwrap()
    }
}

/// A DSP error body of `kind` with `status`, checked against its schema.
async fn assert_dsp_error(r: reqwest::Response, status: StatusCode, kind: &str) -> Value {
    assert_eq!(r.status(), status);
    let body = json_body(r).await;
    assert_eq!(body["@type"], kind, "{body}");
    let schema = match kind {
        "CatalogError" => "catalog/catalog-error-schema.json",
        "ContractNegotiationError" => "negotiation/contract-negotiation-error-schema.json",
        _ => "transfer/transfer-error-schema.json",
    };
    assert_valid(schema, &body);
    body
}

#[tokio::test]
async fn the_version_and_the_did_document_say_where_the_protocol_is() {
    let node = TestNode::start().await;
    let r = node
        .client
        .get(node.url("/.well-known/dspace-version"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let versions = json_body(r).await;
    assert_valid("common/protocol-version-schema.json", &versions);
    let v = &versions["protocolVersions"][0];
    assert_eq!(
        (v["version"].as_str(), v["path"].as_str()),
        (Some("2025-1"), Some("/dsp/2025-1"))
    );
    assert_eq!(v["auth"]["protocol"], "DCP");
    let doc = json_body(
        node.client
            .get(node.url("/.well-known/did.json"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let service = |kind: &str| {
        doc["service"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["type"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} in {doc}"))
    };
    let mut catalog = service("CatalogService");
    assert_eq!(catalog["serviceEndpoint"], node.url("/dsp/2025-1/catalog"));
    catalog["@context"] = json!([CONTEXT, "https://www.w3.org/ns/did/v1"]);
    assert_valid("common/did-service-schema.json", &catalog);
    assert_eq!(
        service("DataService")["serviceEndpoint"],
        node.url("/.well-known/dspace-version")
    );
    let key = format!("{}#node-key", node_did(&node));
    assert_eq!(doc["capabilityInvocation"], json!([key]));
}

#[tokio::test]
async fn a_participant_is_offered_what_is_shared_with_it_and_nothing_once_revoked() {
    let w = World::new().await;
    for (n, locode) in [(1, "KEMBA"), (2, "TZDAR"), (3, "KEMBA"), (4, "KEMBA")] {
        w.publish(n, locode).await;
    }
    // Three enter Kenya; pages of two, followed by their Link.
    let datasets = w.datasets(&format!("{}?limit=2", w.catalog_url())).await;
    let titles: Vec<&str> = datasets
        .iter()
        .map(|d| d["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Consignment FWD-2026-000004",
            "Consignment FWD-2026-000003",
            "Consignment FWD-2026-000001"
        ]
    );
    let (catalog, _) = w.catalog_page(&w.catalog_url()).await;
    assert_eq!(catalog["participantId"], node_did(&w.node));
    assert_eq!(
        catalog["service"][0]["endpointURL"],
        w.node.url("/dsp/2025-1")
    );
    let first = &datasets[0];
    let offer = &first["hasPolicy"][0];
    assert_eq!(
        offer["permission"],
        json!([{"action": "use", "constraint": [
            {"leftOperand": "portOfEntryCountry", "operator": "eq", "rightOperand": "KE"}
        ]}])
    );
    assert_eq!(first["distribution"][0]["format"], "HttpData-PULL");
    // One dataset by its id, with the data service inline.
    let id = first["@id"].as_str().unwrap();
    let r = w.dataset(id).await;
    assert_eq!(r.status(), StatusCode::OK);
    let one = json_body(r).await;
    assert_valid("catalog/dataset-schema.json", &one);
    assert_eq!(one["hasPolicy"], first["hasPolicy"]);
    assert_eq!(
        one["distribution"][0]["accessService"]["endpointURL"],
        w.node.url("/dsp/2025-1")
    );
    // The Tanzanian one is not offered, nor an id that names nothing.
    let tz = id.replace(&id[id.len() - 8..], "00000000");
    for missing in [tz.as_str(), "urn:dataspace-node:dataset:nothing", "x"] {
        assert_dsp_error(
            w.dataset(missing).await,
            StatusCode::NOT_FOUND,
            "CatalogError",
        )
        .await;
    }
    // Another policy sharing it on other grounds: the offer carries both (nothing stale).
    let by_exit = rule(&w.node, &w.consumer.did, "portOfExit", "eq", json!("BRSSZ"));
    let second = w.operator.policy(&w.node, by_exit).await["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    w.publish(6, "KEMBA").await;
    let newest = w.datasets(&w.catalog_url()).await;
    let grounds = |d: &Value| d["hasPolicy"][0]["permission"].as_array().unwrap().len();
    assert_eq!(grounds(&newest[0]), 2, "{:#}", newest[0]);
    assert_eq!(
        grounds(&newest[1]),
        1,
        "routed before the second policy: {:#}",
        newest[1]
    );
    w.operator.delete(&w.node, &second).await;
    // A consignment shared later appears.
    w.publish(5, "KEMBA").await;
    assert_eq!(w.datasets(&w.catalog_url()).await.len(), 5);
    // The policy's deletion takes every dataset away.
    w.operator.delete(&w.node, &w.policy).await;
    let (catalog, next) = w.catalog_page(&w.catalog_url()).await;
    assert!(
        catalog.get("dataset").is_none() && next.is_none(),
        "{catalog}"
    );
    assert_dsp_error(w.dataset(id).await, StatusCode::NOT_FOUND, "CatalogError").await;
}

/// A change a test makes to good token claims.
type Change = Box<dyn Fn(&mut consumer::Claims)>;

#[tokio::test]
async fn only_a_fresh_token_of_the_participant_for_this_node_is_accepted() {
    let w = World::new().await;
    let request = json!({"@context": [CONTEXT], "@type": "CatalogRequestMessage"});
    let url = w.catalog_url();
    let send = |auth: Option<String>| {
        let (w, url, request) = (&w, url.clone(), request.clone());
        async move {
            w.consumer
                .catalog_with(&w.node, &url, auth.as_deref(), &request)
                .await
        }
    };
    // Raw and Bearer both work.
    let token = w.consumer.token(&w.node);
    assert_eq!(send(Some(token)).await.status(), StatusCode::OK);
    let bearer = format!("Bearer {}", w.consumer.token(&w.node));
    assert_eq!(send(Some(bearer.clone())).await.status(), StatusCode::OK);
    // The same token again: a replay.
    assert_dsp_error(
        send(Some(bearer)).await,
        StatusCode::UNAUTHORIZED,
        "CatalogError",
    )
    .await;
    // ES256 with the participant's P-256 key; not with the Ed25519 key's kid, nor EdDSA with
    // the P-256 key's.
    let mut claims = w.consumer.claims(&w.node);
    claims.kid = Some(format!("{}#ec-1", w.consumer.did));
    assert_eq!(
        send(Some(w.consumer.sign_es256(&claims))).await.status(),
        StatusCode::OK
    );
    claims.jti = uuid::Uuid::new_v4().to_string();
    let r = send(Some(w.consumer.sign(&claims))).await;
    assert_dsp_error(r, StatusCode::UNAUTHORIZED, "CatalogError").await;
    let mut claims = w.consumer.claims(&w.node);
    claims.kid = Some(format!("{}#key-1", w.consumer.did));
    let r = send(Some(w.consumer.sign_es256(&claims))).await;
    assert_dsp_error(r, StatusCode::UNAUTHORIZED, "CatalogError").await;
    assert_dsp_error(send(None).await, StatusCode::UNAUTHORIZED, "CatalogError").await;
    let now = chrono::Utc::now().timestamp();
    let bad: Vec<(&str, Change)> = vec![
        (
            "expired",
            Box::new(move |c| (c.iat, c.exp) = (now - 600, now - 300)),
        ),
        (
            "issued in the future",
            Box::new(move |c| (c.iat, c.exp) = (now + 3600, now + 3700)),
        ),
        ("too long", Box::new(move |c| c.exp = now + 3600)),
        // A lifetime that would wrap around: issued long ago, valid for ever.
        ("wrapping", Box::new(|c| (c.iat, c.exp) = (-1, i64::MAX))),
        (
            "another audience",
            Box::new(|c| c.aud = "did:web:elsewhere.example".into()),
        ),
        (
            "sub is not iss",
            Box::new(|c| c.sub = format!("{}x", c.sub)),
        ),
        (
            "a key not for invocation",
            Box::new(|c| c.kid = Some(format!("{}#auth-only", c.iss))),
        ),
        (
            "no such key",
            Box::new(|c| c.kid = Some(format!("{}#key-9", c.iss))),
        ),
        (
            "a participant on no partner host",
            Box::new(|c| {
                c.iss = "did:web:127.0.0.1%3A9:org:connector".into();
                c.sub = c.iss.clone();
                c.kid = Some(format!("{}#key-1", c.iss));
            }),
        ),
    ];
    for (why, change) in bad {
        let mut claims = w.consumer.claims(&w.node);
        change(&mut claims);
        let r = send(Some(w.consumer.sign(&claims))).await;
        let body = assert_dsp_error(r, StatusCode::UNAUTHORIZED, "CatalogError").await;
        assert!(
            body["reason"][0]
                .as_str()
                .unwrap()
                .contains("DSP token rejected"),
            "{why}: {body}"
        );
    }
    // A node token (another kind of token) and garbage are refused too.
    assert_dsp_error(
        send(Some("Bearer x.y.z".into())).await,
        StatusCode::UNAUTHORIZED,
        "CatalogError",
    )
    .await;
    // So is a participant's token on a dataset read.
    let path = w
        .node
        .url("/dsp/2025-1/catalog/datasets/urn%3Adataspace-node%3Adataset%3Ax");
    let r = w.node.client.get(path).send().await.unwrap();
    assert_dsp_error(r, StatusCode::UNAUTHORIZED, "CatalogError").await;
}

#[tokio::test]
async fn malformed_catalog_requests_are_400_catalog_errors() {
    let w = World::new().await;
    let url = w.catalog_url();
    for bad in [
        json!({"@type": "CatalogRequestMessage"}),
        json!({"@context": ["https://example.com/ctx"], "@type": "CatalogRequestMessage"}),
        json!({"@context": [CONTEXT], "@type": "ContractRequestMessage"}),
        json!({"@context": [CONTEXT], "@type": "CatalogRequestMessage", "filter": [{"q": "x"}]}),
        json!([CONTEXT]),
    ] {
        let token = w.consumer.token(&w.node);
        let r = w
            .consumer
            .catalog_with(&w.node, &url, Some(&token), &bad)
            .await;
        assert_dsp_error(r, StatusCode::BAD_REQUEST, "CatalogError").await;
    }
    let r = w
        .node
        .client
        .post(&url)
        .header("authorization", w.consumer.token(&w.node))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_dsp_error(r, StatusCode::BAD_REQUEST, "CatalogError").await;
    let r = w
        .consumer
        .catalog_with(
            &w.node,
            &format!("{url}?cursor=nonsense"),
            Some(&w.consumer.token(&w.node)),
            &json!({"@context": [CONTEXT], "@type": "CatalogRequestMessage"}),
        )
        .await;
    assert_dsp_error(r, StatusCode::BAD_REQUEST, "CatalogError").await;
}

#[tokio::test]
async fn participants_need_partner_hosts_listed_one_by_one() {
    let consumer = Consumer::serve(TcpListener::bind("127.0.0.1:0").await.unwrap()).await;
    let host = consumer.host.clone();
    let node = TestNode::start_with(move |c| {
        c.federation_partners = vec!["*".into()];
        c.federation_allow_http = vec![host];
    })
    .await;
    let request = json!({"@context": [CONTEXT], "@type": "CatalogRequestMessage"});
    let url = node.url("/dsp/2025-1/catalog/request");
    let token = consumer.token(&node);
    let r = consumer
        .catalog_with(&node, &url, Some(&token), &request)
        .await;
    let body = assert_dsp_error(r, StatusCode::UNAUTHORIZED, "CatalogError").await;
    assert!(
        body["reason"][0]
            .as_str()
            .unwrap()
            .contains("--federation-partners"),
        "{body}"
    );
}
