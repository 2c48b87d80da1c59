//! The replication log: which consignments each commit changed, written in the commit's own
//! transaction, removed once the replica has them.
//!
//! ```turtle
//! GRAPH <urn:dataspace-node:system:replication> {
//!   <urn:dataspace-node:replication:42> dsn:replicates "{\"ms\":…,\"c\":[{\"hex\":…,\"m\":[…]}]}"^^rdf:JSON .
//!   <urn:dataspace-node:replication> dsn:shippedThrough 41 .
//! }
//! ```
//!
//! An entry names the consignments (their aig hex) whose contribution graphs or markers the
//! commit changed, and for each the marker graphs (organisations) whose markers of them it
//! may have changed. It names, not copies: the shipper reads what to send from one snapshot
//! of the store (`ship`), so a SIGKILL anywhere loses nothing (an entry is removed only after
//! the replica acknowledged it) and nothing is shipped out of order (every graph is sent as
//! the snapshot holds it, the markers with it).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use oxigraph::model::{GraphName, Literal, NamedNode, Quad, Term};
use oxigraph::store::Transaction;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::{graphs, records, Committed, Events, Journal, Store};
use crate::vocab::{dsn, json_literal, xsd};

fn graph() -> NamedNode {
    NamedNode::new_unchecked("urn:dataspace-node:system:replication")
}

fn position_node() -> NamedNode {
    NamedNode::new_unchecked("urn:dataspace-node:replication")
}

const ENTRY: &str = "urn:dataspace-node:replication:";

/// One consignment a commit changed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Touched {
    pub hex: String,
    /// Marker graphs that held or now hold markers of its contribution graphs.
    #[serde(rename = "m")]
    pub markers: Vec<String>,
    /// The commit created the consignment: the replica holds nothing of it before.
    #[serde(rename = "new", default, skip_serializing_if = "std::ops::Not::not")]
    pub created: bool,
    /// The triples the commit removed from each of its contribution graphs (N-Triples lines,
    /// blank nodes skolemised): the replica deletes exactly these.
    #[serde(rename = "gone", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub removed: BTreeMap<String, Vec<String>>,
}

/// One log entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    #[serde(skip)]
    pub seq: u64,
    /// The commit's time, in ms since the epoch (the replication lag is measured from it).
    pub ms: i64,
    #[serde(rename = "c")]
    pub consignments: Vec<Touched>,
}

impl Entry {
    fn quad(&self) -> Quad {
        Quad::new(
            NamedNode::new_unchecked(format!("{ENTRY}{}", self.seq)),
            dsn("replicates"),
            json_literal(serde_json::to_string(self).unwrap_or_default()),
            graph(),
        )
    }
}

/// Whether `iri` names a graph the replica mirrors: a contribution graph or an
/// organisation's markers.
pub fn replicated(iri: &str) -> bool {
    graphs::parse_contribution(iri).is_some() || is_markers(iri)
}

pub fn is_markers(iri: &str) -> bool {
    let root = graphs::readable_root();
    iri.strip_prefix(root.as_str())
        .is_some_and(|rest| rest.starts_with(':'))
}

/// The contribution graphs of consignment `hex` on this node: its publisher's and its other
/// contributors'.
pub fn contribution_graphs(reader: &Transaction<'_>, hex: &str) -> Result<Vec<NamedNode>> {
    let orgs: BTreeSet<String> = records::contributors(reader, &graphs::consignment(hex))?
        .into_iter()
        .collect();
    Ok(orgs
        .iter()
        .map(|org| graphs::contribution(hex, org))
        .collect())
}

/// The marker graphs holding markers of `graph` in `quads` (a store or a transaction).
fn marker_graphs(
    quads: impl Iterator<Item = std::result::Result<Quad, oxigraph::store::StorageError>>,
    out: &mut BTreeSet<String>,
) -> Result<()> {
    for q in quads {
        if let GraphName::NamedNode(m) = q?.graph_name {
            if is_markers(m.as_str()) {
                out.insert(m.into_string());
            }
        }
    }
    Ok(())
}

