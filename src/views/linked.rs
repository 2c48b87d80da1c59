//! Linked-data reads: a consignment as the RDF the caller may read in the scope — every
//! triple of those contribution graphs (the description, events, documents, system events and
//! the node's derived facts about them), nothing else.
//!
//! JSON-LD is compacted against the D23B context with the consignment at the top, nested
//! payload objects embedded and the node's own resources (events, documents, summaries, system
//! events) in `@included`; it expands with the same contexts to exactly those triples. The RDF
//! formats carry the same graph; N-Quads and TriG keep each triple in its contribution graph,
//! which says who contributed it. With `?at=`, the graph as it stood then ([`super::at`]).

use std::collections::HashSet;

use chrono::{DateTime, FixedOffset};
use oxigraph::io::{RdfFormat, RdfSerializer};
use oxigraph::model::{GraphNameRef, Quad, Triple};

use super::Views;
use crate::auth::Caller;
use crate::consignment::Scope;
use crate::error::{Error, Result};
use crate::store::graphs::MINTED_PREFIX;
use crate::vocab::{DSN, UNECE, XSD};

/// The representations of a consignment besides the REST view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linked {
    JsonLd,
    Rdf(RdfFormat),
}

const PREFIXES: &[(&str, &str)] = &[
    ("unece", UNECE),
    ("dsn", DSN),
    ("xsd", XSD),
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
];

impl Views {
    /// `GET /consignments/{id}` as linked data. Blocking.
    pub fn linked(
        &self,
        caller: &Caller,
        scope: Scope,
        id: &str,
        format: Linked,
        at: Option<DateTime<FixedOffset>>,
    ) -> Result<Vec<u8>> {
        let visible = self.resolve(caller, scope, id)?;
        let when = match at {
            Some(at) => Some((at, self.instant_in_history(&visible, at)?)),
            None => None,
        };
        let mut quads = Vec::new();
        for graph in &visible.graphs {
            let graph: GraphNameRef<'_> = graph.as_ref().into();
            for quad in self
                .store
                .db()
                .quads_for_pattern(None, None, None, Some(graph))
            {
                quads.push(quad?);
            }
        }
        if let Some((at, when)) = when {
            let activity = match visible.graphs.contains(&visible.graph) {
                true => self.description_at(&visible, &when)?,
                false => None,
            };
            quads = self.quads_at(&visible, quads, at, activity.as_ref());
        }
        match format {
            Linked::JsonLd => {
                let triples = distinct_triples(&quads);
                let doc = self
                    .compactor
                    .compact(&visible.record.clone().into(), &triples, |n| {
                        n.as_str().starts_with(MINTED_PREFIX)
                    })
                    .map_err(Error::internal)?;
                serde_json::to_vec(&doc).map_err(Error::internal)
            }
            Linked::Rdf(format) => serialize(format, &quads),
        }
    }
}

/// The triples of `quads`, each once (the same statement may sit in two contributions).
fn distinct_triples(quads: &[Quad]) -> Vec<Triple> {
    let mut seen = HashSet::new();
    quads
        .iter()
        .map(|q| Triple::new(q.subject.clone(), q.predicate.clone(), q.object.clone()))
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

fn serialize(format: RdfFormat, quads: &[Quad]) -> Result<Vec<u8>> {
    let io = |e: std::io::Error| Error::internal(format!("serialising RDF: {e}"));
    let mut serializer = RdfSerializer::from_format(format);
    for (prefix, iri) in PREFIXES {
        serializer = serializer
            .with_prefix(*prefix, *iri)
            .map_err(Error::internal)?;
    }
    let mut out = serializer.for_writer(Vec::new());
    if format.supports_datasets() {
        for q in quads {
            out.serialize_quad(q).map_err(io)?;
        }
    } else {
        for t in distinct_triples(quads) {
            out.serialize_triple(&t).map_err(io)?;
        }
    }
    out.finish().map_err(io)
}
