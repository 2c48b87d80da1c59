//! The floor of a Create as the issue defines it: the raw Oxigraph insert of the quads the
//! node wrote for one Create. They are read back from the store after the node stopped (the
//! consignment's contribution graph, its index record, its activity and log entry, its
//! readable markers) and inserted again into a fresh store, one transaction per activity, each
//! copy with its own ids (every consignment-specific token replaced by one of the same length,
//! blank nodes fresh), so that each insert writes new keys and strings as a Create does.
//!
//! The older floor, the example's expansion padded with short quads, stays in the table: its
//! strings of 16 bytes or less are inlined in Oxigraph's keys, while the node's IRIs and
//! literals are longer and each is also written to `id2str`, so it understated the cost of
//! the node's quads (padding with IRIs as long as the node's raised it from 1.8–2.0 ms to
//! 2.2–2.4 ms per insert in alternating runs, 2026-11-26).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use dataspace_node::store::graphs;
use dataspace_node::vocab::dsn;
use oxigraph::model::vocab::rdf;
use oxigraph::model::{
    BlankNode, GraphName, Literal, NamedNode, NamedOrBlankNode, NamedOrBlankNodeRef, Quad, Term,
};

/// The quads the Create of one of `org`'s consignments wrote, as stored: the first consignment
/// found that nothing happened to after its Create (its graph holds one system event). Empty
/// when none.
pub fn of_a_create(dir: &Path, org: &str) -> Vec<Quad> {
    let store = dataspace_node::store::Store::open_read_only(&dir.join("store")).unwrap();
    let db = store.db();
    let publisher = dsn("publisher");
    let org_term = Term::NamedNode(NamedNode::new_unchecked(org));
    let index = graphs::consignment_index();
    let records = db.quads_for_pattern(
        None,
        Some(publisher.as_ref()),
        Some(org_term.as_ref()),
        Some(index.as_ref().into()),
    );
    let system_event = Term::NamedNode(dsn("SystemEvent"));
    for record in records.take(10_000) {
        let NamedOrBlankNode::NamedNode(record) = record.unwrap().subject else {
            continue;
        };
        let Some(hex) = graphs::consignment_hex(record.as_str()) else {
            continue;
        };
        let graph = graphs::contribution(hex, org);
        let revisions = db
            .quads_for_pattern(
                None,
                Some(rdf::TYPE),
                Some(system_event.as_ref()),
                Some(graph.as_ref().into()),
            )
            .count();
        if revisions == 1 {
            return of_create(db, org, hex);
        }
    }
    Vec::new()
}

/// The quads the Create of consignment `hex` (of organisation `org`) wrote, as stored.
fn of_create(db: &oxigraph::store::Store, org: &str, hex: &str) -> Vec<Quad> {
    let (record, graph) = (graphs::consignment(hex), graphs::contribution(hex, org));
    let all = |s: Option<NamedOrBlankNodeRef<'_>>,
               p: Option<&NamedNode>,
               o: Option<&Term>,
               g: &NamedNode|
     -> Vec<Quad> {
        db.quads_for_pattern(
            s,
            p.map(NamedNode::as_ref),
            o.map(Term::as_ref),
            Some(g.as_ref().into()),
        )
        .collect::<Result<_, _>>()
        .unwrap()
    };
    let mut out = all(None, None, None, &graph);
    out.extend(all(
        Some(record.as_ref().into()),
        None,
        None,
        &graphs::consignment_index(),
    ));
    // The activity's log entry, which the summary names and which holds the payload.
    let activities = graphs::activities(org);
    let entry_link = dsn("logEntry");
    let summary = graphs::summary(hex);
    for link in all(
        Some(summary.as_ref().into()),
        Some(&entry_link),
        None,
        &graph,
    ) {
        let Term::NamedNode(entry) = &link.object else {
            continue;
        };
        out.extend(all(Some(entry.as_ref().into()), None, None, &activities));
    }
    let markers = graphs::readable(org);
    let graph_term = Term::NamedNode(graph.clone());
    out.extend(all(Some(graph.as_ref().into()), None, None, &markers));
    out.extend(all(None, None, Some(&graph_term), &markers));
    out
}

/// The kinds of node the node mints for one consignment and one activity (the organisation's
/// own graphs, e.g. `activities:<key>`, stay the same across copies, as across Creates).
const MINTED: [&str; 6] = [
    "consignment",
    "summary",
    "contribution",
    "activity-log",
    "activity",
    "system-event",
];

