//! Writes that skip the transaction: the bulk load's new contribution graphs, written by
//! Oxigraph's bulk loader (sorted files ingested into RocksDB in one step) instead of going
//! through the transaction's indexed batch and the memtables — where a Create's ~90 quads of
//! description, summary and system event spend most of its time (measured: RocksDB's skip-list
//! inserts were over half of a load's profile).
//!
//! Only quads that can be removed whole may be deferred: those of graphs that did not exist
//! before the write (a `Create`'s contribution graph), and those of subjects the write creates
//! in graphs that did (its record in the index, its payload on a new log entry). Nothing reads
//! them until the write commits. The order under the writer lock is:
//!
//! 1. the write's closure fills the transaction and the deferred quads;
//! 2. a small commit notes each deferred graph as pending (`<g> dsn:bulkPending true` in
//!    `urn:dataspace-node:system:bulk`), and the deferred subjects of each existing graph, in
//!    one note per graph (`<note> dsn:bulkPendingIn <g>; dsn:bulkPendingSubjects "<s1> <s2>
//!    …"`: a note per subject made the commit's notes and their removal cost a tenth of a
//!    load's rate, measured);
//! 3. the bulk loader ingests the deferred quads (atomic across column families);
//! 4. the transaction commits, removing the notes with everything else it writes.
//!
//! A crash before 3 completes leaves notes and no transaction; one between 3 and 4 leaves notes
//! and graphs whose records, log entries and markers were never committed. Either way
//! [`clean_up`], run by [`super::Store::open`] before anything reads, empties every noted graph,
//! removes every noted subject from its graph and drops the notes: the store holds whole writes
//! only.
//!
//! The transaction does not see deferred quads, so a later write of the same commit that would
//! read them asks here instead: the ids a deferred record claims ([`Deferred::claims`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use oxigraph::model::{GraphName, Literal, NamedNode, NamedOrBlankNode, Quad, Term};

use crate::error::Result;
use crate::vocab::dsn;

/// Quads written around the transaction, and the graphs they go to.
#[derive(Default)]
pub struct Deferred {
    quads: Vec<Quad>,
    graphs: BTreeSet<NamedNode>,
    /// Subjects created in graphs that existed before, by graph.
    subjects: BTreeMap<NamedNode, BTreeSet<NamedNode>>,
    /// The ids (any of globalId, identifier, `aig:<hex>`) of the deferred records, per
    /// publisher: (publisher, id).
    claimed: HashSet<(String, String)>,
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

    /// Defers `quad`, whose subject this write creates in its (existing) graph: nothing else
    /// has or will have a quad of that subject in that graph before the write commits.
    pub fn add_of_new_subject(&mut self, quad: Quad) {
        if let (NamedOrBlankNode::NamedNode(s), GraphName::NamedNode(g)) =
            (&quad.subject, &quad.graph_name)
        {
            let subjects = self.subjects.entry(g.clone()).or_default();
            if !subjects.contains(s) {
                subjects.insert(s.clone());
            }
            self.quads.push(quad);
        }
    }

    /// Notes that a deferred record of `publisher` holds `ids`.
    pub fn claim(&mut self, publisher: &str, ids: impl IntoIterator<Item = String>) {
        for id in ids {
            self.claimed.insert((publisher.to_owned(), id));
        }
    }

    /// Whether a deferred record of `publisher` holds `id`.
    pub fn claims(&self, publisher: &str, id: &str) -> bool {
        self.claimed
            .contains(&(publisher.to_owned(), id.to_owned()))
    }

    pub fn is_empty(&self) -> bool {
        self.quads.is_empty()
    }
}

/// Shared by the writes of one commit.
pub type DeferredCell = RefCell<Deferred>;

pub(super) fn notes_graph() -> NamedNode {
    NamedNode::new_unchecked("urn:dataspace-node:system:bulk")
}

/// Whether `graph` is noted as written ahead of a transaction that has not committed (in what
/// `reader` reads).
pub fn pending(reader: &oxigraph::store::Transaction<'_>, graph: &NamedNode) -> Result<bool> {
    Ok(reader.contains(&note(graph))?)
}

pub(super) fn note(graph: &NamedNode) -> Quad {
    Quad::new(
        NamedOrBlankNode::NamedNode(graph.clone()),
        dsn("bulkPending"),
        Term::Literal(Literal::from(true)),
        GraphName::NamedNode(notes_graph()),
    )
}

/// The note of the deferred subjects of one existing graph: on a node of its own, so that a
/// graph is the subject of a note only when it is new (and the clean-up empties it whole).
fn note_subjects((graph, subjects): (&NamedNode, &BTreeSet<NamedNode>)) -> [Quad; 2] {
    let node = NamedNode::new_unchecked(format!(
        "urn:dataspace-node:bulk-note:{}",
        uuid::Uuid::new_v4().simple()
    ));
    let listed: Vec<&str> = subjects.iter().map(NamedNode::as_str).collect();
    let g = GraphName::NamedNode(notes_graph());
    [
        Quad::new(
            node.clone(),
            dsn("bulkPendingIn"),
            Term::NamedNode(graph.clone()),
            g.clone(),
        ),
        Quad::new(
            node,
            dsn("bulkPendingSubjects"),
            Term::Literal(Literal::from(listed.join(" "))),
            g,
        ),
    ]
}

