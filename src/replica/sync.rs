//! Bringing a replica to the store's state, and comparing the two.
//!
//! Both read one snapshot of the store on a blocking thread and talk to the replica from it
//! (`Handle::block_on`): the snapshot must live until the last request is built, and it
//! borrows the store.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;
use std::sync::Arc;

use oxigraph::model::{Literal, NamedNode, Term};
use oxigraph::store::Transaction;
use sha2::{Digest, Sha256};

use super::client::{Client, Failure};
use super::log::{self, Entry};
use super::query::select;
use super::update::{self, Requests, GENID};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::vocab::dsn;

/// Where the replica keeps how far it is (the last log entry it holds): one triple, outside
/// the node's system graphs, holding nothing of any organisation.
pub const POSITION_GRAPH: &str = "urn:dataspace-node:replica";

pub fn replica_error(f: Failure) -> Error {
    Error::Unavailable(f.to_string())
}

/// The position triple (`<epoch>:<entry>`, see [`log::epoch`]), as update operations.
fn position(r: &mut Requests, reader: &Transaction<'_>, through: u64) -> Result<()> {
    let epoch = log::epoch(reader)?.unwrap_or_default();
    r.set(
        POSITION_GRAPH,
        &oxigraph::model::Triple::new(
            NamedNode::new_unchecked(POSITION_GRAPH),
            dsn("replicatedThrough"),
            Literal::new_simple_literal(format!("{epoch}:{through}")),
        ),
    );
    Ok(())
}

/// The replica's position (epoch, last entry); `None` when it holds none.
pub async fn replica_position(
    client: &Arc<Client>,
) -> std::result::Result<Option<(String, u64)>, Failure> {
    let text = format!(
        "SELECT ?n WHERE {{ GRAPH <{POSITION_GRAPH}> {{ <{POSITION_GRAPH}> <{}> ?n }} }}",
        dsn("replicatedThrough").as_str()
    );
    let rows = select(client, &text).await?;
    Ok(rows.first().and_then(|r| r.get("n")).and_then(|t| match t {
        Term::Literal(l) => {
            let (epoch, seq) = l.value().rsplit_once(':')?;
            Some((epoch.to_owned(), seq.parse().ok()?))
        }
        _ => None,
    }))
}

fn send(handle: &tokio::runtime::Handle, client: &Client, requests: Vec<String>) -> Result<()> {
    for text in requests {
        handle
            .block_on(client.update(text))
            .map_err(replica_error)?;
    }
    Ok(())
}

/// Ships every log entry of one snapshot: for each changed consignment, the markers that
/// went, the triples its commits removed, its contribution graphs as the snapshot holds
/// them, the markers that came — in one request where it fits; then the position. Returns the last entry shipped (`None`: nothing to ship). Blocking.
///
/// `clean`: everything before these entries was acknowledged and nothing of them was sent
/// (the previous batch of this process succeeded). A consignment these entries created is
/// then absent from the replica, and is inserted without a replacement (a third of the
/// replica's work for a new consignment). After a failure or a restart a batch may follow a
/// partly applied one: everything is replaced.
pub fn ship(
    store: &Store,
    client: &Client,
    handle: &tokio::runtime::Handle,
    clean: bool,
) -> Result<Option<u64>> {
    let reader = store.db().start_transaction()?;
    let entries = log::pending(&reader)?;
    let Some(through) = entries.last().map(|e| e.seq) else {
        return Ok(None);
    };
    let mut r = Requests::default();
    for (hex, merged) in log::merged(&entries) {
        let graphs = log::contribution_graphs(&reader, &hex)?;
        let new = clean && merged.created;
        // Markers that went before the data that came with them: a revoked organisation
        // never sees, even for a moment, what was written after its revocation.
        if !new {
            r.markers(&reader, &graphs, &merged.markers, false)?;
        }
        // Each graph: the triples the batch's commits removed, then what the snapshot holds
        // (inserting a triple the replica has is a no-op).
        for (g, gone) in &merged.removed {
            r.delete_lines(g, gone);
        }
        for g in &graphs {
            r.add(&reader, g)?;
        }
        r.markers(&reader, &graphs, &merged.markers, true)?;
        r.boundary();
        send(handle, client, r.ready())?;
    }
    position(&mut r, &reader, through)?;
    send(handle, client, r.finish())?;
    drop(reader);
    log::acknowledge(store, through, &entries)?;
    Ok(Some(through))
}

/// The replicated graphs of a snapshot.
fn store_graphs(reader: &Transaction<'_>) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    for g in reader.named_graphs() {
        if let oxigraph::model::NamedOrBlankNode::NamedNode(n) = g? {
            // A graph written ahead of a transaction that may still fail is not the store's yet.
            if log::replicated(n.as_str()) && !crate::store::bulk::pending(reader, &n)? {
                out.insert(n.into_string());
            }
        }
    }
    Ok(out)
}

