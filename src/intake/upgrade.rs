//! Gives the system events written before they were revisions what the history and the
//! point-in-time reads need: `dsn:logEntry` (from their JSON), `dsn:changed` (the difference
//! between the descriptions of consecutive revisions, read from their activities' payloads) and,
//! for a Create or Update, `dsn:declaredPortOfEntry`. Runs at start-up, once: a marker in the
//! layout graph says it is done (a new store gets it at its first start), so later starts cost
//! one look-up.

use std::collections::{BTreeMap, HashSet};

use oxigraph::model::{GraphName, NamedNode, Quad, Term};
use serde_json::{json, Value};

use super::apply::json_literal;
use crate::consignment::{changes, ports};
use crate::error::Result;
use crate::rdf::{literal, node, text};
use crate::store::graphs::LayoutMarker;
use crate::store::{activities, graphs, Queries, Query, Store};
use crate::vocab::dsn;

/// Quads written per transaction (at least): bounds the memory of one commit on a large store.
const BATCH: usize = 20_000;

struct Legacy {
    revision: NamedNode,
    date: Option<chrono::DateTime<chrono::FixedOffset>>,
    code: String,
    entry: Option<String>,
    /// The contributing organisation's activity graph.
    activities: Option<NamedNode>,
}

const MARKER: LayoutMarker = LayoutMarker {
    property: "revisions",
    value: "system-events",
};

/// Whether the upgrade is still to run. Blocking.
pub fn pending(store: &Store) -> Result<bool> {
    Ok(!store.upgraded(&MARKER)?)
}

/// Returns how many system events were upgraded, then marks the store done. Blocking.
pub fn run(store: &Store, queries: &Queries, countries: &HashSet<String>) -> Result<usize> {
    let rows = queries.select(store, Query::LegacyRevisions, &[])?;
    let mut by_consignment: BTreeMap<(String, String), Vec<Legacy>> = BTreeMap::new();
    for row in &rows {
        let (Some(graph), Some(record), Some(revision)) = (
            text(row, "graph"),
            text(row, "record"),
            node(row, "revision"),
        ) else {
            continue;
        };
        let json: Value =
            serde_json::from_str(&text(row, "json").unwrap_or_default()).unwrap_or(Value::Null);
        by_consignment
            .entry((graph, record))
            .or_default()
            .push(Legacy {
                revision,
                date: text(row, "date").and_then(|d| chrono::DateTime::parse_from_rfc3339(&d).ok()),
                code: text(row, "code").unwrap_or_default(),
                entry: json["object"]["detail"]["activityLogId"]
                    .as_str()
                    .map(str::to_owned),
                activities: json["source"]["detail"]["organizationId"]
                    .as_str()
                    .map(graphs::activities),
            });
    }
    let mut pending: Vec<Quad> = Vec::new();
    let mut upgraded = 0;
    for ((graph, _), mut revisions) in by_consignment {
        let graph = GraphName::NamedNode(NamedNode::new_unchecked(graph));
        revisions.sort_by(|a, b| (a.date, a.revision.as_str()).cmp(&(b.date, b.revision.as_str())));
        let mut previous: Option<Value> = None;
        for r in revisions {
            let quad = |p: &str, o: Term| Quad::new(r.revision.clone(), dsn(p), o, graph.clone());
            let mut changed = Vec::new();
            if r.code != "ADD" {
                let object = match (&r.entry, &r.activities) {
                    (Some(entry), Some(graph)) => activities::of_entry(store, graph, entry)?
                        .and_then(|a| a.get("object").cloned()),
                    _ => None,
                };
                changed = match (&object, r.code.as_str()) {
                    (Some(new), "UPDATE") => changes::paths(previous.as_ref(), new),
                    _ => changes::created(),
                };
                let declared = object
                    .as_ref()
                    .and_then(Value::as_object)
                    .map(|o| ports::derive(o, countries))
                    .and_then(|p| p.entry.and_then(|e| e.code));
                if let Some(code) = declared {
                    pending.push(quad("declaredPortOfEntry", literal(&code)));
                }
                previous = object;
            }
            if let Some(entry) = &r.entry {
                pending.push(quad(
                    "logEntry",
                    graphs::minted("activity-log", entry).into(),
                ));
            }
            pending.push(quad("changed", json_literal(&json!(changed))));
            upgraded += 1;
        }
        // Whole consignments per transaction: after a crash mid-way, the next start finds each
        // consignment's revisions all upgraded or none (an Update's change needs the one before).
        if pending.len() >= BATCH {
            insert(store, &mut pending)?;
        }
    }
    pending.push(MARKER.quad());
    insert(store, &mut pending)?;
    if upgraded > 0 {
        tracing::info!(upgraded, "gave earlier system events their revision facts");
    }
    Ok(upgraded)
}

fn insert(store: &Store, quads: &mut Vec<Quad>) -> Result<()> {
    if quads.is_empty() {
        return Ok(());
    }
    store.write(|tx| {
        for q in quads.iter() {
            tx.insert(q);
        }
        Ok(())
    })?;
    quads.clear();
    Ok(())
}
