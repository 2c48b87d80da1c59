//! Data dirs from earlier versions open with everything readable: summaries that kept their own
//! copy of the description's JSON name the activity that keeps it.

use dataspace_node::store::{activities, graphs, Store};
use oxigraph::model::{GraphNameRef, Literal, NamedNode, NamedOrBlankNode, Quad, Term};
use serde_json::{json, Value};

use crate::common::*;
use crate::history::{consignment, five_revisions, history, ARRIVAL_CODE};

/// What the trader and the agency read, through every path that names graphs.
async fn reads(node: &TestNode, trader: &Session, agency: &Session) -> Vec<Value> {
    let mut out = Vec::new();
    for who in [trader, agency] {
        for path in [
            format!("{LIST}?scope=all"),
            format!("{LIST}/{GLOBAL_ID}?scope=all"),
            format!("{LIST}/{GLOBAL_ID}/events?scope=all"),
            format!("{LIST}/{GLOBAL_ID}/events?scope=own"),
            "/supply-chain/data-space/notifications".to_owned(),
        ] {
            out.push(get_json(who, node, &path).await);
        }
    }
    out
}

/// The globalId of the second consignment the summaries test publishes.
const KEPT_ID: &str = "urn:uuid:00000000-0000-4000-8000-000000000007";

/// Gives every summary its own copy of the description's JSON again, as the earlier version
/// wrote it (from the activity its log entry names; for `KEPT_ID`'s, a copy that differs from
/// it), and removes the marker that says the upgrade ran. Returns how many summaries it changed.
fn copy_descriptions_into_summaries(store: &Store) -> usize {
    let dsn = |t: &str| NamedNode::new_unchecked(format!("https://w3id.org/dataspace-node/ns#{t}"));
    let json = NamedNode::new_unchecked("http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON");
    let object_of = |s: &NamedOrBlankNode, p: &str, g: GraphNameRef<'_>| -> Term {
        let q =
            store
                .db()
                .quads_for_pattern(Some(s.as_ref()), Some(dsn(p).as_ref()), None, Some(g));
        q.map(Result::unwrap).next().unwrap().object
    };
    let mut changes: Vec<(Quad, Quad)> = Vec::new();
    for q in store
        .db()
        .quads_for_pattern(None, Some(dsn("summarizes").as_ref()), None, None)
    {
        let q = q.unwrap();
        let g = q.graph_name.as_ref();
        let Term::NamedNode(entry) = object_of(&q.subject, "logEntry", g) else {
            panic!()
        };
        let Term::NamedNode(publisher) = object_of(&q.subject, "publisher", g) else {
            panic!()
        };
        let id = entry.as_str().rsplit(':').next().unwrap();
        let activity = activities::of_entry(store, &graphs::activities(publisher.as_str()), id);
        let mut object = activity.unwrap().unwrap()["object"].clone();
        if object["globalId"] == json!(KEPT_ID) {
            object["includedConsignment"][0]["identifier"] = json!("HBL-KEPT");
        }
        let copy = Literal::new_typed_literal(object.to_string(), json.clone());
        let link = Quad::new(
            q.subject.clone(),
            dsn("logEntry"),
            entry,
            q.graph_name.clone(),
        );
        let copied = Quad::new(
            q.subject.clone(),
            dsn("payload"),
            copy,
            q.graph_name.clone(),
        );
        changes.push((link, copied));
    }
    let marker: Vec<Quad> = store
        .db()
        .quads_for_pattern(None, Some(dsn("descriptionJson").as_ref()), None, None)
        .map(Result::unwrap)
        .collect();
    assert_eq!(marker.len(), 1);
    store
        .write(|tx| {
            for (link, copied) in &changes {
                tx.remove(link);
                tx.insert(copied);
            }
            marker.iter().for_each(|m| {
                tx.remove(m);
            });
            Ok(())
        })
        .unwrap();
    changes.len()
}

#[tokio::test]
async fn summaries_that_kept_the_description_json_are_upgraded_at_start_up() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    five_revisions(&node, &trader, &agency).await;
    let other = consignment_at(trader.org(), 7, "KEMBA", "2026-12-24T06:00:00Z");
    assert_completed(&trader.publish(&node, &other).await);
    let copies = format!(
        "{PREFIXES} SELECT ?id WHERE {{ ?s dsn:summarizes ?r ; dsn:globalId ?id ; dsn:payload ?p }}"
    );
    // The description's JSON is kept once: in the activity, not on the summary.
    assert_eq!(
        rows(&node, &trader, &copies, &[("scope", "own")]).await,
        Vec::<Value>::new()
    );
    let before = reads(&node, &trader, &agency)
        .await
        .into_iter()
        .map(unsigned_links)
        .collect::<Vec<_>>();
    let history_before =
        get_json(&trader, &node, &format!("{}?scope=all", history(GLOBAL_ID))).await;
    let kept_view = format!("{LIST}/{KEPT_ID}?scope=own");
    let kept_before = get_json(&trader, &node, &kept_view).await;
    assert_eq!(
        kept_before["includedConsignments"][0]["identifier"],
        json!("HBL-001")
    );

    let halted = node.halt().await;
    {
        let store = Store::open(&halted.0.data_dir.join("store")).unwrap();
        assert_eq!(copy_descriptions_into_summaries(&store), 2);
    }
    let node = TestNode::start_again(halted).await;
    let after = reads(&node, &trader, &agency)
        .await
        .into_iter()
        .map(unsigned_links)
        .collect::<Vec<_>>();
    assert_eq!(after, before);
    assert_eq!(
        get_json(&trader, &node, &format!("{}?scope=all", history(GLOBAL_ID))).await,
        history_before
    );
    // The copy that is not its activity's object stays, and the view reads it.
    assert_eq!(
        rows(&node, &trader, &copies, &[("scope", "own")]).await,
        [json!({"id": KEPT_ID})]
    );
    let kept_after = get_json(&trader, &node, &kept_view).await;
    assert_eq!(
        kept_after["includedConsignments"][0]["identifier"],
        json!("HBL-KEPT")
    );

    // Updates after the upgrade, of both: each summary names its activity again, and the
    // history's changes are against the description each Update replaced.
    let mut kept_update = other.clone();
    kept_update["type"] = json!("Update");
    for (activity, id) in [
        (consignment(trader.org(), "Update", "NLRTM", "3"), GLOBAL_ID),
        (kept_update, KEPT_ID),
    ] {
        assert_completed(&trader.publish(&node, &activity).await);
        let page = get_json(&trader, &node, &format!("{}?scope=all", history(id))).await;
        let newest = &page["entities"][0];
        assert_eq!(newest["type"], json!("UPDATE"), "{newest:#}");
        let expected = match id {
            GLOBAL_ID => json!([ARRIVAL_CODE]),
            _ => json!(["$.includedConsignment[0].identifier"]),
        };
        assert_eq!(newest["changed"], expected, "{newest:#}");
    }
    assert_eq!(
        rows(&node, &trader, &copies, &[("scope", "own")]).await,
        Vec::<Value>::new()
    );
    let kept_now = get_json(&trader, &node, &kept_view).await;
    assert_eq!(
        kept_now["includedConsignments"][0]["identifier"],
        json!("HBL-001")
    );
}