/// The node's graphs on the replica (paged: a replica may cut long answers).
async fn replica_graphs(client: &Arc<Client>) -> std::result::Result<BTreeSet<String>, Failure> {
    const PAGE: usize = 10_000;
    let mut out = BTreeSet::new();
    for page in 0.. {
        let text = format!(
            "SELECT DISTINCT ?g WHERE {{ GRAPH ?g {{ ?s ?p ?o }} \
             FILTER(STRSTARTS(STR(?g), \"urn:dataspace-node:\")) }} \
             ORDER BY ?g LIMIT {PAGE} OFFSET {}",
            page * PAGE
        );
        let rows = select(client, &text).await?;
        let n = rows.len();
        for row in rows {
            if let Some(Term::NamedNode(g)) = row.get("g") {
                if log::replicated(g.as_str()) {
                    out.insert(g.as_str().to_owned());
                }
            }
        }
        if n < PAGE {
            break;
        }
    }
    Ok(out)
}

/// Replaces everything the replica holds of the node with one snapshot of the store: graphs
/// the store no longer has dropped, every replicated graph replaced. Returns the position
/// it brought the replica to. Blocking.
pub fn full(store: &Store, client: &Arc<Client>, handle: &tokio::runtime::Handle) -> Result<u64> {
    let reader = store.db().start_transaction()?;
    let entries: Vec<Entry> = log::pending(&reader)?;
    let through = entries
        .last()
        .map(|e| e.seq)
        .unwrap_or(0)
        .max(log::shipped(&reader)?);
    let ours = store_graphs(&reader)?;
    let theirs = handle
        .block_on(replica_graphs(client))
        .map_err(replica_error)?;
    let mut r = Requests::default();
    for gone in theirs.difference(&ours) {
        r.drop_graph(gone);
        r.boundary();
    }
    for (i, g) in ours.iter().enumerate() {
        let g = NamedNode::new_unchecked(g);
        // A graph the replica does not hold needs no replacement.
        if theirs.contains(g.as_str()) {
            r.replace(&reader, &g)?;
        } else {
            r.add(&reader, &g)?;
        }
        r.boundary();
        send(handle, client, r.ready())?;
        if (i + 1) % 10_000 == 0 {
            tracing::info!(graphs = i + 1, of = ours.len(), "replica sync");
        }
    }
    position(&mut r, &reader, through)?;
    send(handle, client, r.finish())?;
    drop(reader);
    log::acknowledge(store, through, &entries)?;
    tracing::info!(
        graphs = ours.len(),
        through,
        "replica synced with the store"
    );
    Ok(through)
}

/// One graph that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub graph: String,
    /// Triple count and hash of the canonical form, in the store and on the replica.
    pub store: (usize, String),
    pub replica: (usize, String),
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: store {} triples (sha256 {}), replica {} triples (sha256 {})",
            self.graph,
            self.store.0,
            &self.store.1[..16],
            self.replica.0,
            &self.replica.1[..16]
        )
    }
}