/// Strings that name this consignment, its activity, entry and system event: the ids minted
/// for it (the hex or uuid after `urn:dataspace-node:<kind>:`) and its globalId and identifier.
fn tokens(quads: &[Quad]) -> Vec<String> {
    let mut out = BTreeSet::new();
    let minted = "urn:dataspace-node:";
    let mut named = |iri: &str| {
        if let Some(rest) = iri.strip_prefix(minted) {
            if let Some((kind, id)) = rest.split_once(':') {
                let id = id.split(':').next().unwrap_or(id);
                if MINTED.contains(&kind) && id.len() >= 12 {
                    out.insert(id.to_owned());
                }
            }
        }
    };
    for q in quads {
        if let NamedOrBlankNode::NamedNode(n) = &q.subject {
            named(n.as_str());
        }
        if let Term::NamedNode(n) = &q.object {
            named(n.as_str());
        }
    }
    for q in quads {
        let p = q.predicate.as_str();
        if p == dsn("globalId").as_str() || p == dsn("identifier").as_str() {
            if let Term::Literal(l) = &q.object {
                out.insert(l.value().to_owned());
            }
        }
    }
    // Longest first: a token inside a longer one is replaced with it.
    let mut out: Vec<String> = out.into_iter().filter(|t| t.len() >= 12).collect();
    out.sort_by_key(|t| std::cmp::Reverse(t.len()));
    out
}

/// `text` with every token replaced by its copy's.
fn relabel(text: &str, tokens: &[(String, String)]) -> String {
    let mut out = text.to_owned();
    for (from, to) in tokens {
        if out.contains(from.as_str()) {
            out = out.replace(from.as_str(), to);
        }
    }
    out
}

/// Copy `i` of `quads`: each token's last 12 characters become `i` and the token's position
/// (hex), so lengths stay; blank nodes fresh.
fn copy_of(quads: &[Quad], tokens: &[String], i: usize) -> Vec<Quad> {
    let pairs: Vec<(String, String)> = tokens
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let tail = format!("{:08x}{:04x}", i, k);
            (t.clone(), format!("{}{tail}", &t[..t.len() - tail.len()]))
        })
        .collect();
    let mut blanks: HashMap<String, BlankNode> = HashMap::new();
    let mut blank = |b: &BlankNode| blanks.entry(b.as_str().to_owned()).or_default().clone();
    let named = |n: &NamedNode| NamedNode::new_unchecked(relabel(n.as_str(), &pairs));
    quads
        .iter()
        .map(|q| {
            let subject: NamedOrBlankNode = match &q.subject {
                NamedOrBlankNode::NamedNode(n) => named(n).into(),
                NamedOrBlankNode::BlankNode(b) => blank(b).into(),
            };
            let object: Term = match &q.object {
                Term::NamedNode(n) => named(n).into(),
                Term::BlankNode(b) => blank(b).into(),
                Term::Literal(l) => {
                    let value = relabel(l.value(), &pairs);
                    match l.language() {
                        Some(lang) => Literal::new_language_tagged_literal_unchecked(value, lang),
                        None => Literal::new_typed_literal(value, l.datatype().into_owned()),
                    }
                    .into()
                }
                #[allow(unreachable_patterns)]
                other => other.clone(),
            };
            let graph: GraphName = match &q.graph_name {
                GraphName::NamedNode(n) => named(n).into(),
                other => other.clone(),
            };
            Quad::new(subject, q.predicate.clone(), object, graph)
        })
        .collect()
}

/// `activities` inserts of `template`'s copies into a fresh store, one transaction each.
/// With `synced`, each insert is followed by a sync of the store's write-ahead log, as the
/// node's commits are (`--sync-commits`): the floor of a durable Create. The store is in the
/// system's temporary directory: where that is a tmpfs, a sync costs nothing and this floor is
/// the unsynced one (on the machine of docs/PERFORMANCE.md, `/tmp` is on its disk).
pub fn raw_insert(template: &[Quad], activities: usize, synced: bool) -> Vec<Duration> {
    let tokens = tokens(template);
    let dir = tempfile::tempdir().unwrap();
    let store = oxigraph::store::Store::open(dir.path()).unwrap();
    let wal = synced.then(|| dataspace_node::store::wal::Wal::open(dir.path()).unwrap());
    let mut out = Vec::with_capacity(activities);
    for i in 0..activities {
        let quads = copy_of(template, &tokens, i);
        let t = Instant::now();
        let mut tx = store.start_transaction().unwrap();
        for q in &quads {
            tx.insert(q);
        }
        tx.commit().unwrap();
        if let Some(wal) = &wal {
            wal.sync().unwrap();
        }
        out.push(t.elapsed());
    }
    // Every copy wrote new quads, as every Create does (none left with the template's ids).
    assert_eq!(store.len().unwrap(), activities * template.len());
    out
}