/// Steps 2 and 3; the caller's transaction removes the notes it is given back and commits.
/// `synced` makes the notes' commit durable before the ingest, which is durable at once.
pub(super) fn write(
    db: &oxigraph::store::Store,
    deferred: Deferred,
    synced: impl FnOnce(),
) -> Result<Vec<Quad>> {
    let notes: Vec<Quad> = deferred
        .graphs
        .iter()
        .map(note)
        .chain(deferred.subjects.iter().flat_map(note_subjects))
        .collect();
    let mut tx = db.start_transaction()?;
    for n in &notes {
        tx.insert(n);
    }
    tx.commit()?;
    synced();
    let mut loader = db
        .bulk_loader()
        .with_num_threads(2)
        .with_max_memory_size_in_megabytes(256);
    loader.load_quads(deferred.quads)?;
    loader.commit()?;
    Ok(notes)
}

/// Removes the table files a bulk write left in the store's directory: Oxigraph writes each
/// ingest's files there (`bulk-<n>.sst`), has RocksDB copy them in, then deletes them — a
/// process killed in between leaves them, and RocksDB ignores names it does not know, so
/// nothing else ever would. At open, with RocksDB's lock held: no other process writes any.
pub(super) fn remove_leftover_files(store_dir: &std::path::Path) -> Result<usize> {
    let mut removed = 0;
    for entry in std::fs::read_dir(store_dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("bulk-") && name.ends_with(".sst") && entry.file_type()?.is_file() {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::info!(
            files = removed,
            "removed table files an interrupted load left"
        );
    }
    Ok(removed)
}

/// What the notes say is not the store's yet: graphs written ahead whole, and subjects
/// written ahead into graphs that existed.
#[derive(Default)]
pub struct Noted {
    notes: Vec<Quad>,
    graphs: BTreeSet<NamedNode>,
    /// Subjects by graph.
    subjects: BTreeMap<NamedNode, BTreeSet<NamedNode>>,
}

impl Noted {
    /// The notes `db` holds.
    pub fn read(db: &oxigraph::store::Store) -> Result<Self> {
        let notes: Vec<Quad> = db
            .quads_for_pattern(None, None, None, Some(notes_graph().as_ref().into()))
            .collect::<std::result::Result<_, _>>()?;
        // A note node's graph and subjects, in either order among the notes.
        let mut by_note: BTreeMap<&NamedNode, (Option<NamedNode>, Vec<NamedNode>)> =
            BTreeMap::new();
        let mut graphs = BTreeSet::new();
        for n in &notes {
            let NamedOrBlankNode::NamedNode(s) = &n.subject else {
                continue;
            };
            match (
                n.predicate.as_str().strip_prefix(crate::vocab::DSN),
                &n.object,
            ) {
                (Some("bulkPendingIn"), Term::NamedNode(g)) => {
                    by_note.entry(s).or_default().0 = Some(g.clone());
                }
                (Some("bulkPendingSubjects"), Term::Literal(l)) => by_note
                    .entry(s)
                    .or_default()
                    .1
                    .extend(l.value().split_whitespace().map(NamedNode::new_unchecked)),
                (Some("bulkPending"), _) => {
                    graphs.insert(s.clone());
                }
                _ => {}
            }
        }
        let mut subjects: BTreeMap<NamedNode, BTreeSet<NamedNode>> = BTreeMap::new();
        for (g, listed) in by_note.into_values() {
            if let Some(g) = g {
                subjects.entry(g).or_default().extend(listed);
            }
        }
        Ok(Self {
            notes,
            graphs,
            subjects,
        })
    }

    /// Whether `quad` is one of what the notes name.
    pub fn covers(&self, quad: &Quad) -> bool {
        let GraphName::NamedNode(g) = &quad.graph_name else {
            return false;
        };
        if self.graphs.contains(g) {
            return true;
        }
        // Looked up by reference: a backup asks this of every quad of the store.
        match &quad.subject {
            NamedOrBlankNode::NamedNode(s) => {
                self.subjects.get(g).is_some_and(|set| set.contains(s))
            }
            _ => false,
        }
    }
}

/// Empties every graph and removes every subject a write noted ahead of its transaction and
/// did not commit; the number of notes removed. At open, before any reader.
pub fn clean_up(db: &oxigraph::store::Store) -> Result<usize> {
    let noted = Noted::read(db)?;
    if noted.notes.is_empty() {
        return Ok(0);
    }
    let mut tx = db.start_transaction()?;
    // A new graph: all of it goes.
    for g in &noted.graphs {
        remove_all(&mut tx, None, g)?;
        tx.remove_named_graph(g.as_ref())?;
    }
    // Subjects in a graph that existed: only their quads go.
    for (g, listed) in &noted.subjects {
        for s in listed {
            remove_all(&mut tx, Some(s), g)?;
        }
    }
    for n in &noted.notes {
        tx.remove(n);
    }
    tx.commit()?;
    Ok(noted.notes.len())
}

/// Removes the quads of `subject` (or all) in `graph`.
fn remove_all(
    tx: &mut oxigraph::store::Transaction<'_>,
    subject: Option<&NamedNode>,
    graph: &NamedNode,
) -> Result<()> {
    let quads: Vec<Quad> = tx
        .quads_for_pattern(
            subject.map(|s| s.as_ref().into()),
            None,
            None,
            Some(graph.as_ref().into()),
        )
        .collect::<std::result::Result<_, _>>()?;
    for q in &quads {
        tx.remove(q);
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::Store;

    /// `<urn:x:n> <urn:x:n> <urn:x:n>` in graph `g`.
    pub(crate) fn quad(g: &str, n: u32) -> Quad {
        let s = NamedNode::new_unchecked(format!("urn:x:{n}"));
        Quad::new(
            s.clone(),
            s.clone(),
            s,
            GraphName::NamedNode(NamedNode::new_unchecked(g)),
        )
    }

    fn of(subject: u32, object: u32, g: &str) -> Quad {
        Quad::new(
            NamedNode::new_unchecked(format!("urn:x:{subject}")),
            NamedNode::new_unchecked("urn:x:p"),
            NamedNode::new_unchecked(format!("urn:x:{object}")),
            GraphName::NamedNode(NamedNode::new_unchecked(g)),
        )
    }

    #[test]
    fn table_files_an_interrupted_load_left_go_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path()).unwrap());
        let left = dir.path().join("bulk-1234567890.sst");
        let other = dir.path().join("bulk-notes.txt");
        std::fs::write(&left, b"not a table").unwrap();
        std::fs::write(&other, b"kept").unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert!(!left.exists());
        assert!(other.exists(), "only the loader's table files go");
        assert_eq!(store.db().len().unwrap(), 0);
    }

    #[test]
    fn deferred_quads_commit_with_the_transaction_or_go_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store
                .commit_deferred(|tx, _, deferred| {
                    let mut d = deferred.borrow_mut();
                    d.add(quad("urn:g:kept", 1));
                    d.add_of_new_subject(of(10, 1, "urn:g:index"));
                    d.add_of_new_subject(of(10, 2, "urn:g:index"));
                    tx.insert(&quad("urn:g:index", 1));
                    Ok(())
                })
                .unwrap();
            // A crash between the ingest and the commit: the notes, the ingested graph and
            // the new subject's quads in a graph that holds others, no transaction.
            let mut d = Deferred::default();
            d.add(quad("urn:g:lost", 2));
            d.add(quad("urn:g:lost", 3));
            d.add_of_new_subject(of(11, 1, "urn:g:index"));
            d.add_of_new_subject(of(11, 2, "urn:g:index"));
            d.add_of_new_subject(of(12, 1, "urn:g:index"));
            write(store.db(), d, || ()).unwrap();
            assert!(store.db().contains(&quad("urn:g:lost", 2)).unwrap());
            // A graph that existed is never a note's subject: only a new graph's note is about
            // the whole graph.
            let notes = store
                .db()
                .quads_for_pattern(None, None, None, Some(notes_graph().as_ref().into()))
                .map(|q| q.unwrap().subject.to_string())
                .collect::<Vec<_>>();
            assert!(!notes.contains(&"<urn:g:index>".to_owned()), "{notes:?}");
            assert!(store.db().contains(&of(11, 2, "urn:g:index")).unwrap());
        }
        let store = Store::open(dir.path()).unwrap();
        let db = store.db();
        assert!(db.contains(&quad("urn:g:kept", 1)).unwrap());
        assert!(db.contains(&quad("urn:g:index", 1)).unwrap());
        assert!(db.contains(&of(10, 1, "urn:g:index")).unwrap());
        assert!(db.contains(&of(10, 2, "urn:g:index")).unwrap());
        assert!(!db.contains(&quad("urn:g:lost", 2)).unwrap());
        assert!(!db.contains(&quad("urn:g:lost", 3)).unwrap());
        assert!(!db.contains(&of(11, 1, "urn:g:index")).unwrap());
        assert!(!db.contains(&of(11, 2, "urn:g:index")).unwrap());
        assert!(!db.contains(&of(12, 1, "urn:g:index")).unwrap());
        let index = NamedNode::new_unchecked("urn:g:index");
        assert!(db.contains_named_graph(index.as_ref()).unwrap());
        let notes = db.quads_for_pattern(None, None, None, Some(notes_graph().as_ref().into()));
        assert_eq!(notes.count(), 0);
        assert_eq!(db.len().unwrap(), 4);
    }
}