/// Compares every replicated graph of the store with the replica, up to blank-node naming
/// and the replica's normalisation of literals. Blocking. Also returns how many log entries
/// were not shipped yet (differences are expected then).
pub fn verify(
    store: &Store,
    client: &Arc<Client>,
    handle: &tokio::runtime::Handle,
) -> Result<(Vec<Difference>, usize)> {
    let reader = store.db().start_transaction()?;
    let unshipped = log::pending(&reader)?.len();
    let ours = store_graphs(&reader)?;
    let theirs = handle
        .block_on(replica_graphs(client))
        .map_err(replica_error)?;
    let mut out = Vec::new();
    let all: BTreeSet<&String> = ours.iter().chain(theirs.iter()).collect();
    let all: Vec<&String> = all.into_iter().collect();
    for chunk in all.chunks(50) {
        let mut remote = handle
            .block_on(replica_triples(client, chunk))
            .map_err(replica_error)?;
        for g in chunk {
            let local: Vec<String> = if ours.contains(*g) {
                update::graph_triples(&reader, &NamedNode::new_unchecked(g.as_str()))?
                    .iter()
                    .map(|t| {
                        line(
                            &t.subject.clone().into(),
                            &t.predicate.clone().into(),
                            &t.object,
                        )
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let local = digest(local);
            let remote = digest(remote.remove(g.as_str()).unwrap_or_default());
            if local != remote {
                out.push(Difference {
                    graph: (*g).clone(),
                    store: local,
                    replica: remote,
                });
            }
        }
    }
    Ok((out, unshipped))
}

/// The canonical lines of the replica's triples of `graphs`, per graph.
async fn replica_triples(
    client: &Arc<Client>,
    graphs: &[&String],
) -> std::result::Result<BTreeMap<String, Vec<String>>, Failure> {
    let values: String = graphs.iter().map(|g| format!("<{g}> ")).collect();
    let text =
        format!("SELECT ?g ?s ?p ?o WHERE {{ VALUES ?g {{ {values}}} GRAPH ?g {{ ?s ?p ?o }} }}");
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in select(client, &text).await? {
        let (Some(Term::NamedNode(g)), Some(s), Some(p), Some(o)) =
            (row.get("g"), row.get("s"), row.get("p"), row.get("o"))
        else {
            continue;
        };
        out.entry(g.as_str().to_owned())
            .or_default()
            .push(line(s, p, o));
    }
    Ok(out)
}

fn digest(mut lines: Vec<String>) -> (usize, String) {
    lines.sort();
    let mut h = Sha256::new();
    for l in &lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    (lines.len(), hex::encode(h.finalize()))
}

fn line(s: &Term, p: &Term, o: &Term) -> String {
    format!("{} {} {}", canonical(s), canonical(p), canonical(o))
}

/// A term as compared: blank nodes and their skolem IRIs alike, literals in the canonical
/// form of their datatype (the replica may store `1.50` as `1.5`, `en-GB` as `en-gb`).
fn canonical(t: &Term) -> String {
    match t {
        Term::BlankNode(b) => format!("_:{}", b.as_str()),
        Term::NamedNode(n) => match n.as_str().strip_prefix(GENID) {
            Some(id) => format!("_:{id}"),
            None => n.to_string(),
        },
        Term::Literal(l) => canonical_literal(l),
        #[allow(unreachable_patterns)]
        other => other.to_string(),
    }
}

fn canonical_literal(l: &Literal) -> String {
    if let Some(lang) = l.language() {
        return Literal::new_language_tagged_literal_unchecked(
            l.value(),
            lang.to_ascii_lowercase(),
        )
        .to_string();
    }
    let datatype = l.datatype();
    let local = datatype
        .as_str()
        .strip_prefix("http://www.w3.org/2001/XMLSchema#")
        .unwrap_or("");
    use oxsdatatypes::{Boolean, DateTime, Decimal, Double, Integer};
    let v = l.value();
    let value = match local {
        "decimal" => Decimal::from_str(v).ok().map(|d| d.to_string()),
        "integer" | "long" | "int" | "short" | "byte" | "nonNegativeInteger"
        | "positiveInteger" | "negativeInteger" | "nonPositiveInteger" | "unsignedLong"
        | "unsignedInt" | "unsignedShort" | "unsignedByte" => {
            Integer::from_str(v).ok().map(|i| i.to_string())
        }
        "double" | "float" => Double::from_str(v).ok().map(|d| d.to_string()),
        "boolean" => Boolean::from_str(v).ok().map(|b| b.to_string()),
        "dateTime" => DateTime::from_str(v).ok().map(|d| d.to_string()),
        _ => None,
    };
    match value {
        Some(value) => Literal::new_typed_literal(value, datatype.into_owned()).to_string(),
        None => l.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::model::BlankNode;

    #[test]
    fn compares_up_to_blank_node_naming_and_literal_normalisation() {
        let xsd =
            |l: &str| NamedNode::new_unchecked(format!("http://www.w3.org/2001/XMLSchema#{l}"));
        let pairs = [
            (
                Term::from(BlankNode::new_unchecked("a1")),
                Term::from(NamedNode::new_unchecked(format!("{GENID}a1"))),
            ),
            (
                Literal::new_typed_literal("1.50", xsd("decimal")).into(),
                Literal::new_typed_literal("1.5", xsd("decimal")).into(),
            ),
            (
                Literal::new_typed_literal("true", xsd("boolean")).into(),
                Literal::new_typed_literal("1", xsd("boolean")).into(),
            ),
            (
                Literal::new_language_tagged_literal_unchecked("colour", "en-GB").into(),
                Literal::new_language_tagged_literal_unchecked("colour", "en-gb").into(),
            ),
            (
                Literal::new_typed_literal("2024-01-01T10:00:00.5Z", xsd("dateTime")).into(),
                Literal::new_typed_literal("2024-01-01T10:00:00.500Z", xsd("dateTime")).into(),
            ),
        ];
        for (store, replica) in pairs {
            assert_eq!(
                canonical(&store),
                canonical(&replica),
                "{store} / {replica}"
            );
        }
        // Still different: another value, another blank node.
        assert_ne!(
            canonical(&Literal::new_typed_literal("1.51", xsd("decimal")).into()),
            canonical(&Literal::new_typed_literal("1.5", xsd("decimal")).into())
        );
        assert_ne!(
            canonical(&BlankNode::new_unchecked("a1").into()),
            canonical(&NamedNode::new_unchecked(format!("{GENID}a2")).into())
        );
    }
}
