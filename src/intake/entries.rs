//! The activity log entries in an organisation's activity graph: read (replays, `GET` of an
//! entry), written, and removed before a failed one is written anew.

use oxigraph::model::vocab::rdf;
use oxigraph::model::{GraphName, GraphNameRef, NamedNode, Quad, Term};
use oxigraph::store::Transaction;

use super::apply::{date_literal, json_literal, remove_quads};
use super::log::Entry;
use super::Intake;
use crate::error::{Error, Result};
use crate::rdf::{literal, text};
use crate::store::graphs;
use crate::store::Query;
use crate::vocab::dsn;

impl Intake {
    /// The caller organisation's log entry `id`, if any. Blocking.
    pub fn entry(&self, org: &str, id: &str) -> Result<Option<Entry>> {
        if id.len() != 32 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let rows = self.queries.select(
            &self.store,
            Query::ActivityLogEntry,
            &[
                ("graph", graphs::activities(org).into()),
                ("log", graphs::minted("activity-log", id).into()),
            ],
        )?;
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let mut entry = entry_of(first)?;
        entry.attestation = rows
            .iter()
            .filter_map(|r| text(r, "attestation"))
            .find(|jws| {
                crate::store::activities::claims(jws)
                    .is_some_and(|claims| claims.get("jti").and_then(|j| j.as_str()) == Some(id))
            });
        Ok(Some(entry))
    }

    /// The log entry `log` in `graph` as the transaction sees it: whether a post was applied
    /// already. Every post asks this under the writer lock: one quad pattern rather than
    /// `queries/activity_log_entry.rq`, whose evaluation plans the query and internalises its
    /// constants each time for the one fact needed here (the Create's p50 did not move
    /// measurably either way: docs/PERFORMANCE.md, "Allocator").
    pub(super) fn entry_in(
        &self,
        tx: &Transaction<'_>,
        graph: &NamedNode,
        log: &NamedNode,
    ) -> Result<Option<Entry>> {
        let json = dsn("entryJson");
        let graph = GraphNameRef::NamedNode(graph.as_ref());
        for quad in tx.quads_for_pattern(
            Some(log.as_ref().into()),
            Some(json.as_ref()),
            None,
            Some(graph),
        ) {
            if let Term::Literal(l) = quad?.object {
                return serde_json::from_str(l.value())
                    .map(Some)
                    .map_err(Error::internal);
            }
        }
        Ok(None)
    }
}

fn entry_of(row: &oxigraph::sparql::QuerySolution) -> Result<Entry> {
    match row.get("entry") {
        Some(Term::Literal(l)) => serde_json::from_str(l.value()).map_err(Error::internal),
        _ => Err(Error::internal("log entry without JSON")),
    }
}

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
