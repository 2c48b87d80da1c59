//! Concurrent writers on one consignment: nothing lost, nothing mixed. (Concurrent account
//! creation with one email: `accounts`.)

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::*;

const VIEW: &str =
    "/supply-chain/data-space/consignments/urn:uuid:7d1f8f3e-5b3c-4c1e-9a51-2f6a1f0b9c11";

/// One organisation's activities all in flight at once: beyond the default per-organisation
/// allowance (`fairness`), which would answer most of them 429.
fn all_in_flight(config: &mut dataspace_node::Config) {
    config.inbox_max_concurrent_per_org = 64;
}

/// Posts every activity at once, each from its own task; returns the entries in order.
async fn all_at_once(node: &TestNode, who: &Session, activities: Vec<Value>) -> Vec<Value> {
    let mut tasks = Vec::new();
    for activity in activities {
        let client = node.client.clone();
        let url = node.url(INBOX);
        let (key, token) = (who.account.api_key.clone(), who.token.clone());
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .header("x-api-key", key)
                .bearer_auth(token)
                .json(&activity)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::CREATED);
            r.json::<Value>().await.unwrap()
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test]
async fn sixty_four_parallel_adds_make_sixty_four_events() {
    let node = TestNode::start_with(all_in_flight).await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    let adds: Vec<Value> = (0..64)
        .map(|i| {
            let mut a = as_org(example("add-event"), trader.org());
            a["object"]["typeCode"] = json!(format!("test:event-{i:02}"));
            a
        })
        .collect();
    for entry in all_at_once(&node, &trader, adds).await {
        assert_completed(&entry);
    }
    let r = trader.get(&node, &format!("{VIEW}/events")).await;
    let events = json_body(r).await;
    let codes: BTreeSet<String> = events["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["typeCode"].as_str())
        .filter(|c| c.starts_with("test:"))
        .map(str::to_owned)
        .collect();
    let expected: BTreeSet<String> = (0..64).map(|i| format!("test:event-{i:02}")).collect();
    assert_eq!(codes, expected);
    let ids: BTreeSet<&str> = events["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["id"].as_str())
        .collect();
    assert_eq!(ids.len(), events["entities"].as_array().unwrap().len());
}

/// Update `i`: its own arrival port, date and description, which must travel together.
fn variant(org: &str, i: usize) -> Value {
    let ports = ["KEMBA", "TZDAR", "UGKLA", "RWKGL"];
    let mut u = as_org(example("update-consignment"), org);
    u["object"]["summaryDescription"] = json!(format!("variant {i}"));
    let arrival = &mut u["object"]["atArrivalTransportMovement"]["arrivalEvent"][0];
    arrival["scheduledOccurrenceDateTime"] = json!(format!("2026-12-{:02}T06:00:00Z", i + 1));
    arrival["occurrenceLogisticsLocation"]["identifier"]["@value"] = json!(ports[i % ports.len()]);
    u
}

#[tokio::test]
async fn parallel_updates_leave_exactly_one_of_them() {
    let node = TestNode::start_with(all_in_flight).await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    let updates: Vec<Value> = (0..16).map(|i| variant(trader.org(), i)).collect();
    let entries = all_at_once(&node, &trader, updates.clone()).await;
    for entry in &entries {
        assert_completed(entry);
    }
    let list = json_body(
        trader
            .get(&node, "/supply-chain/data-space/consignments")
            .await,
    )
    .await;
    assert_eq!(list["entities"].as_array().unwrap().len(), 1);
    let row = &list["entities"][0];
    // The row's arrival date names the update that won; its port must be that update's too.
    let winner = updates
        .iter()
        .position(|u| {
            let date = &u["object"]["atArrivalTransportMovement"]["arrivalEvent"][0]
                ["scheduledOccurrenceDateTime"];
            row["dateOfEntry"].as_str().is_some_and(|d| {
                date.as_str()
                    .is_some_and(|w| w.starts_with(&d[..10.min(d.len())]))
            })
        })
        .unwrap_or_else(|| panic!("the list row is no update's: {row:#}"));
    let ours = &updates[winner]["object"];
    let port = &ours["atArrivalTransportMovement"]["arrivalEvent"][0]
        ["occurrenceLogisticsLocation"]["identifier"]["@value"];
    assert_eq!(row["portOfEntryCode"], *port, "{row:#}");
    // The stored description is the same update's, whole.
    let r = node
        .client
        .get(node.url(VIEW))
        .header("x-api-key", &trader.account.api_key)
        .bearer_auth(&trader.token)
        .header("accept", "application/n-quads")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let quads = r.text().await.unwrap();
    let descriptions: Vec<&str> = quads
        .lines()
        .filter(|l| l.contains("/summaryDescription> \"variant "))
        .collect();
    assert_eq!(descriptions.len(), 1, "{descriptions:#?}");
    assert!(
        descriptions[0].contains(&format!("\"variant {winner}\"")),
        "{descriptions:?} vs variant {winner}"
    );
    // The summary names that update's activity, whose payload the view reads.
    let links: Vec<&str> = quads
        .lines()
        .filter(|l| l.starts_with("<urn:dataspace-node:summary:") && l.contains("#logEntry>"))
        .collect();
    assert_eq!(links.len(), 1, "{links:#?}");
    let entry = entries[winner]["id"].as_str().unwrap();
    let link = format!("<urn:dataspace-node:activity-log:{entry}>");
    assert!(links[0].contains(&link), "{} vs {link}", links[0]);
    assert!(quads.contains(port.as_str().unwrap()));
}
