//! SPARQL Update text for the replica: removed triples deleted, graphs inserted, markers set to what a snapshot
//! holds, blank nodes as skolem IRIs — cut into requests the replica accepts.

use std::collections::BTreeSet;
use std::fmt::Write;

use oxigraph::model::{GraphNameRef, NamedNode, Quad, Term, TermRef, Triple};
use oxigraph::store::Transaction;

use crate::error::Result;
use crate::vocab::dsn;

/// Triples per `INSERT DATA` block: Virtuoso 7 refuses a block of about 5,000 ("memory
/// exhausted" in its parser), whatever its size in bytes.
const BLOCK_TRIPLES: usize = 2_000;
/// A request is sent once its text passes this (Virtuoso refuses requests near 10 MB).
pub const REQUEST_BYTES: usize = 1 << 20;

/// Where blank nodes are skolemised (RDF 1.1 §3.5): the store's blank node id after it. The
/// same id gives the same IRI, and `verify` maps them back.
pub const GENID: &str = "urn:dataspace-node:.well-known/genid/";

/// Text of one term, a blank node as its skolem IRI.
fn term(out: &mut String, t: TermRef<'_>) {
    match t {
        TermRef::BlankNode(b) => {
            let _ = write!(out, "<{GENID}{}>", b.as_str());
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// One triple as an N-Triples line (blank nodes skolemised), as the log keeps removed ones.
pub fn line(t: &Triple) -> String {
    let mut out = String::new();
    triple(&mut out, t);
    out
}

fn triple(out: &mut String, t: &Triple) {
    term(out, t.subject.as_ref().into());
    out.push(' ');
    let _ = write!(out, "{}", t.predicate);
    out.push(' ');
    term(out, t.object.as_ref());
    out.push_str(" .\n");
}

/// Operations collected into requests; each request is whole operations separated by `;`.
#[derive(Default)]
pub struct Requests {
    current: String,
    done: Vec<String>,
}

impl Requests {
    fn op(&mut self, op: String) {
        if !self.current.is_empty() {
            self.current.push_str(" ;\n");
        }
        self.current.push_str(&op);
    }

    /// Ends the current request when it is big enough: call between units that should stay
    /// in one request (a consignment's graphs and markers).
    pub fn boundary(&mut self) {
        if self.current.len() >= REQUEST_BYTES {
            self.done.push(std::mem::take(&mut self.current));
        }
    }

    /// The requests ready to send (the current one stays open).
    pub fn ready(&mut self) -> Vec<String> {
        std::mem::take(&mut self.done)
    }

    /// Every request, the current one last.
    pub fn finish(mut self) -> Vec<String> {
        if !self.current.is_empty() {
            self.done.push(self.current);
        }
        self.done
    }

    /// `DROP SILENT GRAPH` (plain `DROP` fails on Virtuoso for a graph it created implicitly).
    pub fn drop_graph(&mut self, graph: &str) {
        self.op(format!("DROP SILENT GRAPH <{graph}>"));
    }

    /// `DELETE DATA` of triples given as N-Triples lines (from [`line`]), in blocks: removing
    /// exactly these is cheap on Virtuoso, where emptying a graph by pattern (`DROP`,
    /// `CLEAR`, `DELETE WHERE`) costs tens of milliseconds whatever its size.
    pub fn delete_lines<'a>(&mut self, graph: &str, lines: impl IntoIterator<Item = &'a String>) {
        let lines: Vec<&String> = lines.into_iter().collect();
        for block in lines.chunks(BLOCK_TRIPLES) {
            let mut text = format!("DELETE DATA {{ GRAPH <{graph}> {{\n");
            for l in block {
                text.push_str(l);
            }
            text.push_str("} }");
            self.op(text);
            self.boundary();
        }
    }

    /// Sets the one triple `<subject> <predicate> ?` of `graph` to `object`.
    pub fn set(&mut self, graph: &str, t: &Triple) {
        self.op(format!(
            "DELETE WHERE {{ GRAPH <{graph}> {{ {} {} ?old }} }}",
            t.subject, t.predicate
        ));
        self.insert(graph, std::slice::from_ref(t));
    }

    /// `INSERT DATA` of `triples` into `graph`, in blocks.
    pub fn insert(&mut self, graph: &str, triples: &[Triple]) {
        self.data("INSERT", graph, triples);
    }

    pub fn delete(&mut self, graph: &str, triples: &[Triple]) {
        self.data("DELETE", graph, triples);
    }

    fn data(&mut self, verb: &str, graph: &str, triples: &[Triple]) {
        for block in triples.chunks(BLOCK_TRIPLES) {
            let mut text = format!("{verb} DATA {{ GRAPH <{graph}> {{\n");
            for t in block {
                triple(&mut text, t);
            }
            text.push_str("} }");
            self.op(text);
            // A big graph may span requests; its blocks stay in order.
            self.boundary();
        }
    }

    /// Inserts what `reader` holds of `graph` (the replica holds nothing of it).
    pub fn add(&mut self, reader: &Transaction<'_>, graph: &NamedNode) -> Result<()> {
        let triples = graph_triples(reader, graph)?;
        if !triples.is_empty() {
            self.insert(graph.as_str(), &triples);
        }
        Ok(())
    }

    /// Replaces `graph` with what `reader` holds of it (a full sync of a graph the replica
    /// already has: slow on Virtuoso, see [`Requests::delete_lines`]).
    pub fn replace(&mut self, reader: &Transaction<'_>, graph: &NamedNode) -> Result<()> {
        let triples = graph_triples(reader, graph)?;
        self.op(format!(
            "DELETE WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}",
            graph = graph.as_str()
        ));
        if !triples.is_empty() {
            self.insert(graph.as_str(), &triples);
        }
        Ok(())
    }

    /// The replica's markers of `graphs` in `marker_graphs` as `reader` holds them: the
    /// present ones inserted (`present`), or the absent ones deleted.
    pub fn markers(
        &mut self,
        reader: &Transaction<'_>,
        graphs: &[NamedNode],
        marker_graphs: &BTreeSet<String>,
        present: bool,
    ) -> Result<()> {
        let predicate = dsn("readableIn");
        let scopes = ["OwnScope", "SharedScope", "AllScope"].map(dsn);
        for m in marker_graphs {
            let marks = NamedNode::new_unchecked(m);
            let mut triples = Vec::new();
            for g in graphs {
                for scope in &scopes {
                    let q = Quad::new(g.clone(), predicate.clone(), scope.clone(), marks.clone());
                    if reader.contains(&q)? == present {
                        triples.push(Triple::new(g.clone(), predicate.clone(), scope.clone()));
                    }
                }
            }
            if triples.is_empty() {
                continue;
            }
            if present {
                self.insert(m, &triples);
            } else {
                self.delete(m, &triples);
            }
        }
        Ok(())
    }
}

/// The triples of `graph` in `reader`.
pub fn graph_triples(reader: &Transaction<'_>, graph: &NamedNode) -> Result<Vec<Triple>> {
    let g: GraphNameRef<'_> = graph.as_ref().into();
    reader
        .quads_for_pattern(None, None, None, Some(g))
        .map(|q| {
            let q = q?;
            Ok(Triple::new(q.subject, q.predicate, q.object))
        })
        .collect()
}

/// A term of the store as the replica holds it (blank nodes skolemised), for comparison.
pub fn skolemised(t: &Term) -> Term {
    match t {
        Term::BlankNode(b) => NamedNode::new_unchecked(format!("{GENID}{}", b.as_str())).into(),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::model::{BlankNode, Literal};

    #[test]
    fn blocks_and_requests_stay_within_the_replicas_limits() {
        let s = BlankNode::new_unchecked("b1");
        let triples: Vec<Triple> = (0..5_000)
            .map(|i| {
                Triple::new(
                    s.clone(),
                    NamedNode::new_unchecked(format!("urn:p:{i}")),
                    Literal::new_simple_literal("x".repeat(300)),
                )
            })
            .collect();
        let mut r = Requests::default();
        r.drop_graph("urn:g");
        r.insert("urn:g", &triples);
        let requests = r.finish();
        assert!(requests.len() >= 2, "1.6 MB of text is cut");
        let text = requests.join(" ;\n");
        assert_eq!(text.matches("INSERT DATA").count(), 3);
        assert!(text.starts_with("DROP SILENT GRAPH <urn:g>"));
        assert!(text.contains(&format!("<{GENID}b1> <urn:p:0> ")));
        assert!(!text.contains("_:"));
        assert!(requests.iter().all(|r| r.len() < 2 * REQUEST_BYTES));
    }
}
