//! A new graph's quads written ahead of the writer lock, for the transaction that will own the
//! graph to take over under the lock.
//!
//! A `Create` puts its description — most of its quads — in a contribution graph nobody has
//! written (its aig id is minted for the request). Those quads depend on nothing the lock
//! guards, so they are written before it ([`Store::write_ahead`]): one plain batch, outside the
//! transaction's indexed batch, committed to RocksDB beside other writers' commits. The batch
//! also notes the graph as pending, as a bulk load's deferred graphs are noted ([`super::bulk`]).
//! Under the lock, the write's transaction makes all of a Create's checks and writes, but
//! where it would insert the description it adopts the graph written ahead ([`Ahead::adopt`]:
//! the same quads, from the same expansion and the same minted root), and at the end it
//! removes the note — and the whole graph when it did not adopt it, the task having failed or the activity
//! turned out to be a replay ([`Ahead::settle`]). So the transaction's commit makes
//! the graph whole and its own, or gone, atomically with the write's record, log entry and
//! markers.
//!
//! Nothing reads the graph before then but the publisher's own analysts: the views, the
//! lists, partners, other organisations' SPARQL and the replica find a consignment's graphs
//! through its record, its list entry or its readable markers, which only the transaction
//! writes (a replica's full sync skips noted graphs, an online backup's manifest does not
//! count them). A SPARQL query of the publishing
//! organisation reads its own contribution graphs by name (`sparql::Readable`), so one that
//! runs in that moment may see the description of its own Create in flight — its own data,
//! a moment early, or, should the task then fail, once. A crash
//! before the transaction commits leaves the note, and the open's clean-up
//! ([`super::bulk::clean_up`]) empties the graph; a write that failed otherwise removes it at
//! once ([`Store::discard`]). The batch needs no sync of its own: it is in the write-ahead log
//! before the transaction's records, so the sync that makes the transaction durable makes it
//! durable too.

use std::cell::Cell;
use std::sync::atomic::Ordering;

use oxigraph::model::{NamedNode, Quad};
use oxigraph::store::Transaction;

use super::{bulk, Store};
use crate::error::{Error, Result};

/// What one write wrote ahead of the lock.
pub struct Ahead {
    graph: NamedNode,
    note: Quad,
    /// The quads written.
    quads: usize,
    adopted: Cell<bool>,
}

impl Ahead {
    /// The transaction takes the graph as written ahead for its own, in place of inserting
    /// those quads: how many they were (the task's count).
    pub fn adopt(&self) -> usize {
        self.adopted.set(true);
        self.quads
    }

    /// In the transaction that owns the graph: removes the note — and, unless it adopted the
    /// graph (a failed task, a replay), the graph with its name, as the open's clean-up does,
    /// so that no empty graph stays listed.
    pub fn settle(&self, tx: &mut Transaction<'_>) -> Result<()> {
        if !self.adopted.get() {
            tx.remove_named_graph(self.graph.as_ref())?;
        }
        tx.remove(&self.note);
        Ok(())
    }
}

impl Store {
    /// Writes `quads`, all of `graph` — a graph no earlier write made, and no other write will
    /// until this one commits — with the graph's pending note, in one batch, without the
    /// writer lock.
    pub fn write_ahead(&self, graph: &NamedNode, quads: Vec<Quad>) -> Result<Ahead> {
        if self.sealed.load(Ordering::SeqCst) {
            return Err(Error::Unavailable("the node is shutting down".into()));
        }
        let note = bulk::note(graph);
        let count = quads.len();
        self.db.extend(std::iter::once(note.clone()).chain(quads))?;
        Ok(Ahead {
            graph: graph.clone(),
            note,
            quads: count,
            adopted: Cell::new(false),
        })
    }

    /// Removes what a write that did not commit wrote ahead (else the next open's clean-up
    /// would). Blocking.
    pub fn discard(&self, ahead: &Ahead) -> Result<()> {
        self.write(|tx| ahead.settle(tx))
    }
}
