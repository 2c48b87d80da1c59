//! Deliveries to a real receiver on loopback: payloads, signatures, retries, restarts.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use super::receiver::{Received, Receiver};
use super::{call, subscribe, SUBSCRIPTIONS};
use crate::common::*;

pub async fn hook_node() -> TestNode {
    TestNode::start_with(|c| {
        c.webhook_allow_http = vec!["127.0.0.1".into()];
        c.webhook_retry_base_ms = 50;
    })
    .await
}

pub fn types(got: &[Received]) -> Vec<String> {
    got.iter()
        .map(|r| r.json()["type"].as_str().unwrap().to_owned())
        .collect()
}

/// `who`'s subscription to `events` at `receiver`; its secret.
pub async fn hook(
    node: &TestNode,
    who: &Session,
    receiver: &Receiver,
    events: Value,
) -> (String, String) {
    let s = subscribe(node, who, json!({"url": receiver.url(), "events": events})).await;
    (
        s["id"].as_str().unwrap().to_owned(),
        s["secret"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn every_event_type_arrives_signed_with_its_payload_in_commit_order() {
    let node = hook_node().await;
    let (_, trader, agency) = kenya_circle(&node).await;
    let (mine, theirs) = (Receiver::start().await, Receiver::start().await);
    let (_, secret) = hook(
        &node,
        &trader,
        &mine,
        json!([
            "consignment.created",
            "consignment.updated",
            "consignment.event_added",
            "consignment.document_added"
        ]),
    )
    .await;
    let (_, agency_secret) = hook(
        &node,
        &agency,
        &theirs,
        json!([
            "consignment.shared",
            "consignment.created",
            "consignment.event_added"
        ]),
    )
    .await;

    let created = trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    let updated = trader
        .publish(&node, &as_org(example("update-consignment"), trader.org()))
        .await;
    trader
        .publish(&node, &as_org(example("add-event"), trader.org()))
        .await;
    let doc = add_document(trader.org(), &data_url("text/plain", b"hello"), "DOC-1");
    trader.publish(&node, &doc).await;

    let got = mine.wait_for(4).await;
    assert_eq!(
        types(&got),
        [
            "consignment.created",
            "consignment.updated",
            "consignment.event_added",
            "consignment.document_added"
        ]
    );
    for r in &got {
        assert!(r.signed_by(&secret), "{:?}", r.headers);
        assert!(!r.signed_by(&agency_secret));
        let body = r.json();
        assert!(body["timestamp"].is_string());
        let data = &body["data"];
        assert_eq!(data["consignment"]["globalId"], GLOBAL_ID, "{body}");
        assert!(data["consignment"]["aigId"]
            .as_str()
            .unwrap()
            .starts_with("aig:"));
        assert!(data["consignment"]["identifier"].is_string());
        assert_eq!(data["organizationIdentity"], trader.org());
        assert_eq!(data["revision"], data["activityLogEntryId"]);
    }
    assert_eq!(
        got[0].json()["data"]["activityLogEntryId"],
        created["id"],
        "{created}"
    );
    assert_eq!(got[1].json()["data"]["activityLogEntryId"], updated["id"]);
    assert!(got[1].json()["data"]["changed"]
        .as_array()
        .is_some_and(|c| !c.is_empty()));
    assert!(got[0].json()["data"].get("changed").is_none());
    assert_eq!(
        got[3].json()["data"]["document"],
        json!({"documentId": "DOC-1", "documentRevision": 0})
    );

    // The agency reads it through the grant the Create's routing gave: told of the share and
    // the creation, and of the event the trader added; not of what it did not ask for.
    let got = theirs.wait_for(3).await;
    let mut seen = types(&got);
    seen.sort();
    assert_eq!(
        seen,
        [
            "consignment.created",
            "consignment.event_added",
            "consignment.shared"
        ]
    );
    assert!(got.iter().all(|r| r.signed_by(&agency_secret)));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(mine.received().len(), 4);
    assert_eq!(theirs.received().len(), 3);
}

#[tokio::test]
async fn a_receiver_failing_three_times_gets_one_delivery_under_one_id() {
    let node = hook_node().await;
    let trader = Session::new(&node, "retry@example.com").await;
    let receiver = Receiver::start().await;
    receiver.answer(&[500, 503, 429]);
    let (id, secret) = hook(&node, &trader, &receiver, json!(["consignment.created"])).await;
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    let got = receiver.wait_for(4).await;
    let ids: Vec<String> = got.iter().map(Received::id).collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    assert!(got.iter().all(|r| r.signed_by(&secret)));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        receiver.received().len(),
        4,
        "delivered once it answered 200"
    );
    let s = ok_json(
        call(
            &node,
            &trader,
            Method::GET,
            &format!("{SUBSCRIPTIONS}/{id}"),
            None,
        )
        .await,
    )
    .await;
    assert_eq!(s["state"], "enabled", "{s}");
}

#[tokio::test]
async fn a_410_disables_the_subscription() {
    let node = hook_node().await;
    let trader = Session::new(&node, "gone@example.com").await;
    let receiver = Receiver::start().await;
    receiver.answer(&[410]);
    let events = json!(["consignment.created", "consignment.event_added"]);
    let (id, _) = hook(&node, &trader, &receiver, events).await;
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    receiver.wait_for(1).await;
    let path = format!("{SUBSCRIPTIONS}/{id}");
    let mut s = Value::Null;
    for _ in 0..600 {
        s = ok_json(call(&node, &trader, Method::GET, &path, None).await).await;
        if s["state"] == "disabled" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(s["state"], "disabled", "{s}");
    assert!(s["disabledAt"].is_string() && s["lastError"].as_str().unwrap().contains("410"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.received().len(), 1);
}

#[tokio::test]
async fn a_revoked_agency_is_told_of_the_withdrawal_and_of_nothing_after_it() {
    let node = hook_node().await;
    let (operator, trader, agency, policy) = kenya_circle_with_policy(&node).await;
    let receiver = Receiver::start().await;
    hook(
        &node,
        &agency,
        &receiver,
        json!([
            "consignment.created",
            "consignment.updated",
            "consignment.event_added",
            "consignment.shared",
            "consignment.unshared"
        ]),
    )
    .await;
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    receiver.wait_for(2).await;
    operator
        .delete(&node, policy["uid"].as_str().unwrap())
        .await;
    let got = receiver.wait_for(3).await;
    assert_eq!(got[2].json()["type"], "consignment.unshared");
    trader
        .publish(&node, &as_org(example("add-event"), trader.org()))
        .await;
    trader
        .publish(&node, &as_org(example("update-consignment"), trader.org()))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        receiver.received().len(),
        3,
        "{:?}",
        types(&receiver.received())
    );
}

#[tokio::test]
async fn what_was_queued_while_the_receiver_was_down_arrives_after_a_restart() {
    let node = hook_node().await;
    let trader = Session::new(&node, "restart@example.com").await;
    let receiver = Receiver::start().await;
    let addr = receiver.addr.to_string();
    let (_, secret) = hook(
        &node,
        &trader,
        &receiver,
        json!(["consignment.created", "consignment.event_added"]),
    )
    .await;
    receiver.stop();
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    trader
        .publish(&node, &as_org(example("add-event"), trader.org()))
        .await;
    let node = node.restart().await;
    let trader = trader.logged_in_again(&node).await;
    let arrived = example_event(&trader, "tlip:vessel-arrived", "2026-12-02T09:00:00Z");
    trader.publish(&node, &arrived).await;
    let receiver = Receiver::start_at(&addr).await;
    let got = receiver.wait_for(3).await;
    assert_eq!(
        types(&got),
        [
            "consignment.created",
            "consignment.event_added",
            "consignment.event_added"
        ]
    );
    assert!(got.iter().all(|r| r.signed_by(&secret)));
}

#[tokio::test]
async fn refused_destinations_are_never_reached() {
    let node = TestNode::start_with(|c| {
        c.webhook_allow_http = vec!["localhost".into()];
        c.webhook_retry_base_ms = 50;
    })
    .await;
    let trader = Session::new(&node, "refused@example.com").await;
    let receiver = Receiver::start().await;
    // Listed for http://, but the name resolves to loopback, which is not listed as an address.
    let url = format!("http://localhost:{}/hook", receiver.addr.port());
    let s = subscribe(
        &node,
        &trader,
        json!({"url": url, "events": ["consignment.created"]}),
    )
    .await;
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    let path = format!("{SUBSCRIPTIONS}/{}", s["id"].as_str().unwrap());
    let mut read = Value::Null;
    for _ in 0..600 {
        read = ok_json(call(&node, &trader, Method::GET, &path, None).await).await;
        if read["lastError"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        read["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("resolves to no address")),
        "{read}"
    );
    assert!(receiver.received().is_empty());
    for refused in [
        "http://127.0.0.1:9/hook",
        "http://169.254.169.254/latest/meta-data",
    ] {
        let r = call(
            &node,
            &trader,
            Method::POST,
            SUBSCRIPTIONS,
            Some(&json!({"url": refused, "events": ["consignment.created"]})),
        )
        .await;
        let e = assert_error(r, reqwest::StatusCode::BAD_REQUEST, "GeneralError").await;
        assert_eq!(e["properties"]["field"], "url");
    }
}

#[tokio::test]
async fn the_delivery_log_shows_each_attempt_and_retry_and_replay_send_again_under_the_same_ids() {
    let node = hook_node().await;
    let trader = Session::new(&node, "log@example.com").await;
    let receiver = Receiver::start().await;
    receiver.answer(&[500]);
    let (id, _) = hook(
        &node,
        &trader,
        &receiver,
        json!(["consignment.created", "consignment.event_added"]),
    )
    .await;
    let before = chrono::Utc::now().to_rfc3339();
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    trader
        .publish(&node, &as_org(example("add-event"), trader.org()))
        .await;
    let first = receiver.wait_for(3).await;
    let log_path = format!("{SUBSCRIPTIONS}/{id}/deliveries");
    let log = all_delivered(&node, &trader, &log_path).await;
    let entries = log["entities"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{log}");
    assert_eq!(
        entries[0]["type"], "consignment.event_added",
        "newest first"
    );
    assert_eq!(entries[1]["attempts"], 2, "{log}");
    assert_eq!(entries[1]["lastStatus"], 200);
    assert_eq!(entries[1]["id"], first[0].id());
    let paged = ok_json(
        call(
            &node,
            &trader,
            Method::GET,
            &format!("{log_path}?limit=1"),
            None,
        )
        .await,
    )
    .await;
    assert_eq!(paged["entities"].as_array().unwrap().len(), 1);
    assert!(paged["cursor"].is_string());

    let retry = format!("{SUBSCRIPTIONS}/{id}/deliveries/{}/retry", first[0].id());
    let r = call(&node, &trader, Method::POST, &retry, None).await;
    assert_eq!(r.status(), 202);
    let got = receiver.wait_for(4).await;
    assert_eq!(got[3].id(), first[0].id());
    assert_eq!(got[3].body, first[0].body);

    let r = replay(&node, &trader, &id, &json!({"since": before})).await;
    assert_eq!(r.status(), 202);
    assert_eq!(json_body(r).await["replayed"], 2);
    let got = receiver.wait_for(6).await;
    assert_eq!(got[4].id(), entries[1]["id"].as_str().unwrap());
    assert_eq!(got[5].id(), entries[0]["id"].as_str().unwrap());
    let r = replay(&node, &trader, &id, &json!({"since": "yesterday"})).await;
    let e = assert_error(r, reqwest::StatusCode::BAD_REQUEST, "GeneralError").await;
    assert_eq!(e["properties"]["field"], "since");

    let other = Session::new(&node, "log-other@example.com").await;
    for (method, path) in [
        (Method::GET, log_path.clone()),
        (Method::POST, retry.clone()),
    ] {
        let r = call(&node, &other, method, &path, None).await;
        assert_error(r, reqwest::StatusCode::NOT_FOUND, "GeneralError").await;
    }
}

#[tokio::test]
async fn a_full_subscription_gets_the_object_as_its_reads_show_it_at_the_revision() {
    let node = hook_node().await;
    let (_, trader, agency) = kenya_circle(&node).await;
    let receiver = Receiver::start().await;
    let body = json!({"url": receiver.url(), "full": true, "events": ["consignment.created",
        "consignment.updated", "consignment.event_added"]});
    subscribe(&node, &agency, body).await;
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    let created_view = get_json(
        &agency,
        &node,
        &format!("/supply-chain/data-space/consignments/{GLOBAL_ID}"),
    )
    .await;
    trader
        .publish(&node, &as_org(example("add-event"), trader.org()))
        .await;
    trader
        .publish(&node, &as_org(example("update-consignment"), trader.org()))
        .await;
    let got = receiver.wait_for(3).await;
    assert_eq!(
        types(&got),
        [
            "consignment.created",
            "consignment.event_added",
            "consignment.updated"
        ]
    );
    // The creation's view is the one read right after it (before the event), not today's.
    let created = &got[0].json()["data"]["object"];
    assert_eq!(created["id"], created_view["id"], "{created}");
    assert_eq!(created["events"], created_view["events"]);
    assert!(
        created["events"].as_array().is_some_and(|e| e.is_empty()),
        "{created}"
    );
    let event = &got[1].json()["data"]["object"];
    assert_eq!(event["typeCode"], "tlip:vessel-departed", "{event}");
    let updated = &got[2].json()["data"]["object"];
    let now = get_json(
        &agency,
        &node,
        &format!("/supply-chain/data-space/consignments/{GLOBAL_ID}"),
    )
    .await;
    assert_eq!(updated["events"], now["events"], "{updated}");
    assert_eq!(updated["events"].as_array().map(Vec::len), Some(1));
    assert_ne!(updated, created);
}

#[tokio::test]
async fn a_hanging_receiver_holds_back_neither_the_inbox_nor_another_subscription() {
    let node = hook_node().await;
    let trader = Session::new(&node, "hanging@example.com").await;
    let (hanging, fine) = (Receiver::start().await, Receiver::start().await);
    hanging.hold();
    hook(
        &node,
        &trader,
        &hanging,
        json!(["consignment.created", "consignment.event_added"]),
    )
    .await;
    hook(
        &node,
        &trader,
        &fine,
        json!(["consignment.created", "consignment.event_added"]),
    )
    .await;
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    hanging.wait_for(1).await;
    // The hanging receiver has not answered: the inbox still answers, and the other
    // subscription gets both events.
    trader
        .publish(&node, &as_org(example("add-event"), trader.org()))
        .await;
    let got = fine.wait_for(2).await;
    assert_eq!(
        types(&got),
        ["consignment.created", "consignment.event_added"]
    );

    let held = hanging.received();
    let ids: Vec<String> = held.iter().map(Received::id).collect();
    assert_eq!(held.len(), 1, "one at a time: {:?} {ids:?}", types(&held));
    hanging.release();
    let got = hanging.wait_for(2).await;
    assert_eq!(
        types(&got),
        ["consignment.created", "consignment.event_added"]
    );
}

#[tokio::test]
async fn a_rotated_secret_signs_beside_the_new_one_and_a_deleted_subscription_gets_nothing() {
    let node = hook_node().await;
    let trader = Session::new(&node, "rotate@example.com").await;
    let receiver = Receiver::start().await;
    let (id, old) = hook(
        &node,
        &trader,
        &receiver,
        json!(["consignment.created", "consignment.event_added"]),
    )
    .await;
    let path = format!("{SUBSCRIPTIONS}/{id}");
    let rotated = ok_json(
        call(
            &node,
            &trader,
            Method::POST,
            &format!("{path}/rotate-secret"),
            None,
        )
        .await,
    )
    .await;
    let new = rotated["secret"].as_str().unwrap().to_owned();
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    let got = receiver.wait_for(1).await;
    let signatures = got[0].headers["webhook-signature"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(signatures.split(' ').count(), 2, "{signatures}");
    assert!(got[0].signed_by(&old) && got[0].signed_by(&new));
    let r = call(&node, &trader, Method::DELETE, &path, None).await;
    assert_eq!(r.status(), 204);
    trader
        .publish(&node, &as_org(example("add-event"), trader.org()))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.received().len(), 1);
}

#[tokio::test]
async fn filters_and_scopes_pick_the_consignments_told_of() {
    let node = hook_node().await;
    let (_, trader, agency) = kenya_circle(&node).await;
    let (kenya, tanzania, shared_only, own_only) = (
        Receiver::start().await,
        Receiver::start().await,
        Receiver::start().await,
        Receiver::start().await,
    );
    let sub = |r: &Receiver, filter: Value| json!({"url": r.url(), "events": ["consignment.created"], "filter": filter});
    subscribe(
        &node,
        &agency,
        sub(&kenya, json!({"portOfEntryCountryId": "KE"})),
    )
    .await;
    subscribe(
        &node,
        &agency,
        sub(&tanzania, json!({"portOfEntryCountryId": "TZ"})),
    )
    .await;
    subscribe(
        &node,
        &trader,
        sub(&shared_only, json!({"scope": "shared"})),
    )
    .await;
    subscribe(&node, &trader, sub(&own_only, json!({"scope": "own"}))).await;
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    assert_eq!(types(&kenya.wait_for(1).await), ["consignment.created"]);
    assert_eq!(types(&own_only.wait_for(1).await), ["consignment.created"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(tanzania.received().is_empty());
    assert!(shared_only.received().is_empty());
}

/// Delivered deliveries stay in the log `--webhook-log-days`; past it they are removed (at
/// start-up here, with no days kept).
#[tokio::test]
async fn the_delivery_log_keeps_delivered_deliveries_for_the_days_configured() {
    let node = hook_node().await;
    let trader = Session::new(&node, "log@example.com").await;
    let receiver = Receiver::start().await;
    let (id, _) = hook(&node, &trader, &receiver, json!(["consignment.created"])).await;
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    receiver.wait_for(1).await;
    let log = format!("{SUBSCRIPTIONS}/{id}/deliveries");
    // The receiver counts the request before the node has its answer, and the node records
    // successes in batches: wait until the log shows it delivered (a restart in between would
    // rightly send it again, at least once).
    let waiting = std::time::Instant::now();
    loop {
        let listed = json_body(call(&node, &trader, Method::GET, &log, None).await).await;
        if !listed["entities"][0]["deliveredAt"].is_null() {
            break;
        }
        assert!(waiting.elapsed() < Duration::from_secs(120), "{listed:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Kept while the node runs with the default 30 days, and across a restart.
    let node = node.restart().await;
    let trader = trader.logged_in_again(&node).await;
    let listed = json_body(call(&node, &trader, Method::GET, &log, None).await).await;
    assert_eq!(
        listed["entities"].as_array().unwrap().len(),
        1,
        "{listed:#}"
    );
    assert!(
        !listed["entities"][0]["deliveredAt"].is_null(),
        "{listed:#}"
    );
    // No days kept: the next start removes it.
    let (mut config, addr, dir) = node.halt().await;
    config.webhook_log_days = 0;
    let node = TestNode::start_again((config, addr, dir)).await;
    let trader = trader.logged_in_again(&node).await;
    let listed = json_body(call(&node, &trader, Method::GET, &log, None).await).await;
    assert_eq!(listed["entities"], json!([]), "{listed:#}");
}

/// A replay asked for while an attempt at the same delivery is under way (its receiver has
/// not answered yet) is sent once that attempt ends, and the attempt's success does not mark
/// the replayed delivery delivered.
#[tokio::test]
async fn a_replay_during_an_attempt_at_the_same_delivery_is_still_sent() {
    let node = hook_node().await;
    let trader = Session::new(&node, "race@example.com").await;
    let receiver = Receiver::start().await;
    let (id, _) = hook(&node, &trader, &receiver, json!(["consignment.created"])).await;
    let before = chrono::Utc::now().to_rfc3339();
    receiver.hold();
    trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    // The attempt has reached the receiver, which does not answer yet.
    let first = receiver.wait_for(1).await;
    let r = replay(&node, &trader, &id, &json!({"since": before})).await;
    assert_eq!(r.status(), 202);
    assert_eq!(json_body(r).await["replayed"], 1);
    receiver.release();
    let got = receiver.wait_for(2).await;
    assert_eq!(got[1].id(), first[0].id(), "the same delivery, sent again");
    // And it ends delivered.
    let log_path = format!("{SUBSCRIPTIONS}/{id}/deliveries");
    let log = all_delivered(&node, &trader, &log_path).await;
    assert_eq!(log["entities"].as_array().unwrap().len(), 1, "{log}");
    assert!(log["entities"][0]["deliveredAt"].is_string(), "{log}");
}

/// `POST /subscriptions/{id}/replay` with `body`, as `who`.
async fn replay(node: &TestNode, who: &Session, id: &str, body: &Value) -> reqwest::Response {
    let path = format!("{SUBSCRIPTIONS}/{id}/replay");
    call(node, who, Method::POST, &path, Some(body)).await
}

/// The delivery log at `log_path` once every delivery in it is delivered (the success
/// records are written in batches), or as it is after half a minute.
async fn all_delivered(node: &TestNode, who: &Session, log_path: &str) -> Value {
    let mut log = Value::Null;
    for _ in 0..600 {
        log = ok_json(call(node, who, Method::GET, log_path, None).await).await;
        let entries = log["entities"].as_array().unwrap();
        if entries.iter().all(|d| d["deliveredAt"].is_string()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    log
}
