//! Federation: three nodes in one process on loopback ports — a trader on node A, the Kenyan
//! border agency on node B, the KEMBA terminal operator on node C.

use std::future::Future;
use std::time::Duration;

use dataspace_node::federation::token::Tokens;
use dataspace_node::store::graphs;
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
    let hosts = hosts.to_vec();
    TestNode::start_on(listener, move |c| {
        c.federation_allow_http = hosts;
        c.federation_timeout_ms = 1500;
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

#[tokio::test]
async fn did_documents_name_the_key_and_the_federation_endpoint() {
    let node = TestNode::start().await;
    let r = node
        .client
        .get(node.url("/.well-known/did.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let doc = json_body(r).await;
    let did = did_of(&node);
    assert_eq!(doc["id"], did);
    let method = &doc["verificationMethod"][0];
    assert_eq!(method["id"], format!("{did}#node-key"));
    assert_eq!(method["publicKeyJwk"]["crv"], "Ed25519");
    assert_eq!(doc["service"][0]["type"], "DataspaceNodeFederation");
    assert_eq!(
        doc["service"][0]["serviceEndpoint"],
        node.url("/federation")
    );

    let trader = Session::new(&node, "trader@forwarder.example").await;
    let id = trader.org().rsplit(':').next().unwrap().to_owned();
    let r = node
        .client
        .get(node.url(&format!("/org/{id}/did.json")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let org_doc = json_body(r).await;
    assert_eq!(org_doc["id"], trader.org());
    assert_eq!(org_doc["controller"], did);
    assert_eq!(
        org_doc["verificationMethod"][0],
        doc["verificationMethod"][0]
    );
    let r = node
        .client
        .get(node.url("/org/0123456789abcdef0123456789abcdef/did.json"))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}

#[tokio::test]
async fn three_nodes_share_pull_contribute_and_survive_a_provider_outage() {
    let (mut ls, hosts) = listeners(3).await;
    let c_listener = ls.pop().unwrap();
    let b_listener = ls.pop().unwrap();
    let a_listener = ls.pop().unwrap();
    let a = federated(a_listener, &hosts).await;
    let b = federated(b_listener, &hosts).await;
    let c = federated(c_listener, &hosts).await;
    let operator = Operator::new(&a).await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let agency = Session::new(&b, "officer@kra.example").await;
    let terminal = Session::new(&c, "ops@kemba-terminal.example").await;
    // A port-health officer on A itself, in the same circle.
    let health = Session::new(&a, "officer@port-health.example").await;
    operator
        .policy(
            &a,
            rule(&a, health.org(), "portOfEntryCountry", "eq", json!("KE")),
        )
        .await;
    operator
        .policy(
            &a,
            rule(&a, agency.org(), "portOfEntryCountry", "eq", json!("KE")),
        )
        .await;
    operator
        .policy(
            &a,
            rule(&a, terminal.org(), "portOfEntry", "eq", json!("KEMBA")),
        )
        .await;
    trader.publish_example(&a, "create-consignment").await;

    // Publishing on A reaches B and C as notifications naming A's dataset.
    let note = eventually("B notified", || shared_notification(&agency, &b)).await;
    assert_eq!(note["provider"], trader.org());
    assert_eq!(note["consignment"]["globalId"], GLOBAL_ID);
    let dataset = note["datasetId"].as_str().unwrap().to_owned();
    let note_c = eventually("C notified", || shared_notification(&terminal, &c)).await;
    assert_eq!(note_c["datasetId"], dataset);
    // Nothing on A itself is notified for organisations that live elsewhere.
    let own = get_json(&trader, &a, NOTIFICATIONS).await;
    assert_eq!(own["entities"], json!([]));

    // B lists and views it with `shared`, pulled from A.
    let list = get_json(&agency, &b, &format!("{LIST}?scope=shared")).await;
    assert_eq!(list["entities"].as_array().unwrap().len(), 1, "{list:#}");
    assert_eq!(list["entities"][0]["identifier"], "FWD-2026-000417");
    assert_eq!(list["entities"][0]["portOfEntryCode"], "KEMBA");
    assert!(list.get("warnings").is_none(), "{list:#}");
    assert_eq!(
        get_json(&agency, &b, &format!("{LIST}?scope=own")).await["entities"],
        json!([])
    );
    let view = get_json(&agency, &b, &format!("{LIST}/{GLOBAL_ID}?scope=shared")).await;
    assert_eq!(view["id"], list["entities"][0]["id"]);
    assert!(!view["includedConsignments"].as_array().unwrap().is_empty());
    let r = agency
        .get(&b, &format!("{LIST}/{GLOBAL_ID}?scope=own"))
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;

    // A's document reaches B with links on A's node, which serve its bytes.
    let bytes = b"commercial invoice 4711".to_vec();
    let document = add_document(trader.org(), &data_url("text/plain", &bytes), "INV-4711");
    assert_completed(&trader.publish(&a, &document).await);
    let view = get_json(&agency, &b, &format!("{LIST}/{GLOBAL_ID}")).await;
    let record = &view["documents"][0];
    assert_eq!(record["id"], "INV-4711", "{view:#}");
    assert!(
        record["href"].as_str().unwrap().starts_with(&a.base),
        "{record}"
    );
    let docs = get_json(&agency, &b, &format!("{LIST}/{GLOBAL_ID}/documents")).await;
    assert_eq!(docs["entities"][0]["documentId"], "INV-4711", "{docs:#}");
    let one = get_json(
        &agency,
        &b,
        &format!("{LIST}/{GLOBAL_ID}/documents/INV-4711"),
    )
    .await;
    let href = one["href"].as_str().unwrap();
    assert!(href.starts_with(&a.base), "{one}");
    let r = b.client.get(href).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.bytes().await.unwrap().to_vec(), bytes);

    // B adds an inspection event; A then sees it with `all` (offered back, pulled from B).
    assert_completed(&agency.publish(&b, &inspection(agency.org())).await);
    let path = format!("{LIST}/{GLOBAL_ID}/events?scope=all");
    eventually("A sees B's event", || async {
        let events = get_json(&trader, &a, &path).await;
        event_codes(&events)
            .contains(&"kra:inspection-completed".to_owned())
            .then_some(())
    })
    .await;
    let own_events = get_json(&trader, &a, &format!("{LIST}/{GLOBAL_ID}/events?scope=own")).await;
    assert!(!event_codes(&own_events).contains(&"kra:inspection-completed".to_owned()));
    let events_on_b = get_json(&agency, &b, &path).await;
    assert!(event_codes(&events_on_b).contains(&"kra:inspection-completed".to_owned()));
    // C, in the circle on A but not told of B's contribution, sees only what A holds.
    let events_on_c = get_json(&terminal, &c, &path).await;
    assert!(!event_codes(&events_on_c).contains(&"kra:inspection-completed".to_owned()));
    // What a circle member on A contributes reaches B and C with the publisher's dataset.
    assert_completed(
        &health
            .publish(&a, &event_on_example(health.org(), "kph:cleared"))
            .await,
    );
    for (session, node) in [(&agency, &b), (&terminal, &c)] {
        let codes = event_codes(&get_json(session, node, &path).await);
        assert!(codes.contains(&"kph:cleared".to_owned()), "{codes:?}");
    }

    // A stops: B's list still answers, with a warning for A's dataset; its events read keeps
    // B's own event.
    let halted = a.halt().await;
    let list = get_json(&agency, &b, &format!("{LIST}?scope=all")).await;
    assert_eq!(list["entities"], json!([]), "{list:#}");
    assert_eq!(
        list["warnings"],
        json!([{"code": "discoveryFailed", "provider": trader.org(), "datasetId": dataset}])
    );
    let events = get_json(&agency, &b, &path).await;
    assert_eq!(event_codes(&events), vec!["kra:inspection-completed"]);
    let r = terminal.get(&c, &format!("{LIST}/{GLOBAL_ID}")).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;

    // A is back: the warning is gone.
    let a = TestNode::start_again(halted).await;
    let list = get_json(&agency, &b, &format!("{LIST}?scope=all")).await;
    assert_eq!(list["entities"].as_array().unwrap().len(), 1, "{list:#}");
    assert!(list.get("warnings").is_none(), "{list:#}");
    drop(a);
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

async fn pull(node: &TestNode, dataset: &str, token: &str) -> reqwest::Response {
    node.client
        .get(node.url("/federation/datasets"))
        .query(&[("id", dataset)])
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn node_tokens_are_verified_and_pulls_need_a_grant() {
    let (mut ls, hosts) = listeners(2).await;
    let b_listener = ls.pop().unwrap();
    let a = federated(ls.pop().unwrap(), &hosts).await;
    let b = federated(b_listener, &hosts).await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let agency = Session::new(&b, "officer@kra.example").await;
    trader.publish_example(&a, "create-consignment").await;
    let list = get_json(&trader, &a, LIST).await;
    let aig = list["entities"][0]["aigId"].as_str().unwrap();
    let dataset = graphs::contribution(aig.trim_start_matches("aig:"), trader.org()).into_string();

    // A real token of B for its agency, but no policy shares the consignment with it.
    let token = token_of(&b, agency.org(), &did_of(&a));
    let r = pull(&a, &dataset, &token).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    // The same token again is a replay.
    let r = pull(&a, &dataset, &token).await;
    let body = assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    assert!(body.to_string().contains("replayed"), "{body}");

    // Forged: B's DID, another key.
    let forged = Tokens::new(did_of(&b), &ed25519_dalek::SigningKey::from_bytes(&[9; 32]))
        .unwrap()
        .issue(agency.org(), &did_of(&a))
        .unwrap();
    let r = pull(&a, &dataset, &forged).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // B's key, but acting for an organisation of another node.
    let r = pull(&a, &dataset, &token_of(&b, trader.org(), &did_of(&a))).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // Meant for another node.
    let r = pull(&a, &dataset, &token_of(&b, agency.org(), &did_of(&b))).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // A valid token of a node that is not one of A's partners: its DID is never fetched.
    let stranger = TestNode::start().await;
    let outsider = Session::new(&stranger, "someone@elsewhere.example").await;
    let r = pull(
        &a,
        &dataset,
        &token_of(&stranger, outsider.org(), &did_of(&a)),
    )
    .await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // A session token is not a node token.
    let r = pull(&a, &dataset, &trader.token).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // A notice claiming to come from an organisation the calling node does not act for.
    let notice = json!({
        "@context": "https://www.w3.org/ns/activitystreams", "type": "Announce",
        "actor": trader.org(), "to": [agency.org()], "published": "2026-11-22T00:00:00Z",
        "object": {"type": "Dataset", "id": dataset, "created": "2026-11-22T00:00:00Z",
                   "consignment": {"globalId": GLOBAL_ID, "identifier": "X", "aigId": aig}}
    });
    let r = b
        .client
        .post(b.url("/federation/inbox"))
        .bearer_auth(token_of(&a, agency.org(), &did_of(&b)))
        .json(&notice)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    let r = b
        .client
        .post(b.url("/federation/inbox"))
        .bearer_auth(token_of(&a, agency.org(), &did_of(&b)).replace('.', "x"))
        .json(&notice)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // Nothing reached the agency.
    assert_eq!(
        get_json(&agency, &b, NOTIFICATIONS).await["entities"],
        json!([])
    );
}

/// A token of `node` for `org` with the given `iat` and `exp`, signed with the node's key.
fn token_dated(node: &TestNode, org: &str, audience: &str, iat: i64, exp: i64) -> String {
    use ed25519_dalek::pkcs8::EncodePrivateKey;
    let seed = std::fs::read_to_string(node.data_dir().join("secrets/node-ed25519-key")).unwrap();
    let der = key_from(seed.trim()).to_pkcs8_der().unwrap();
    let did = did_of(node);
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some(format!(
        "{did}#{}",
        dataspace_node::federation::did::KEY_FRAGMENT
    ));
    let claims = json!({"iss": did, "sub": org, "aud": audience, "iat": iat, "exp": exp,
                        "jti": uuid::Uuid::new_v4().to_string()});
    let key = jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes());
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

/// A token cannot be made to last: one dated ahead of the receiver's clock is refused (it
/// could be kept and used later), as is one valid for longer than 300 s; and one the
/// receiver accepted before a restart is still a replay after it.
#[tokio::test]
async fn node_tokens_cannot_be_kept_for_later() {
    let (mut ls, hosts) = listeners(2).await;
    let b_listener = ls.pop().unwrap();
    let a = federated(ls.pop().unwrap(), &hosts).await;
    let b = federated(b_listener, &hosts).await;
    let agency = Session::new(&b, "officer@kra.example").await;
    let dataset =
        graphs::contribution("5a5a5a5a5a5a4a5a8a5a5a5a5a5a5a5a", agency.org()).into_string();
    let now = chrono::Utc::now().timestamp();
    let ten_years = 10 * 365 * 86_400;
    let cases = [
        (now + ten_years, now + ten_years + 60, "ahead"),
        (now + 120, now + 180, "ahead"),
        (now - 10, now + 600, "lifetime"),
    ];
    for (iat, exp, why) in cases {
        let token = token_dated(&b, agency.org(), &did_of(&a), iat, exp);
        let r = pull(&a, &dataset, &token).await;
        let body = assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
        assert!(body.to_string().contains(why), "{iat} {exp}: {body}");
    }
    // Within the leeway, and valid: accepted (404: nothing is shared with the agency).
    let token = token_dated(&b, agency.org(), &did_of(&a), now + 5, now + 65);
    assert_eq!(
        pull(&a, &dataset, &token).await.status(),
        StatusCode::NOT_FOUND
    );

    // Used once, then A restarts (a clean stop, then a crash): still a replay.
    let used = token_of(&b, agency.org(), &did_of(&a));
    assert_eq!(
        pull(&a, &dataset, &used).await.status(),
        StatusCode::NOT_FOUND
    );
    let a = TestNode::start_again(a.halt().await).await;
    let body = assert_error(
        pull(&a, &dataset, &used).await,
        StatusCode::UNAUTHORIZED,
        "UnauthorizedError",
    )
    .await;
    assert!(body.to_string().contains("replayed"), "{body}");
    let a = crashed_and_restarted(a).await;
    for t in [&used, &token] {
        let body = assert_error(
            pull(&a, &dataset, t).await,
            StatusCode::UNAUTHORIZED,
            "UnauthorizedError",
        )
        .await;
        assert!(body.to_string().contains("replayed"), "{body}");
    }
    // A fresh token still works.
    let fresh = token_of(&b, agency.org(), &did_of(&a));
    assert_eq!(
        pull(&a, &dataset, &fresh).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn notices_wait_in_the_outbox_until_the_receiver_is_back() {
    let (a, b, _operator, trader, agency, _) = a_trader_and_a_partners_agency().await;
    let b_halted = b.halt().await;
    // Several, so that their order after the restart is checked too: A's store returns the
    // waiting notices in the order of their ids' hashes, not the order they were queued in.
    let expected = publish_to_mombasa(&trader, &a, 6).await;
    // A restarts while B is still down: the notices are kept in A's store.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let a = TestNode::start_again(a.halt().await).await;
    let b = TestNode::start_again(b_halted).await;
    let note = eventually("B notified after coming back", || {
        shared_notification(&agency, &b)
    })
    .await;
    assert_eq!(note["provider"], trader.org());
    // Every one, in the order A's trader published them.
    let at_b = eventually("B told of all six", || shared_ids(&agency, &b, 6)).await;
    assert_eq!(at_b, expected);
    let list = get_json(&agency, &b, LIST).await;
    assert_eq!(list["entities"].as_array().unwrap().len(), 6, "{list:#}");
    drop(a);
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

#[tokio::test]
async fn a_partner_that_is_down_holds_back_only_its_own_notices_and_gets_them_in_order() {
    let (mut ls, hosts) = listeners(3).await;
    let c_listener = ls.pop().unwrap();
    let b_listener = ls.pop().unwrap();
    let a = federated(ls.pop().unwrap(), &hosts).await;
    let b = federated(b_listener, &hosts).await;
    let c = federated(c_listener, &hosts).await;
    let operator = Operator::new(&a).await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let agency = Session::new(&b, "officer@kra.example").await;
    let port = Session::new(&c, "operator@port.example").await;
    for org in [agency.org(), port.org()] {
        operator
            .policy(&a, rule(&a, org, "portOfEntryCountry", "eq", json!("KE")))
            .await;
    }
    let b_halted = b.halt().await;
    let expected = publish_to_mombasa(&trader, &a, 3).await;
    // C hears of each while B is down, in the order they were shared.
    let at_c = eventually("C told of all three", || shared_ids(&port, &c, 3)).await;
    assert_eq!(at_c, expected);
    // B, back, gets what waited for it, in the same order.
    let b = TestNode::start_again(b_halted).await;
    let at_b = eventually("B told of all three", || shared_ids(&agency, &b, 3)).await;
    assert_eq!(at_b, expected);
    drop(a);
}

#[tokio::test]
async fn policies_name_organisations_of_partner_nodes_only() {
    let node =
        TestNode::start_with(|c| c.federation_partners = vec!["partner.example".into()]).await;
    let operator = Operator::new(&node).await;
    operator
        .policy(
            &node,
            rule(
                &node,
                "did:web:partner.example:org:ab12",
                "portOfEntryCountry",
                "eq",
                json!("KE"),
            ),
        )
        .await;
    for stranger in [
        "did:web:elsewhere.example:org:ab12",
        "did:web:partner.example:user:ab12",
    ] {
        let r = operator
            .try_policy(
                &node,
                rule(&node, stranger, "portOfEntryCountry", "eq", json!("KE")),
            )
            .await;
        let body = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert!(body.to_string().contains("assignee"), "{body}");
    }
    // Without partners (the default), only this node's organisations.
    let single = TestNode::start().await;
    let operator = Operator::new(&single).await;
    let r = operator
        .try_policy(
            &single,
            rule(
                &single,
                "did:web:partner.example:org:ab12",
                "portOfEntryCountry",
                "eq",
                json!("KE"),
            ),
        )
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
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

#[tokio::test]
async fn a_partner_organisation_with_a_local_id_segment_names_graphs_of_its_own() {
    let (mut ls, hosts) = listeners(2).await;
    let c_listener = ls.pop().unwrap();
    let a = federated(ls.pop().unwrap(), &hosts).await;
    let c = federated(c_listener, &hosts).await;
    let operator = Operator::new(&a).await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    // An organisation of node C whose DID ends in the trader's id segment.
    let segment = trader.org().rsplit(':').next().unwrap();
    let twin = format!("{}:org:{segment}", did_of(&c));
    operator
        .policy(&a, rule(&a, &twin, "portOfEntryCountry", "eq", json!("KE")))
        .await;
    trader.publish_example(&a, "create-consignment").await;
    let list = get_json(&trader, &a, LIST).await;
    let aig = list["entities"][0]["aigId"].as_str().unwrap().to_owned();
    let hex = aig.trim_start_matches("aig:");
    let own = graphs::contribution(hex, trader.org()).into_string();
    let theirs = graphs::contribution(hex, &twin).into_string();
    assert_ne!(own, theirs);
    let offer = |dataset: &str| {
        json!({
            "@context": "https://www.w3.org/ns/activitystreams", "type": "Offer",
            "actor": twin, "to": [trader.org()], "published": "2026-11-22T00:00:01Z",
            "object": {"type": "Dataset", "id": dataset, "created": "2026-11-22T00:00:00Z",
                       "consignment": {"globalId": GLOBAL_ID, "identifier": "FWD-2026-000417",
                                       "aigId": aig}}
        })
    };
    // Naming the trader's own dataset (what the id segment named before) is refused...
    let r = notify(&c, &twin, &a, &offer(&own)).await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    // ...its own dataset is recorded (before, the shared segment was refused with 409).
    let r = notify(&c, &twin, &a, &offer(&theirs)).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    // The trader's consignment is still its own.
    let view = get_json(&trader, &a, &format!("{LIST}/{GLOBAL_ID}?scope=own")).await;
    assert_eq!(view["id"], aig, "{view:#}");
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

/// `node` as after a crash: stopped, its models snapshot gone, started again (the models are
/// rebuilt from the store).
async fn crashed_and_restarted(node: TestNode) -> TestNode {
    let (config, addr, dir) = node.halt().await;
    std::fs::remove_file(config.data_dir.join("models.snapshot")).unwrap();
    TestNode::start_again((config, addr, dir)).await
}

/// A share from a partner node leaves the partner's record in this node's index, dated by the
/// partner — here far ahead. It is held to this node's clock when it arrives, the rebuilt own
/// lists (a start after a crash) leave the partner's record out as the running node did, and
/// this node's stamps do not move: a Create after the rebuild is dated now.
#[tokio::test]
async fn a_partners_record_dated_ahead_moves_no_stamp_after_a_rebuild() {
    let (a, c, partner) = a_and_a_partner().await;
    let agency = Session::new(&a, "officer@kra.example").await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let hex = "5a5a5a5a5a5a4a5a8a5a5a5a5a5a5a5a";
    let announce = |created: &str| announce(&partner, hex, agency.org(), created);
    let r = notify(&c, &partner, &a, &announce("2099-01-01T00:00:00Z")).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    // A partner's consignment may not take an id of the aig form either.
    let mut squat = announce("2026-11-26T00:00:00Z");
    squat["object"]["consignment"]["identifier"] = json!(format!("aig:{hex}"));
    let r = notify(&c, &partner, &a, &squat).await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    // In the agency's shared list (node C holds no such dataset: a warning in its place).
    let shared = get_json(&agency, &a, &format!("{LIST}?scope=shared")).await;
    assert_eq!(
        shared["warnings"][0]["datasetId"],
        graphs::contribution(hex, &partner).as_str(),
        "{shared:#}"
    );

    let a = crashed_and_restarted(a).await;
    let trader = trader.logged_in_again(&a).await;
    let before = chrono::Utc::now();
    trader.publish_example(&a, "create-consignment").await;
    let list = get_json(&trader, &a, LIST).await;
    let rows = list["entities"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{list:#}");
    let created =
        chrono::DateTime::parse_from_rfc3339(rows[0]["dateCreated"].as_str().unwrap()).unwrap();
    assert!(
        created.signed_duration_since(before).num_minutes() < 10,
        "dated by this node's clock: {created}"
    );
}

/// A partner's consignment shared with a second receiver on this node keeps the date it was
/// first stored with, whatever the second notice says: both receivers' lists order it by that
/// date, while the node runs and after a rebuild of the lists from the store (a crash).
#[tokio::test]
async fn a_second_share_of_a_partners_consignment_keeps_its_stored_date() {
    let (a, c, partner) = a_and_a_partner().await;
    let first = Session::new(&a, "officer@kra.example").await;
    let second = Session::new(&a, "officer@tra.example").await;
    let dataset = |hex: &str| graphs::contribution(hex, &partner).into_string();
    let (p, q) = (
        "5a5a5a5a5a5a4a5a8a5a5a5a5a5a5a01",
        "5a5a5a5a5a5a4a5a8a5a5a5a5a5a5a02",
    );
    for (hex, to, created) in [
        (p, first.org(), "2026-01-01T00:00:00Z"),
        (p, second.org(), "2026-06-01T00:00:00Z"),
        (q, second.org(), "2026-03-01T00:00:00Z"),
    ] {
        let r = notify(&c, &partner, &a, &announce(&partner, hex, to, created)).await;
        assert_eq!(r.status(), StatusCode::ACCEPTED);
    }
    // Node C holds no such datasets: each row is a warning, in list order.
    let order = |list: &Value| -> Vec<String> {
        list["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["datasetId"].as_str().unwrap().to_owned())
            .collect()
    };
    let expected = vec![dataset(q), dataset(p)];
    let shared = format!("{LIST}?scope=shared");
    assert_eq!(order(&get_json(&second, &a, &shared).await), expected);

    let a = crashed_and_restarted(a).await;
    let second = second.logged_in_again(&a).await;
    assert_eq!(order(&get_json(&second, &a, &shared).await), expected);
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

/// Deletes the policy `uid` on `node` (204).
async fn delete_policy(operator: &Operator, node: &TestNode, uid: &str) {
    let path = format!("{POLICIES}/{}", percent_encoded(uid));
    let r = operator
        .send(node, reqwest::Method::DELETE, &path, None)
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
}

/// Deleting the policy that shared a consignment with a partner node's organisation reaches
/// that node: the organisation's circle loses it, as a local agency's does — its lists neither
/// show it nor keep asking the provider for it.
#[tokio::test]
async fn a_deleted_policy_withdraws_the_share_on_the_partner_node() {
    let (a, b, operator, trader, agency, policy) = a_trader_and_a_partners_agency().await;
    trader.publish_example(&a, "create-consignment").await;
    eventually("B notified", || shared_notification(&agency, &b)).await;
    let shared = format!("{LIST}?scope=shared");
    assert_eq!(
        get_json(&agency, &b, &shared).await["entities"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    delete_policy(&operator, &a, policy["uid"].as_str().unwrap()).await;
    // A refuses B's pulls at once; the withdrawal then takes the record out of B's circle, so
    // B's list stops trying (and warning that the provider did not answer).
    eventually("B's list without it, and no failed pull", || async {
        let list = get_json(&agency, &b, &shared).await;
        (list == json!({"entities": []})).then_some(())
    })
    .await;
    let view = agency
        .get(&b, &format!("{LIST}/{GLOBAL_ID}?scope=shared"))
        .await;
    assert_error(view, StatusCode::NOT_FOUND, "GeneralError").await;
}

/// A share withdrawn while its notice still waits for a partner that is down never reaches
/// the partner: the waiting notice is dropped, and the withdrawal changes nothing there.
#[tokio::test]
async fn a_share_withdrawn_before_its_notice_left_never_reaches_the_partner() {
    let (a, b, operator, trader, agency, by_country) = a_trader_and_a_partners_agency().await;
    let b_halted = b.halt().await;
    trader.publish_example(&a, "create-consignment").await;
    delete_policy(&operator, &a, by_country["uid"].as_str().unwrap()).await;
    // A later share by another policy: once B has it, anything queued before it for B
    // would have arrived (notices reach a receiver in the order they were queued).
    operator
        .policy(
            &a,
            rule(&a, agency.org(), "portOfEntry", "eq", json!("KEMBA")),
        )
        .await;
    let later = publish_to_mombasa(&trader, &a, 1).await;
    let b = TestNode::start_again(b_halted).await;
    let at_b = eventually("B told of the later one", || shared_ids(&agency, &b, 1)).await;
    assert_eq!(at_b, later, "only the later share reached B");
    let list = get_json(&agency, &b, &format!("{LIST}?scope=shared")).await;
    let ids: Vec<&Value> = list["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["globalId"])
        .collect();
    assert_eq!(ids, vec![&json!(later[0])], "{list:#}");
    drop(a);
}

/// A partner node may announce any number of its organisations' consignments under one id.
/// Announced to the organisation that publishes a consignment under that id here (and to
/// the agency it is shared with), they must not push the real one out of the id's look-up:
/// the publisher still reads its own, the agency still finds it among the candidates.
#[tokio::test]
async fn announcements_under_a_taken_id_do_not_hide_the_real_consignment() {
    let (a, c, _) = a_and_a_partner().await;
    let (_operator, trader, agency) = kenya_circle(&a).await;
    trader.publish_example(&a, "create-consignment").await;
    let own = get_json(&trader, &a, &format!("{LIST}/{GLOBAL_ID}")).await;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    for n in 0..(dataspace_node::store::index::MAX_MATCHES + 5) {
        let partner = format!("{}:org:squatter{n}", did_of(&c));
        let hex = format!("{n:032x}");
        for to in [trader.org(), agency.org()] {
            let mut notice = announce(&partner, &hex, to, &now);
            notice["object"]["consignment"]["globalId"] = json!(GLOBAL_ID);
            assert_eq!(
                notify(&c, &partner, &a, &notice).await.status(),
                StatusCode::ACCEPTED
            );
        }
    }
    let again = get_json(&trader, &a, &format!("{LIST}/{GLOBAL_ID}")).await;
    assert_eq!(again["id"], own["id"], "{again:#}");
    let r = agency.get(&a, &format!("{LIST}/{GLOBAL_ID}")).await;
    let body = assert_error(r, StatusCode::CONFLICT, "GeneralError").await;
    let text = body.to_string();
    assert!(text.contains(own["id"].as_str().unwrap()), "{text}");
    // So does the agency's Add naming it by that id.
    let event = as_org(example("add-event"), agency.org());
    assert_eq!(event["target"]["globalId"], GLOBAL_ID);
    let error = task_error(&agency.publish(&a, &event).await).to_string();
    assert!(error.contains(own["id"].as_str().unwrap()), "{error}");
}
