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
use oxigraph::model::{GraphNameRef, NamedNode, NamedOrBlankNode, Term};

use super::Store;
use crate::error::Result;
use crate::vocab::{dsn, unece, DSN};

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
    /// The stored JSON: an event's payload, a document revision's facts, a system event, the
    /// description (data dirs not yet upgraded).
    pub json: Option<String>,
    /// A document's payload as sent.
    pub payload: Option<String>,
    pub at: Option<String>,
    pub contributor: Option<String>,
    /// The log entry of the activity whose payload keeps the description.
    pub entry: Option<String>,
}

/// The node's facts in the graph that a part is made of.
#[derive(Default)]
struct Facts {
    types: Vec<NamedNode>,
    values: Vec<(&'static str, String)>,
}

/// The predicates a part reads (local names in `dsn:`).
const READ: &[&str] = &[
    "publisher",
    "dateCreated",
    "logEntry",
    "payload",
    "contributor",
    "occurredAt",
    "recorded",
    "documentJson",
    "supersededBy",
    "json",
    "date",
];

impl Facts {
    fn read(store: &Store, node: &NamedOrBlankNode, graph: GraphNameRef<'_>) -> Result<Self> {
        let mut facts = Self::default();
        for quad in store
            .db()
            .quads_for_pattern(Some(node.as_ref()), None, None, Some(graph))
        {
            let quad = quad?;
            if quad.predicate == rdf::TYPE {
                if let Term::NamedNode(t) = quad.object {
                    facts.types.push(t);
                }
                continue;
            }
            let Some(name) = quad.predicate.as_str().strip_prefix(DSN) else {
                continue;
            };
            let Some(name) = READ.iter().find(|n| **n == name) else {
                continue;
            };
            let value = match quad.object {
                Term::Literal(l) => l.value().to_owned(),
                Term::NamedNode(n) => n.into_string(),
                _ => continue,
            };
            facts.values.push((name, value));
        }
        Ok(facts)
    }

    fn get(&self, name: &str) -> Option<String> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    }

    fn has(&self, name: &str) -> bool {
        self.values.iter().any(|(n, _)| *n == name)
    }

    fn is_a(&self, class: &NamedNode) -> bool {
        self.types.contains(class)
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
        let node = quad?.subject;
        let facts = Facts::read(store, &node, g)?;
        let (Some(publisher), Some(at)) = (facts.get("publisher"), facts.get("dateCreated")) else {
            continue;
        };
        out.push(PartRow {
            kind: Some(Kind::Payload),
            node: iri(&node),
            json: facts.get("payload"),
            at: Some(at),
            contributor: Some(publisher),
            entry: facts.get("logEntry"),
            ..PartRow::default()
        });
    }
    let consignment = dsn("consignment");
    let (event, document, system) = (
        unece("SupplyChainEvent"),
        unece("Document"),
        dsn("SystemEvent"),
    );
    for quad in
        store
            .db()
            .quads_for_pattern(None, Some(consignment.as_ref()), Some(object), Some(g))
    {
        let node = quad?.subject;
        let facts = Facts::read(store, &node, g)?;
        let id = iri(&node);
        let contributor = facts.get("contributor");
        if facts.is_a(&event) && facts.has("payload") && contributor.is_some() {
            out.push(PartRow {
                kind: Some(Kind::Event),
                node: id.clone(),
                json: facts.get("payload"),
                at: facts.get("occurredAt"),
                contributor: contributor.clone(),
                ..PartRow::default()
            });
        }
        if facts.is_a(&document)
            && facts.has("payload")
            && contributor.is_some()
            && facts.has("recorded")
            && !facts.has("supersededBy")
        {
            out.push(PartRow {
                kind: Some(Kind::Document),
                node: id.clone(),
                json: facts.get("documentJson"),
                payload: facts.get("payload"),
                at: facts.get("recorded"),
                contributor: contributor.clone(),
                ..PartRow::default()
            });
        }
        if facts.is_a(&system) && facts.has("json") && facts.has("date") {
            out.push(PartRow {
                kind: Some(Kind::System),
                node: id,
                json: facts.get("json"),
                at: facts.get("date"),
                ..PartRow::default()
            });
        }
    }
    Ok(out)
}

fn iri(node: &NamedOrBlankNode) -> String {
    match node {
        NamedOrBlankNode::NamedNode(n) => n.as_str().to_owned(),
        NamedOrBlankNode::BlankNode(_) => String::new(),
    }
}
