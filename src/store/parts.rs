//! What one contribution graph holds about a consignment — its description's summary, events,
//! current document revisions and system events — read as quad patterns: the parts of every
//! read of a consignment (view, events, documents, a partner's dataset).
//!
//! Until 2026-11-26 this was `queries/consignment_parts.rq`, a union of four patterns; planning
//! it and internalising its constants at every read took more time than reading the parts
//! (perf on a node answering views). The point-in-time variant stays SPARQL
//! (`consignment_parts_at.rq`): its filters on instants are what SPARQL is for, and it is read
//! far less often.

use oxigraph::model::vocab::rdf;
use oxigraph::model::{GraphNameRef, NamedNode, NamedOrBlankNode, QuadRef, Term};

use super::Store;
use crate::error::Result;
use crate::vocab::{dsn, unece};

/// Which part a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The summary of the description (in the publisher's graph: where its JSON is kept).
    Payload,
    Event,
    Document,
    System,
}

/// One part, with the stored values a read renders it from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartRow {
    pub kind: Option<Kind>,
    /// The node's IRI (empty for a blank node).
    pub node: String,
    /// The stored JSON: an event's payload, a document revision's facts, a system event.
    pub json: Option<String>,
    pub at: Option<String>,
    pub contributor: Option<String>,
    /// The log entry of the activity whose payload keeps the description.
    pub entry: Option<String>,
}

/// The facts of one node in the graph that a part is made of. Each is read with its own
/// pattern: a scan of the node's quads decodes every term of every quad (the summary's list
/// row, a system event's changed paths), most of which no part needs.
struct Facts<'a> {
    store: &'a Store,
    node: NamedOrBlankNode,
    graph: GraphNameRef<'a>,
}

impl<'a> Facts<'a> {
    fn of(store: &'a Store, node: NamedOrBlankNode, graph: GraphNameRef<'a>) -> Self {
        Facts { store, node, graph }
    }

    /// The first value of `dsn:<name>`: a literal's value or an IRI.
    fn get(&self, name: &str) -> Result<Option<String>> {
        let p = dsn(name);
        for quad in self.store.db().quads_for_pattern(
            Some(self.node.as_ref()),
            Some(p.as_ref()),
            None,
            Some(self.graph),
        ) {
            match quad?.object {
                Term::Literal(l) => return Ok(Some(l.value().to_owned())),
                Term::NamedNode(n) => return Ok(Some(n.into_string())),
                _ => {}
            }
        }
        Ok(None)
    }

    fn has(&self, name: &str) -> Result<bool> {
        Ok(self.get(name)?.is_some())
    }

    /// Whether the node has the type `class`: a membership test, which decodes nothing (a
    /// scan of its types decodes subject, predicate, class and graph of each).
    fn is_a(&self, class: &NamedNode) -> Result<bool> {
        Ok(self
            .store
            .db()
            .contains(QuadRef::new(&self.node, rdf::TYPE, class, self.graph))?)
    }
}

/// The parts of `record` in `graph`.
pub fn parts(store: &Store, graph: &NamedNode, record: &NamedNode) -> Result<Vec<PartRow>> {
    let g = GraphNameRef::NamedNode(graph.as_ref());
    let object = record.as_ref().into();
    let mut out = Vec::new();
    let summarizes = dsn("summarizes");
    for quad in store
        .db()
        .quads_for_pattern(None, Some(summarizes.as_ref()), Some(object), Some(g))
    {
        out.extend(summary(&Facts::of(store, quad?.subject, g))?);
    }
    let consignment = dsn("consignment");
    let (event_class, document_class, system_class) = (
        unece("SupplyChainEvent"),
        unece("Document"),
        dsn("SystemEvent"),
    );
    for quad in
        store
            .db()
            .quads_for_pattern(None, Some(consignment.as_ref()), Some(object), Some(g))
    {
        let facts = Facts::of(store, quad?.subject, g);
        if facts.is_a(&event_class)? {
            out.extend(event(&facts)?);
        }
        if facts.is_a(&document_class)? {
            out.extend(document(&facts)?);
        }
        if facts.is_a(&system_class)? {
            out.extend(system_event(&facts)?);
        }
    }
    Ok(out)
}

/// The description's summary: who published it, when, and where its JSON is.
fn summary(facts: &Facts<'_>) -> Result<Option<PartRow>> {
    let (Some(publisher), Some(at)) = (facts.get("publisher")?, facts.get("dateCreated")?) else {
        return Ok(None);
    };
    Ok(Some(PartRow {
        kind: Some(Kind::Payload),
        node: iri(&facts.node),
        at: Some(at),
        contributor: Some(publisher),
        entry: facts.get("logEntry")?,
        ..PartRow::default()
    }))
}

fn event(facts: &Facts<'_>) -> Result<Option<PartRow>> {
    let (Some(json), Some(contributor)) = (facts.get("payload")?, facts.get("contributor")?) else {
        return Ok(None);
    };
    Ok(Some(PartRow {
        kind: Some(Kind::Event),
        node: iri(&facts.node),
        json: Some(json),
        at: facts.get("occurredAt")?,
        contributor: Some(contributor),
        ..PartRow::default()
    }))
}

/// A document's revision, unless a newer one superseded it (asked first: every earlier
/// revision of a document is one, and its facts need not be read).
fn document(facts: &Facts<'_>) -> Result<Option<PartRow>> {
    if facts.has("supersededBy")? {
        return Ok(None);
    }
    let (Some(json), Some(contributor), Some(at)) = (
        facts.get("documentJson")?,
        facts.get("contributor")?,
        facts.get("recorded")?,
    ) else {
        return Ok(None);
    };
    Ok(Some(PartRow {
        kind: Some(Kind::Document),
        node: iri(&facts.node),
        json: Some(json),
        at: Some(at),
        contributor: Some(contributor),
        ..PartRow::default()
    }))
}

fn system_event(facts: &Facts<'_>) -> Result<Option<PartRow>> {
    let (Some(json), Some(at)) = (facts.get("json")?, facts.get("date")?) else {
        return Ok(None);
    };
    Ok(Some(PartRow {
        kind: Some(Kind::System),
        node: iri(&facts.node),
        json: Some(json),
        at: Some(at),
        ..PartRow::default()
    }))
}

fn iri(node: &NamedOrBlankNode) -> String {
    match node {
        NamedOrBlankNode::NamedNode(n) => n.as_str().to_owned(),
        NamedOrBlankNode::BlankNode(_) => String::new(),
    }
}
