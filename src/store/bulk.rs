//! Writes that skip the transaction: the bulk load's new contribution graphs, written by
//! Oxigraph's bulk loader (sorted files ingested into RocksDB in one step) instead of going
//! through the transaction's indexed batch and the memtables — where a Create's ~90 quads of
//! description, summary and system event spend most of its time (measured: RocksDB's skip-list
//! inserts were over half of a load's profile).
//!
//! Only quads of graphs that did not exist before the write may be deferred (a `Create`'s
//! contribution graph): nothing reads them until the write commits, and they can be removed
//! whole. The order under the writer lock is:
//!
//! 1. the write's closure fills the transaction and the deferred quads;
//! 2. a small commit notes each deferred graph as pending (`<g> dsn:bulkPending true` in
//!    `urn:dataspace-node:system:bulk`);
//! 3. the bulk loader ingests the deferred quads (atomic across column families);
//! 4. the transaction commits, removing the notes with everything else it writes.
//!
//! A crash before 3 completes leaves notes and no transaction; one between 3 and 4 leaves notes
//! and graphs whose records, log entries and markers were never committed. Either way
//! [`clean_up`], run by [`super::Store::open`] before anything reads, empties every noted graph
//! and drops the notes: the store holds whole writes only.

use std::cell::RefCell;
use std::collections::BTreeSet;

use oxigraph::model::{GraphName, Literal, NamedNode, NamedOrBlankNode, Quad, Term};

use crate::error::Result;
use crate::vocab::dsn;

/// Quads written around the transaction, and the graphs they go to.
#[derive(Default)]
pub struct Deferred {
    quads: Vec<Quad>,
    graphs: BTreeSet<NamedNode>,
}

impl Deferred {
    /// Defers `quad`, which must be in a graph that did not exist before this write.
    pub fn add(&mut self, quad: Quad) {
        if let GraphName::NamedNode(g) = &quad.graph_name {
            if !self.graphs.contains(g) {
                self.graphs.insert(g.clone());
            }
        }
        self.quads.push(quad);
    }

    pub fn is_empty(&self) -> bool {
        self.quads.is_empty()
    }
}

/// Shared by the writes of one commit.
pub type DeferredCell = RefCell<Deferred>;

fn notes_graph() -> NamedNode {
    NamedNode::new_unchecked("urn:dataspace-node:system:bulk")
}

fn note(graph: &NamedNode) -> Quad {
    Quad::new(
        NamedOrBlankNode::NamedNode(graph.clone()),
        dsn("bulkPending"),
        Term::Literal(Literal::from(true)),
        GraphName::NamedNode(notes_graph()),
    )
}

/// Steps 2 and 3; the caller's transaction removes the notes ([`unnote`]) and commits.
pub(super) fn write(db: &oxigraph::store::Store, deferred: Deferred) -> Result<Vec<Quad>> {
    let notes: Vec<Quad> = deferred.graphs.iter().map(note).collect();
    let mut tx = db.start_transaction()?;
    for n in &notes {
        tx.insert(n);
    }
    tx.commit()?;
    let mut loader = db
        .bulk_loader()
        .with_num_threads(2)
        .with_max_memory_size_in_megabytes(256);
    loader.load_quads(deferred.quads)?;
    loader.commit()?;
    Ok(notes)
}

/// Empties every graph a bulk write noted and did not commit. At open, before any reader.
pub(super) fn clean_up(db: &oxigraph::store::Store) -> Result<usize> {
    let notes: Vec<Quad> = db
        .quads_for_pattern(None, None, None, Some(notes_graph().as_ref().into()))
        .collect::<std::result::Result<_, _>>()?;
    if notes.is_empty() {
        return Ok(0);
    }
    let mut tx = db.start_transaction()?;
    for n in &notes {
        if let NamedOrBlankNode::NamedNode(g) = &n.subject {
            let quads: Vec<Quad> = tx
                .quads_for_pattern(None, None, None, Some(g.as_ref().into()))
                .collect::<std::result::Result<_, _>>()?;
            for q in &quads {
                tx.remove(q);
            }
            tx.remove_named_graph(g.as_ref())?;
        }
        tx.remove(n);
    }
    tx.commit()?;
    tracing::warn!(
        graphs = notes.len(),
        "removed the graphs of a bulk write that did not commit (the load was stopped)"
    );
    Ok(notes.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn quad(g: &str, n: u32) -> Quad {
        let s = NamedNode::new_unchecked(format!("urn:x:{n}"));
        Quad::new(
            s.clone(),
            s.clone(),
            s,
            GraphName::NamedNode(NamedNode::new_unchecked(g)),
        )
    }

    #[test]
    fn deferred_quads_commit_with_the_transaction_or_go_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store
                .commit_deferred(|tx, _, deferred| {
                    deferred.borrow_mut().add(quad("urn:g:kept", 1));
                    tx.insert(&quad("urn:g:index", 1));
                    Ok(())
                })
                .unwrap();
            // A crash between the ingest and the commit: the notes and the ingested graph,
            // no transaction.
            let mut d = Deferred::default();
            d.add(quad("urn:g:lost", 2));
            d.add(quad("urn:g:lost", 3));
            write(store.db(), d).unwrap();
            assert!(store.db().contains(&quad("urn:g:lost", 2)).unwrap());
        }
        let store = Store::open(dir.path()).unwrap();
        let db = store.db();
        assert!(db.contains(&quad("urn:g:kept", 1)).unwrap());
        assert!(db.contains(&quad("urn:g:index", 1)).unwrap());
        assert!(!db.contains(&quad("urn:g:lost", 2)).unwrap());
        assert!(!db.contains(&quad("urn:g:lost", 3)).unwrap());
        let notes = db.quads_for_pattern(None, None, None, Some(notes_graph().as_ref().into()));
        assert_eq!(notes.count(), 0);
        assert_eq!(db.len().unwrap(), 2);
    }
}
