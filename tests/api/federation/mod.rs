//! Federation: nodes in one process on loopback ports — a trader on node A, the Kenyan border
//! agency on node B, the KEMBA terminal operator on node C — and a partner node written here
//! (`fake`). One file per job; the helpers they share are here.

mod fake;
mod limits;
mod nodes;
mod outbox;
mod records;
mod trust;

use std::future::Future;
use std::time::Duration;

use dataspace_node::federation::token::Tokens;
use dataspace_node::store::graphs;
use dataspace_node::Config;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::common::*;

/// Listeners for `n` nodes and the allow-list that lets each reach the others over HTTP.
async fn listeners(n: usize) -> (Vec<TcpListener>, Vec<String>) {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let hosts = out
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    (out, hosts)
}

async fn federated(listener: TcpListener, hosts: &[String]) -> TestNode {
    federated_with(listener, hosts, |_| {}).await
}

/// A node of the federation with options of its own.
async fn federated_with(
    listener: TcpListener,
    hosts: &[String],
    adjust: impl FnOnce(&mut Config),
) -> TestNode {
    let hosts = hosts.to_vec();
    TestNode::start_on(listener, move |c| {
        c.federation_allow_http = hosts;
        c.federation_timeout_ms = 1500;
        adjust(c);
    })
    .await
}

fn did_of(node: &TestNode) -> String {
    let host = node.base.trim_start_matches("http://").replace(':', "%3A");
    format!("did:web:{host}")
}

/// Polls `check` until it gives `Some` (notices travel after the publish answered).
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    for _ in 0..150 {
        if let Some(v) = check().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for: {what}");
}

fn event_codes(events: &Value) -> Vec<String> {
    let mut codes: Vec<String> = events["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["typeCode"].as_str().map(str::to_owned))
        .collect();
    codes.sort();
    codes
}

async fn shared_notification(session: &Session, node: &TestNode) -> Option<Value> {
    let v = get_json(session, node, NOTIFICATIONS).await;
    v["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["type"] == "ConsignmentShared")
        .cloned()
}

/// A valid node token of `node` (read from its key file), as its organisation `org`.
fn token_of(node: &TestNode, org: &str, audience: &str) -> String {
    let seed = std::fs::read_to_string(node.data_dir().join("secrets/node-ed25519-key")).unwrap();
    let key = key_from(seed.trim());
    Tokens::new(did_of(node), &key)
        .unwrap()
        .issue(org, audience)
        .unwrap()
}

fn key_from(seed: &str) -> ed25519_dalek::SigningKey {
    use base64::Engine;
    let bytes: [u8; 32] = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(seed)
        .unwrap()
        .try_into()
        .unwrap();
    ed25519_dalek::SigningKey::from_bytes(&bytes)
}

/// POSTs `notice` to `to`'s federation inbox as organisation `org` of node `from`.
async fn notify(from: &TestNode, org: &str, to: &TestNode, notice: &Value) -> reqwest::Response {
    to.client
        .post(to.url("/federation/inbox"))
        .bearer_auth(token_of(from, org, &did_of(to)))
        .json(notice)
        .send()
        .await
        .unwrap()
}

/// Node A, and an organisation of node C that shares consignments with A's organisations by
/// notices the tests write.
async fn a_and_a_partner() -> (TestNode, TestNode, String) {
    let (mut ls, hosts) = listeners(2).await;
    let c_listener = ls.pop().unwrap();
    let a = federated(ls.pop().unwrap(), &hosts).await;
    let c = federated(c_listener, &hosts).await;
    let partner = format!("{}:org:0a1b2c3d4e5f", did_of(&c));
    (a, c, partner)
}

/// `partner`'s notice sharing its consignment `hex` with `to`, created at `created`.
fn announce(partner: &str, hex: &str, to: &str, created: &str) -> Value {
    json!({
        "@context": "https://www.w3.org/ns/activitystreams", "type": "Announce",
        "actor": partner, "to": [to], "published": "2026-11-26T00:00:01Z",
        "object": {"type": "Dataset", "id": graphs::contribution(hex, partner).as_str(),
                   "created": created,
                   "consignment": {"globalId": format!("urn:uuid:{hex}"),
                                   "identifier": format!("P-{hex}"), "aigId": format!("aig:{hex}")}}
    })
}

/// Node A with a trader, node B with an agency, and A's operator's policy sharing what
/// arrives in Kenya with the agency.
async fn a_trader_and_a_partners_agency() -> (TestNode, TestNode, Operator, Session, Session, Value)
{
    let (mut ls, hosts) = listeners(2).await;
    let b_listener = ls.pop().unwrap();
    let a = federated(ls.pop().unwrap(), &hosts).await;
    let b = federated(b_listener, &hosts).await;
    let operator = Operator::new(&a).await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let agency = Session::new(&b, "officer@kra.example").await;
    let policy = operator
        .policy(
            &a,
            rule(&a, agency.org(), "portOfEntryCountry", "eq", json!("KE")),
        )
        .await;
    (a, b, operator, trader, agency, policy)
}

/// Publishes `n` consignments arriving at Mombasa on `node`; their globalIds, newest first
/// (as notification lists answer).
async fn publish_to_mombasa(trader: &Session, node: &TestNode, n: u32) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 1..=n {
        let activity = consignment_at(trader.org(), i, "KEMBA", "2026-12-24T06:00:00Z");
        ids.insert(
            0,
            activity["object"]["globalId"].as_str().unwrap().to_owned(),
        );
        assert_completed(&trader.publish(node, &activity).await);
    }
    ids
}

/// The globalIds of `session`'s ConsignmentShared notifications (newest first) once there
/// are `n`.
async fn shared_ids(session: &Session, node: &TestNode, n: usize) -> Option<Vec<String>> {
    let v = get_json(session, node, NOTIFICATIONS).await;
    let ids: Vec<String> = v["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["type"] == "ConsignmentShared")
        .filter_map(|n| n["consignment"]["globalId"].as_str().map(str::to_owned))
        .collect();
    (ids.len() >= n).then_some(ids)
}
