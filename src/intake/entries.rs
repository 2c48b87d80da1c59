//! The activity log entries in an organisation's activity graph: read (replays, `GET` of an
//! entry), written, and removed before a failed one is written anew.

use oxigraph::model::vocab::rdf;
use oxigraph::model::{GraphName, NamedNode, Quad, Term};
use oxigraph::store::Transaction;

use super::apply::{json_literal, subject_quads};
use super::log::Entry;
use super::Intake;
use crate::error::{Error, Result};
use crate::store::activities::{self, QuadSource};
use crate::store::graphs;
use crate::vocab::dsn;

impl Intake {
    /// The caller organisation's log entry `id`, if any, with the node's attestation of the
    /// activity it applied (none for a failed one). Blocking. Quad patterns, not SPARQL: every
    /// post asks this before its transaction (a replay is answered with the entry), and an
    /// evaluation plans the query and internalises its constants each time for two facts.
    pub fn entry(&self, org: &str, id: &str) -> Result<Option<Entry>> {
        if id.len() != 32 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let graph = graphs::activities(org);
        let Some(mut entry) =
            entry_in(self.store.db(), &graph, &graphs::minted("activity-log", id))?
        else {
            return Ok(None);
        };
        // A failed entry applied nothing: no activity, no credential.
        if !entry.failed() {
            entry.attestation = activities::credential_of(&self.store, &graph, id)?;
        }
        Ok(Some(entry))
    }
}

/// The log entry `log` in `graph` as `source` (the store, or a transaction under the writer
/// lock: whether a post was applied already) sees it.
pub(super) fn entry_in(
    source: &impl QuadSource,
    graph: &NamedNode,
    log: &NamedNode,
) -> Result<Option<Entry>> {
    let json = dsn("entryJson");
    for quad in source.matching(log.as_ref().into(), json.as_ref(), graph.as_ref())? {
        if let Term::Literal(l) = quad.object {
            return serde_json::from_str(l.value())
                .map(Some)
                .map_err(Error::internal);
        }
    }
    Ok(None)
}

/// Removes a (failed) log entry before it is written anew: everything on its node but the
/// payload of the activity being applied in the same transaction (a failed one has none).
pub(super) fn remove_entry(
    tx: &mut Transaction<'_>,
    graph: &NamedNode,
    log: &NamedNode,
) -> Result<()> {
    let payload = dsn("payload");
    for quad in subject_quads(tx, log, None, graph)? {
        if quad.predicate != payload {
            tx.remove(&quad);
        }
    }
    Ok(())
}

/// Writes a log entry in the organisation's activity graph: its JSON, the one thing its reads
/// use, and its type, which the vocabulary's ranges and domains promise (`dsn:logEntry`,
/// `dsn:entryJson`).
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
        Quad::new(log.clone(), dsn("entryJson"), json_literal(&json), g),
    ];
    for q in &quads {
        tx.insert(q);
    }
    Ok(())
}
