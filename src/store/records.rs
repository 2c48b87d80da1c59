//! Who a consignment record names, read in a transaction (or a snapshot): its publisher (the
//! index), its circle and its contributors (the sharing graph). Shared by the sharing rules'
//! markers and the replication log.

use oxigraph::model::{NamedNode, NamedNodeRef, Quad, Term};
use oxigraph::store::Transaction;

use super::graphs;
use crate::error::Result;
use crate::vocab::dsn;

/// The quads `subject dsn:<predicate> ?o` in `graph`.
fn facts<'a>(
    tx: &'a Transaction<'_>,
    subject: &NamedNode,
    predicate: &str,
    graph: NamedNodeRef<'_>,
) -> impl Iterator<Item = Result<Quad>> + 'a {
    let p = dsn(predicate);
    tx.quads_for_pattern(
        Some(subject.as_ref().into()),
        Some(p.as_ref()),
        None,
        Some(graph.into()),
    )
    .map(|q| q.map_err(Into::into))
}

/// The named-node objects of `record <predicate> ?o` in `graph`.
pub fn objects(
    tx: &Transaction<'_>,
    record: &NamedNode,
    predicate: &str,
    graph: NamedNodeRef<'_>,
) -> Result<Vec<String>> {
    named_objects(facts(tx, record, predicate, graph))
}

/// The first literal value of `subject dsn:<predicate> ?o` in `graph` (a date, a count).
pub fn literal(
    tx: &Transaction<'_>,
    subject: &NamedNode,
    predicate: &str,
    graph: NamedNodeRef<'_>,
) -> Result<Option<String>> {
    for q in facts(tx, subject, predicate, graph) {
        if let Term::Literal(l) = q?.object {
            return Ok(Some(l.value().to_owned()));
        }
    }
    Ok(None)
}

/// The IRIs among the objects of some quads (organisations, in the sharing and index graphs).
pub fn named_objects(quads: impl Iterator<Item = Result<Quad>>) -> Result<Vec<String>> {
    quads
        .filter_map(|q| match q {
            Ok(Quad {
                object: Term::NamedNode(o),
                ..
            }) => Some(Ok(o.into_string())),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
        .collect()
}

/// The record's publisher and the organisations `predicate` names for it in the sharing graph.
fn publisher_and(tx: &Transaction<'_>, record: &NamedNode, predicate: &str) -> Result<Vec<String>> {
    let index = graphs::consignment_index();
    let mut orgs = objects(tx, record, "publisher", index.as_ref())?;
    orgs.extend(objects(tx, record, predicate, graphs::sharing().as_ref())?);
    Ok(orgs)
}

/// The consignment's circle: its publisher and the organisations it is shared with.
pub fn circle(tx: &Transaction<'_>, record: &NamedNode) -> Result<Vec<String>> {
    publisher_and(tx, record, "sharedWith")
}

/// Every organisation with a contribution graph for the consignment: its publisher and its
/// other contributors.
pub fn contributors(tx: &Transaction<'_>, record: &NamedNode) -> Result<Vec<String>> {
    publisher_and(tx, record, "contributor")
}
