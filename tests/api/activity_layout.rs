//! Activity graphs written before 2026-11-26 kept each payload on the activity node, with the
//! activity's type, its credential and a link to its log entry as quads of their own (and,
//! earlier, quads nothing read); since then the payload is on the log entry, next to the
//! entry's type and JSON. Data dirs in the earlier layout answer every read that finds an
//! activity as before, and the node rewrites them while it serves.

use dataspace_node::store::{activities, graphs, Store};
use oxigraph::model::{BlankNode, GraphName, Literal, NamedNode, NamedOrBlankNode, Quad, Term};
use serde_json::{json, Value};

use crate::common::*;
use crate::history::{consignment, five_revisions, history, ARRIVAL_CODE};

const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

fn dsn(term: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("https://w3id.org/dataspace-node/ns#{term}"))
}

/// Every read that takes something from an activity: the view (the description's JSON), the
/// history (each revision's attestation), each revision (its description), and each log entry
/// (its attestation), as the organisation that posted it reads them.
async fn reads(node: &TestNode, posted: &[(&Session, String)], trader: &Session) -> Vec<Value> {
    let mut out = vec![get_json(trader, node, &format!("{LIST}/{GLOBAL_ID}?scope=all")).await];
    let page = get_json(trader, node, &format!("{}?scope=all", history(GLOBAL_ID))).await;
    for revision in page["entities"].as_array().unwrap() {
        let id = revision["revision"].as_str().unwrap();
        let path = format!("{}/{id}?scope=all", history(GLOBAL_ID));
        out.push(get_json(trader, node, &path).await);
    }
    out.push(page);
    for (who, id) in posted {
        let path = format!("/supply-chain/data-space/activity-logs/{id}");
        out.push(get_json(who, node, &path).await);
    }
    out.into_iter().map(unsigned_links).collect()
}

/// Rewrites every activity as the earlier versions wrote it: the payload moves from the log
/// entry to an activity node (`urn:dataspace-node:activity:<entry id>`, the node's name for an
/// activity without an `id`) that has the activity's type, the credential, the link to the
/// entry, and what the versions before that wrote besides (the actor and its id, the hash, the
/// entry's status). Returns how many activities it rewrote.
fn to_earlier_layout(store: &Store) -> usize {
    let payloads: Vec<Quad> = store
        .db()
        .quads_for_pattern(None, Some(dsn("payload").as_ref()), None, None)
        .map(Result::unwrap)
        .filter(|q| q.graph_name.to_string().contains(":activities:"))
        .collect();
    let mut old = Vec::new();
    for q in &payloads {
        let (NamedOrBlankNode::NamedNode(log), Term::Literal(text), GraphName::NamedNode(g)) =
            (&q.subject, &q.object, &q.graph_name)
        else {
            panic!("{q}")
        };
        let activity: Value = serde_json::from_str(text.value()).unwrap();
        let id = log.as_str().rsplit(':').next().unwrap();
        let act = NamedNode::new_unchecked(format!("urn:dataspace-node:activity:{id}"));
        let kind = activity["type"].as_str().unwrap();
        let credential = activity["trustCredential"].as_str().unwrap();
        let g = GraphName::NamedNode(g.clone());
        let rdf_type = NamedNode::new_unchecked(RDF_TYPE);
        // The actor was a blank node with the organisation's DID as its `registeredId`.
        let actor = BlankNode::default();
        let did = activity["actor"]["registeredId"]["@value"]
            .as_str()
            .unwrap();
        let as_actor = NamedNode::new_unchecked("https://www.w3.org/ns/activitystreams#actor");
        let as_kind =
            NamedNode::new_unchecked(format!("https://www.w3.org/ns/activitystreams#{kind}"));
        old.extend([
            Quad::new(act.clone(), rdf_type, as_kind, g.clone()),
            Quad::new(
                act.clone(),
                dsn("trustCredential"),
                Literal::from(credential),
                g.clone(),
            ),
            Quad::new(act.clone(), dsn("logEntry"), log.clone(), g.clone()),
            Quad::new(act.clone(), dsn("payload"), text.clone(), g.clone()),
            Quad::new(act.clone(), as_actor.clone(), actor.clone(), g.clone()),
            Quad::new(
                act,
                dsn("activityHash"),
                Literal::from("0".repeat(64)),
                g.clone(),
            ),
            Quad::new(actor, dsn("registeredId"), Literal::from(did), g.clone()),
            Quad::new(log.clone(), dsn("status"), Literal::from("completed"), g),
        ]);
    }
    store.rewrite(&payloads, &old).unwrap();
    payloads.len()
}