/// Writes a log entry for every commit that changed a consignment. Registered only when a
/// replica is configured.
pub struct Log {
    store: Arc<Store>,
    next: AtomicU64,
}

impl Log {
    /// The log of `store`, numbering on after what it holds; also the entries still waiting
    /// to be shipped. Blocking.
    pub fn open(store: Arc<Store>) -> Result<(Self, Vec<Entry>)> {
        if epoch(&store.db().start_transaction()?)?.is_none() {
            let fresh = Quad::new(
                position_node(),
                dsn("epoch"),
                Literal::new_simple_literal(uuid::Uuid::new_v4().simple().to_string()),
                graph(),
            );
            store.write(|tx| {
                tx.insert(&fresh);
                Ok(())
            })?;
        }
        let reader = store.db().start_transaction()?;
        let waiting = pending(&reader)?;
        let last = waiting
            .last()
            .map(|e| e.seq)
            .unwrap_or(0)
            .max(shipped(&reader)?);
        drop(reader);
        let log = Self {
            store,
            next: AtomicU64::new(last + 1),
        };
        Ok((log, waiting))
    }

    /// What the transaction changed of `hex`'s contribution graphs: the marker graphs that
    /// held or now hold their markers, and the triples it removed (none when it `created`
    /// the consignment).
    fn touched(&self, tx: &Transaction<'_>, hex: &str, created: bool) -> Result<Touched> {
        let predicate = dsn("readableIn");
        let mut markers = BTreeSet::new();
        let mut removed = BTreeMap::new();
        for g in contribution_graphs(tx, hex)? {
            let subject = Some(g.as_ref().into());
            let before =
                self.store
                    .db()
                    .quads_for_pattern(subject, Some(predicate.as_ref()), None, None);
            marker_graphs(before, &mut markers)?;
            let now = tx.quads_for_pattern(subject, Some(predicate.as_ref()), None, None);
            marker_graphs(now, &mut markers)?;
            if !created {
                let gone = self.removed(tx, &g)?;
                if !gone.is_empty() {
                    removed.insert(g.into_string(), gone);
                }
            }
        }
        Ok(Touched {
            hex: hex.to_owned(),
            markers: markers.into_iter().collect(),
            created,
            removed,
        })
    }

    /// The triples of `graph` committed before this transaction and not in it.
    fn removed(&self, tx: &Transaction<'_>, graph: &NamedNode) -> Result<Vec<String>> {
        let g: oxigraph::model::GraphNameRef<'_> = graph.as_ref().into();
        let mut out = Vec::new();
        for q in self.store.db().quads_for_pattern(None, None, None, Some(g)) {
            let q = q?;
            if !tx.contains(&q)? {
                out.push(super::update::line(&oxigraph::model::Triple::new(
                    q.subject,
                    q.predicate,
                    q.object,
                )));
            }
        }
        Ok(out)
    }
}

impl Journal for Log {
    fn record(&self, tx: &mut Transaction<'_>, events: &mut Events) -> Result<()> {
        let hexes: BTreeSet<String> = events
            .iter()
            .filter_map(|e| e.consignment().map(str::to_owned))
            .collect();
        if hexes.is_empty() {
            return Ok(());
        }
        let created: BTreeSet<&str> = events
            .iter()
            .filter_map(|e| match e {
                Committed::ConsignmentCreated { aig, .. } => {
                    Some(aig.strip_prefix("aig:").unwrap_or(aig))
                }
                _ => None,
            })
            .collect();
        let consignments = hexes
            .iter()
            .map(|hex| self.touched(tx, hex, created.contains(hex.as_str())))
            .collect::<Result<Vec<_>>>()?;
        // Under the writer lock: numbers increase in commit order. A number taken by a write
        // whose commit then failed is a gap the shipper skips.
        let seq = self.next.fetch_add(1, Ordering::SeqCst);
        let ms = chrono::Utc::now().timestamp_millis();
        let entry = Entry {
            seq,
            ms,
            consignments,
        };
        tx.insert(&entry.quad());
        events.push(Committed::ReplicationLogged { seq, ms });
        Ok(())
    }
}

