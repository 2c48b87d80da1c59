//! Data dirs from earlier versions open with everything readable: graph names keyed by an
//! organisation's id segment are renamed to the whole-DID key at start-up; system events
//! stored before they were revisions get their log entry, changes and declared port.

use dataspace_node::store::{activities, graphs, rekey, Store};
use oxigraph::model::{GraphNameRef, Literal, NamedNode, NamedOrBlankNode, Quad, Term};
use reqwest::StatusCode;
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

/// The graph names `who` reads through SPARQL.
async fn sparql_graphs(node: &TestNode, who: &Session) -> Vec<String> {
    let r = node
        .client
        .get(node.url("/supply-chain/data-space/sparql"))
        .query(&[(
            "query",
            "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g",
        )])
        .header("x-api-key", &who.account.api_key)
        .header("accept", "application/sparql-results+json")
        .bearer_auth(&who.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    json_body(r).await["results"]["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["g"]["value"].as_str().unwrap().to_owned())
        .collect()
}

/// Rewrites the store as the earlier version wrote it: every whole-DID key back to the
/// organisation's id segment, and no layout marker. Returns how many quads it changed.
fn downgrade(store: &Store, orgs: &[&str]) -> usize {
    let keys: Vec<(String, String)> = orgs
        .iter()
        .map(|o| (graphs::org_key(o), rekey::legacy_org_key(o)))
        .collect();
    let old = |s: &str| -> Option<String> {
        let mut out = s.to_owned();
        for (new, legacy) in &keys {
            out = out.replace(new.as_str(), legacy);
        }
        (out != s).then_some(out)
    };
    // System graphs (the readable markers' among them) were keyed by a hash before as well.
    let node = |n: &NamedNode| {
        (!graphs::is_system(n.as_str()))
            .then(|| old(n.as_str()).map(NamedNode::new_unchecked))
            .flatten()
    };
    let mut changes = Vec::new();
    for q in store.db().iter() {
        let q = q.unwrap();
        if q.graph_name == oxigraph::model::GraphName::from(graphs::layout()) {
            changes.push((q, None));
            continue;
        }
        let subject = match &q.subject {
            NamedOrBlankNode::NamedNode(n) => node(n).map(NamedOrBlankNode::from),
            _ => None,
        };
        let object = match &q.object {
            Term::NamedNode(n) => node(n).map(Term::from),
            Term::Literal(l) => old(l.value())
                .map(|v| Term::from(Literal::new_typed_literal(v, l.datatype().into_owned()))),
            _ => None,
        };
        let graph = match &q.graph_name {
            oxigraph::model::GraphName::NamedNode(n) => node(n).map(Into::into),
            _ => None,
        };
        if subject.is_some() || object.is_some() || graph.is_some() {
            let renamed = Quad::new(
                subject.unwrap_or_else(|| q.subject.clone()),
                q.predicate.clone(),
                object.unwrap_or_else(|| q.object.clone()),
                graph.unwrap_or_else(|| q.graph_name.clone()),
            );
            changes.push((q, Some(renamed)));
        }
    }
    let n = changes.len();
    store
        .write(|tx| {
            for (old, new) in &changes {
                tx.remove(old);
                if let Some(new) = new {
                    tx.insert(new);
                }
            }
            Ok(())
        })
        .unwrap();
    n
}

#[tokio::test]
async fn a_data_dir_keyed_by_id_segments_is_renamed_at_start_up() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    trader.publish_example(&node, "create-consignment").await;
    assert_completed(&agency.publish(&node, &inspection(agency.org())).await);
    let before = reads(&node, &trader, &agency).await;
    let graphs_before = (
        sparql_graphs(&node, &trader).await,
        sparql_graphs(&node, &agency).await,
    );
    assert_eq!(graphs_before.0.len(), 2, "{graphs_before:?}");

    let halted = node.halt().await;
    let store_dir = halted.0.data_dir.join("store");
    {
        let store = Store::open(&store_dir).unwrap();
        let changed = downgrade(&store, &[trader.org(), agency.org()]);
        assert!(changed > 10, "{changed} quads named by organisation keys");
        let legacy = format!(":{}", rekey::legacy_org_key(trader.org()));
        assert!(store
            .db()
            .named_graphs()
            .map(|g| g.unwrap().to_string())
            .any(|g| g.starts_with("<urn:dataspace-node:contribution:")
                && g.ends_with(&format!("{legacy}>"))));
        assert!(store
            .db()
            .quads_for_pattern(
                None,
                None,
                None,
                Some(GraphNameRef::NamedNode(graphs::layout().as_ref()))
            )
            .next()
            .is_none());
    }

    let node = TestNode::start_again(halted).await;
    assert_eq!(reads(&node, &trader, &agency).await, before);
    let graphs_after = (
        sparql_graphs(&node, &trader).await,
        sparql_graphs(&node, &agency).await,
    );
    assert_eq!(graphs_after, graphs_before);
    // Once renamed, a restart renames nothing.
    let halted = node.halt().await;
    {
        let store = Store::open(&halted.0.data_dir.join("store")).unwrap();
        assert_eq!(rekey::run(&store).unwrap(), 0);
    }
    let node = TestNode::start_again(halted).await;
    assert_eq!(reads(&node, &trader, &agency).await, before);
}

#[tokio::test]
async fn system_events_stored_before_revisions_are_upgraded_at_start_up() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    five_revisions(&node, &trader, &agency).await;
    let entries = get_json(&trader, &node, &format!("{}?scope=all", history(GLOBAL_ID))).await;
    let created = entries["entities"][4]["date"].as_str().unwrap().to_owned();
    let view_then = format!("{LIST}/{GLOBAL_ID}?scope=all&at={}", form_encoded(&created));
    let then = get_json(&trader, &node, &view_then).await;
    let ports = format!(
        "{PREFIXES} SELECT ?port WHERE {{ ?r a dsn:SystemEvent ; dsn:declaredPortOfEntry ?port ; dsn:date ?d }} ORDER BY ?d"
    );
    let declared = rows(&node, &trader, &ports, &[("scope", "own")]).await;
    assert_eq!(
        declared,
        [json!({"port": "NLRTM"}), json!({"port": "KEMBA"})]
    );

    // The earlier layout: system events without log entry, changes or declared port.
    let halted = node.halt().await;
    {
        let store = Store::open(&halted.0.data_dir.join("store")).unwrap();
        let dsn =
            |t: &str| NamedNode::new_unchecked(format!("https://w3id.org/dataspace-node/ns#{t}"));
        let events: Vec<NamedOrBlankNode> = store
            .db()
            .quads_for_pattern(None, None, Some(dsn("SystemEvent").as_ref().into()), None)
            .map(|q| q.unwrap().subject)
            .collect();
        assert_eq!(events.len(), 5);
        let doomed: Vec<Quad> = store
            .db()
            .iter()
            .map(Result::unwrap)
            .filter(|q| events.contains(&q.subject))
            .filter(|q| {
                ["logEntry", "changed", "declaredPortOfEntry"]
                    .iter()
                    .any(|t| q.predicate == dsn(t))
            })
            .collect();
        assert_eq!(doomed.len(), 12, "{doomed:#?}");
        // Nor the marker that says the upgrade ran.
        let marker: Vec<Quad> = store
            .db()
            .quads_for_pattern(None, Some(dsn("revisions").as_ref()), None, None)
            .map(Result::unwrap)
            .collect();
        assert_eq!(marker.len(), 1);
        let doomed: Vec<Quad> = doomed.into_iter().chain(marker).collect();
        store
            .write(|tx| {
                for q in &doomed {
                    tx.remove(q);
                }
                Ok(())
            })
            .unwrap();
    }
    let node = TestNode::start_again(halted).await;
    assert_eq!(
        get_json(&trader, &node, &format!("{}?scope=all", history(GLOBAL_ID))).await,
        entries
    );
    assert_eq!(get_json(&trader, &node, &view_then).await, then);
    assert_eq!(
        rows(&node, &trader, &ports, &[("scope", "own")]).await,
        declared
    );
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
