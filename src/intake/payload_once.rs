//! Keeps each consignment description's JSON once. Summaries written before kept their own copy
//! (`dsn:payload`) of what the activity that sent the description keeps in its payload anyway;
//! they now name that activity's log entry (`dsn:logEntry`) and the reads take the JSON from it.
//! This upgrade, run at start-up before anything reads, rewrites the summaries of data dirs from
//! before. A summary whose copy is not exactly the object of its current revision's activity (as
//! text: property order is part of what a view answers) keeps its copy: the reads and `Update`
//! still understand it. Each summary changes in one transaction, so a crash mid-way leaves each
//! upgraded or not; a marker in the layout graph says the upgrade ran (a new store gets it at
//! its first start), so later starts cost one look-up.

use chrono::{DateTime, FixedOffset};
use oxigraph::model::{GraphName, NamedNode, NamedOrBlankNode, Quad, Term};
use serde_json::Value;

use crate::error::Result;
use crate::store::graphs::LayoutMarker;
use crate::store::{activities, graphs, Store};
use crate::vocab::dsn;

/// Quads changed per transaction (at most, about): bounds the memory of one commit.
const BATCH: usize = 20_000;

const MARKER: LayoutMarker = LayoutMarker {
    property: "descriptionJson",
    value: "activity",
};

/// Whether the upgrade is still to run. Blocking.
pub fn pending(store: &Store) -> Result<bool> {
    Ok(!store.upgraded(&MARKER)?)
}

/// What the upgrade did: summaries that now name their activity, and those that keep their copy.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Upgraded {
    pub linked: usize,
    pub kept: usize,
}

/// Rewrites every summary that still holds the description's JSON, then marks the store done.
/// Blocking.
pub fn run(store: &Store) -> Result<Upgraded> {
    let mut done = Upgraded::default();
    let (mut remove, mut insert) = (Vec::new(), Vec::new());
    let summarizes = dsn("summarizes");
    // The scan reads a snapshot: the batches written meanwhile do not disturb it.
    for quad in store
        .db()
        .quads_for_pattern(None, Some(summarizes.as_ref()), None, None)
    {
        let quad = quad?;
        let (GraphName::NamedNode(graph), Term::NamedNode(record)) =
            (&quad.graph_name, &quad.object)
        else {
            continue;
        };
        let Some(copy) = first(store, &quad.subject, "payload", graph)? else {
            continue;
        };
        match activity_entry(store, &quad.subject, record, graph, &copy)? {
            Some(entry) => {
                let g = GraphName::NamedNode(graph.clone());
                remove.push(Quad::new(
                    quad.subject.clone(),
                    dsn("payload"),
                    copy,
                    g.clone(),
                ));
                insert.push(Quad::new(quad.subject.clone(), dsn("logEntry"), entry, g));
                done.linked += 1;
            }
            None => done.kept += 1,
        }
        if remove.len() >= BATCH {
            write(store, &mut remove, &mut insert)?;
        }
    }
    insert.push(MARKER.quad());
    write(store, &mut remove, &mut insert)?;
    if done != Upgraded::default() {
        tracing::info!(
            linked = done.linked,
            kept = done.kept,
            "summaries now read the description's JSON from the activity that sent it"
        );
    }
    Ok(done)
}

/// The log entry of the summary's current revision when its activity's object is `copy`.
fn activity_entry(
    store: &Store,
    summary: &NamedOrBlankNode,
    record: &NamedNode,
    graph: &NamedNode,
    copy: &Term,
) -> Result<Option<NamedNode>> {
    let (Some(Term::NamedNode(publisher)), Term::Literal(copy)) =
        (first(store, summary, "publisher", graph)?, copy)
    else {
        return Ok(None);
    };
    let Some(entry) = current_revision_entry(store, record, graph)? else {
        return Ok(None);
    };
    let id = entry.as_str().rsplit(':').next().unwrap_or_default();
    let object = activities::of_entry(store, &graphs::activities(publisher.as_str()), id)?
        .and_then(|activity| activity.get("object").map(Value::to_string));
    Ok((object.as_deref() == Some(copy.value())).then_some(entry))
}

/// The log entry of the consignment's last Create or Update in `graph` (the publisher's).
fn current_revision_entry(
    store: &Store,
    record: &NamedNode,
    graph: &NamedNode,
) -> Result<Option<NamedNode>> {
    let db = store.db();
    let consignment = dsn("consignment");
    let mut latest: Option<(DateTime<FixedOffset>, String, NamedNode)> = None;
    for quad in db.quads_for_pattern(
        None,
        Some(consignment.as_ref()),
        Some(record.as_ref().into()),
        Some(graph.as_ref().into()),
    ) {
        let node = quad?.subject;
        let code = first(store, &node, "typeCode", graph)?;
        let revises = matches!(&code, Some(Term::Literal(c)) if c.value() != "ADD");
        let date = match first(store, &node, "date", graph)? {
            Some(Term::Literal(d)) => DateTime::parse_from_rfc3339(d.value()).ok(),
            _ => None,
        };
        let (true, Some(date), Some(Term::NamedNode(entry))) =
            (revises, date, first(store, &node, "logEntry", graph)?)
        else {
            continue;
        };
        // Ties (one millisecond) by the revision's name, as the history orders them.
        let key = (date, node.to_string());
        if latest
            .as_ref()
            .is_none_or(|(d, n, _)| key > (*d, n.clone()))
        {
            latest = Some((key.0, key.1, entry));
        }
    }
    Ok(latest.map(|(_, _, entry)| entry))
}

/// The object of the first `dsn:<predicate>` quad of `subject` in `graph`.
fn first(
    store: &Store,
    subject: &NamedOrBlankNode,
    predicate: &str,
    graph: &NamedNode,
) -> Result<Option<Term>> {
    let p = dsn(predicate);
    let found = store
        .db()
        .quads_for_pattern(
            Some(subject.as_ref()),
            Some(p.as_ref()),
            None,
            Some(graph.as_ref().into()),
        )
        .next()
        .transpose()?;
    Ok(found.map(|q| q.object))
}

fn write(store: &Store, remove: &mut Vec<Quad>, insert: &mut Vec<Quad>) -> Result<()> {
    store.rewrite(remove, insert)?;
    remove.clear();
    insert.clear();
    Ok(())
}
