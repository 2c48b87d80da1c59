//! The activity log entries in an organisation's activity graph: written, and removed before
//! a failed one is written anew.

use oxigraph::model::vocab::rdf;
use oxigraph::model::{GraphName, NamedNode, Quad};
use oxigraph::store::Transaction;

use super::apply::{date_literal, json_literal, remove_quads};
use super::log::Entry;
use crate::error::{Error, Result};
use crate::rdf::literal;
use crate::vocab::dsn;

/// Removes a (failed) log entry before it is written anew.
pub(super) fn remove_entry(
    tx: &mut Transaction<'_>,
    graph: &NamedNode,
    log: &NamedNode,
) -> Result<()> {
    remove_quads(tx, log, None, graph)
}

/// Writes a log entry in the organisation's activity graph.
pub(super) fn write_entry(
    tx: &mut Transaction<'_>,
    graph: &NamedNode,
    log: &NamedNode,
    entry: &Entry,
) -> Result<()> {
    let g = GraphName::NamedNode(graph.clone());
    let json = serde_json::to_value(entry).map_err(Error::internal)?;
    let quads = [
        Quad::new(log.clone(), rdf::TYPE, dsn("ActivityLogEntry"), g.clone()),
        Quad::new(
            log.clone(),
            dsn("status"),
            literal(&entry.status),
            g.clone(),
        ),
        Quad::new(
            log.clone(),
            dsn("dateCreated"),
            date_literal(&entry.date_created),
            g.clone(),
        ),
        Quad::new(log.clone(), dsn("entryJson"), json_literal(&json), g),
    ];
    for q in &quads {
        tx.insert(q);
    }
    Ok(())
}