/// The entries not yet shipped, in commit order.
pub fn pending(reader: &Transaction<'_>) -> Result<Vec<Entry>> {
    let p = dsn("replicates");
    let g = graph();
    let mut out = Vec::new();
    for q in reader.quads_for_pattern(None, Some(p.as_ref()), None, Some(g.as_ref().into())) {
        let q = q?;
        let (oxigraph::model::NamedOrBlankNode::NamedNode(s), Term::Literal(l)) =
            (&q.subject, &q.object)
        else {
            continue;
        };
        let Some(seq) = s.as_str().strip_prefix(ENTRY).and_then(|n| n.parse().ok()) else {
            continue;
        };
        match serde_json::from_str::<Entry>(l.value()) {
            Ok(mut e) => {
                e.seq = seq;
                out.push(e);
            }
            Err(e) => tracing::error!(error = %e, seq, "unreadable replication log entry skipped"),
        }
    }
    out.sort_by_key(|e| e.seq);
    Ok(out)
}

/// What a batch ships of one consignment.
#[derive(Debug, Default)]
pub struct Merged {
    /// Marker graphs named by any of its entries.
    pub markers: BTreeSet<String>,
    /// Its first entry in the batch created it.
    pub created: bool,
    /// The triples its entries removed, per contribution graph.
    pub removed: BTreeMap<String, BTreeSet<String>>,
}

/// The consignments of `entries`, each with what its entries named, merged.
pub fn merged(entries: &[Entry]) -> BTreeMap<String, Merged> {
    let mut out: BTreeMap<String, Merged> = BTreeMap::new();
    for e in entries {
        for t in &e.consignments {
            let first = !out.contains_key(&t.hex);
            let m = out.entry(t.hex.clone()).or_default();
            m.created |= first && t.created;
            m.markers.extend(t.markers.iter().cloned());
            for (g, gone) in &t.removed {
                m.removed
                    .entry(g.clone())
                    .or_default()
                    .extend(gone.iter().cloned());
            }
        }
    }
    out
}

/// The log's epoch: a random id made when the log starts, new after [`forget`]. A replica's
/// position counts only with the epoch it was written in: positions of a log dropped while
/// the node ran without a replica say nothing about the changes made meanwhile.
pub fn epoch(reader: &Transaction<'_>) -> Result<Option<String>> {
    bookkeeping(reader, "epoch")
}

/// The last entry the replica acknowledged (0: none yet).
pub fn shipped(reader: &Transaction<'_>) -> Result<u64> {
    Ok(bookkeeping(reader, "shippedThrough")?
        .and_then(|v| v.parse().ok())
        .unwrap_or(0))
}

/// The value of the log's own `dsn:<predicate>`.
fn bookkeeping(reader: &Transaction<'_>, predicate: &str) -> Result<Option<String>> {
    crate::store::records::literal(reader, &position_node(), predicate, graph().as_ref())
}

fn position(through: u64) -> Quad {
    Quad::new(
        position_node(),
        dsn("shippedThrough"),
        Literal::new_typed_literal(through.to_string(), xsd("integer")),
        graph(),
    )
}

/// Records that the replica has everything through entry `through`: removes `entries` (the
/// shipped ones) and moves the position. Blocking.
pub fn acknowledge(store: &Store, through: u64, entries: &[Entry]) -> Result<()> {
    store.write(|tx| {
        for e in entries {
            tx.remove(&e.quad());
        }
        let old = shipped(tx)?;
        tx.remove(&position(old));
        tx.insert(&position(through.max(old)));
        Ok(())
    })
}

/// Drops the log and its position: the node runs without a replica, so a replica configured
/// later starts with a full sync instead of trusting a position whose changes were not logged.
/// Blocking.
pub fn forget(store: &Store) -> Result<()> {
    let g = GraphName::NamedNode(graph());
    if store
        .db()
        .quads_for_pattern(None, None, None, Some(g.as_ref()))
        .next()
        .is_none()
    {
        return Ok(());
    }
    store.write(|tx| {
        tx.clear_graph(g.as_ref())?;
        Ok(())
    })
}