/// The predicates in the activity graphs, with how many quads of each, and whether every quad
/// is on a log entry.
fn activity_graphs(store: &Store) -> (Vec<(String, usize)>, bool) {
    let mut counts = std::collections::BTreeMap::new();
    let mut on_entries = true;
    for q in store.db().iter().map(Result::unwrap) {
        if !q.graph_name.to_string().contains(":activities:") {
            continue;
        }
        *counts.entry(q.predicate.as_str().to_owned()).or_insert(0) += 1;
        on_entries &= q
            .subject
            .to_string()
            .starts_with("<urn:dataspace-node:activity-log:");
    }
    (counts.into_iter().collect(), on_entries)
}

#[tokio::test]
async fn activities_kept_in_the_earlier_layout_are_read_alike_and_rewritten() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    let ids = five_revisions(&node, &trader, &agency).await;
    // The third is the agency's inspection; the others the trader's.
    let posted: Vec<(&Session, String)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (if i == 2 { &agency } else { &trader }, id.clone()))
        .collect();
    let before = reads(&node, &posted, &trader).await;
    // Every log entry read carries the node's attestation.
    for entry in &before[before.len() - posted.len()..] {
        assert!(entry["attestation"].as_str().is_some(), "{entry:#}");
    }

    let halted = node.halt().await;
    let layout = NamedNode::new_unchecked("urn:dataspace-node:system:layout");
    let marker = Quad::new(
        layout.clone(),
        dsn("activityLayout"),
        Literal::from("entry"),
        GraphName::NamedNode(layout),
    );
    let now = {
        let store = Store::open(&halted.0.data_dir.join("store")).unwrap();
        let now = activity_graphs(&store);
        assert!(now.1, "{now:?}");
        assert_eq!(to_earlier_layout(&store), 5);
        assert!(
            store.db().contains(&marker).unwrap(),
            "a new store is marked"
        );
        assert_ne!(activity_graphs(&store), now);
        for (who, id) in &posted {
            let graph = graphs::activities(who.org());
            let payload = activities::of_entry(&store, &graph, id).unwrap().unwrap();
            let credential = activities::credential_of(&store, &graph, id).unwrap();
            assert_eq!(payload["trustCredential"].as_str(), credential.as_deref());
        }
        now
    };

    // The marker left in place, the node rewrites nothing (and `/health` names no upgrade):
    // every read below takes the
    // earlier layout.
    let node = TestNode::start_again(halted).await;
    assert_eq!(
        health(&node).await,
        json!({"status": "ok", "dataDirFormat": 1})
    );
    assert_eq!(reads(&node, &posted, &trader).await, before);
    // A replay is answered with the stored entry and its attestation.
    let replay = trader
        .post(&node, &consignment(trader.org(), "Update", "KEMBA", "3"))
        .await;
    assert_eq!(replay.status(), reqwest::StatusCode::OK);
    assert_eq!(json_body(replay).await, before[before.len() - 4]);
    // An Update says what changed against the description the earlier layout keeps.
    let update = consignment(trader.org(), "Update", "NLRTM", "3");
    assert_completed(&trader.publish(&node, &update).await);
    let page = get_json(&trader, &node, &format!("{}?scope=all", history(GLOBAL_ID))).await;
    let newest = &page["entities"][0];
    assert_eq!(newest["type"], json!("UPDATE"), "{newest:#}");
    assert_eq!(newest["changed"], json!([ARRIVAL_CODE]), "{newest:#}");
    assert!(newest["attestation"].as_str().is_some(), "{newest:#}");
    let after = reads(&node, &posted, &trader).await;

    // Without the marker, the node rewrites the earlier layout while it serves; the reads
    // answer as before, and the store then holds what the inbox writes now, nothing more.
    let halted = node.halt().await;
    {
        let store = Store::open(&halted.0.data_dir.join("store")).unwrap();
        assert!(!activity_graphs(&store).1, "still in the earlier layout");
        store.db().remove(&marker).unwrap();
    }
    let node = TestNode::start_again(halted).await;
    assert_eq!(reads(&node, &posted, &trader).await, after);
    // `/health` follows the rewrite from the first answer to its end: every quad of the
    // earlier layout gone, eight per activity (the payload's move among them).
    let mut body = health(&node).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while body["upgrades"]["activityLayout"]["state"] == "running" {
        assert!(std::time::Instant::now() < deadline, "never done: {body}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        body = health(&node).await;
    }
    assert_eq!(
        body["upgrades"]["activityLayout"],
        json!({"state": "done", "payloadsMoved": 5, "quadsRemoved": 40}),
        "{body}"
    );
    // Done by the halt: a store this small is one batch, which no shutdown interrupts (a
    // larger one would be finished by a later start).
    let halted = node.halt().await;
    let store = Store::open(&halted.0.data_dir.join("store")).unwrap();
    assert!(store.db().contains(&marker).unwrap());
    // The Update's entry is the sixth, in the new layout from the start.
    let expected: Vec<(String, usize)> = now.0.into_iter().map(|(p, n)| (p, n + 1)).collect();
    assert_eq!(activity_graphs(&store), (expected, true));
}

async fn health(node: &TestNode) -> Value {
    ok_json(node.client.get(node.url("/health")).send().await.unwrap()).await
}
