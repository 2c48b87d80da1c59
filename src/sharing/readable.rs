//! Which contribution graphs each organisation may read, kept in the store next to the data.
//!
//! The SPARQL endpoint decides per graph name which graphs a caller reads
//! ([`crate::sparql::Readable`], from the in-memory indexes). That costs a dictionary read per
//! solution — Oxigraph hands a check the decoded graph IRI — which over 100,000 consignments
//! is a third more than the query itself. So the same decision is also written down as
//! quads, one organisation per graph (`urn:dataspace-node:system:readable:<hash of its DID>`):
//!
//! ```turtle
//! <contribution graph> dsn:readableIn dsn:OwnScope , dsn:AllScope .     # its own
//! <contribution graph> dsn:readableIn dsn:SharedScope , dsn:AllScope .  # its circles'
//! ```
//!
//! and a broad query joins its graphs with the caller's markers of its scope: a scan of
//! encoded terms hashed once, where every solution is probed without decoding anything.
//!
//! The markers follow the events that change what `Readable` answers, in the same
//! transaction as the data: a new contribution graph (its contributor, and everyone already
//! in the consignment's circle), a new circle member (every contribution graph of the
//! consignment), a member leaving (the same, removed). [`rebuild`] writes them for a store
//! without them (`import` leaves them out); a test compares them with `Readable` after a
//! sharing scenario.

use oxigraph::model::{GraphName, NamedNode, Quad};
use oxigraph::store::Transaction;

use crate::error::Result;
use crate::store::records::{circle, contributors};
use crate::store::{graphs, Store};
use crate::vocab::dsn;

/// The scope a marked graph is readable in besides `all` (every marker is written for `all`
/// too, so the endpoint's look-up is one constant pattern whatever the caller's scope).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Own,
    Shared,
}

pub fn predicate() -> NamedNode {
    dsn("readableIn")
}

/// The marker object of a query scope (`own`, `shared`, `all`).
pub fn scope_marker(own: bool, shared: bool) -> NamedNode {
    dsn(match (own, shared) {
        (true, false) => "OwnScope",
        (false, true) => "SharedScope",
        _ => "AllScope",
    })
}

fn quads(graph: &NamedNode, org: &str, kind: Kind) -> [Quad; 2] {
    let marks = GraphName::NamedNode(graphs::readable(org));
    let scope = match kind {
        Kind::Own => dsn("OwnScope"),
        Kind::Shared => dsn("SharedScope"),
    };
    [
        Quad::new(graph.clone(), predicate(), scope, marks.clone()),
        Quad::new(graph.clone(), predicate(), dsn("AllScope"), marks),
    ]
}

fn mark(tx: &mut Transaction<'_>, graph: &NamedNode, org: &str, kind: Kind) {
    for q in quads(graph, org, kind) {
        tx.insert(&q);
    }
}

fn unmark(tx: &mut Transaction<'_>, graph: &NamedNode, org: &str, kind: Kind) {
    for q in quads(graph, org, kind) {
        tx.remove(&q);
    }
}

/// `org` wrote its first contribution to consignment `aig_hex` (`record`): its own, and
/// shared with every other member of the circle. Call after the circle's quads are written.
pub fn contribution_added(
    tx: &mut Transaction<'_>,
    record: &NamedNode,
    aig_hex: &str,
    org: &str,
) -> Result<()> {
    let graph = graphs::contribution(aig_hex, org);
    mark_graph(tx, &graph, org, record)
}

/// The markers of one contribution graph, written by `owner`: its own, and shared with every
/// member of the circle whose key differs (as `sparql::Readable` decides, by the key in the
/// graph's name).
fn mark_graph(
    tx: &mut Transaction<'_>,
    graph: &NamedNode,
    owner: &str,
    record: &NamedNode,
) -> Result<()> {
    let key = graphs::org_key(owner);
    mark(tx, graph, owner, Kind::Own);
    for member in circle(tx, record)? {
        if graphs::org_key(&member) != key {
            mark(tx, graph, &member, Kind::Shared);
        }
    }
    Ok(())
}

/// `org` joined the circle of consignment `aig_hex`: every contribution graph of it that is
/// not its own becomes readable in its shared scope.
pub fn member_added(
    tx: &mut Transaction<'_>,
    record: &NamedNode,
    aig_hex: &str,
    org: &str,
) -> Result<()> {
    each_other_graph(tx, record, aig_hex, org, mark)
}

/// `org` left the circle (no grant shares the consignment with it any more).
pub fn member_removed(
    tx: &mut Transaction<'_>,
    record: &NamedNode,
    aig_hex: &str,
    org: &str,
) -> Result<()> {
    each_other_graph(tx, record, aig_hex, org, unmark)
}

fn each_other_graph(
    tx: &mut Transaction<'_>,
    record: &NamedNode,
    aig_hex: &str,
    org: &str,
    f: fn(&mut Transaction<'_>, &NamedNode, &str, Kind),
) -> Result<()> {
    let key = graphs::org_key(org);
    for contributor in contributors(tx, record)? {
        if graphs::org_key(&contributor) != key {
            f(
                tx,
                &graphs::contribution(aig_hex, &contributor),
                org,
                Kind::Shared,
            );
        }
    }
    Ok(())
}

/// The aig hex of a record node (`urn:dataspace-node:consignment:<hex>`).
pub fn aig_hex(record: &NamedNode) -> Option<&str> {
    graphs::consignment_hex(record.as_str())
}

/// Notes, in the store, that every contribution graph has its markers.
fn complete() -> Quad {
    Quad::new(
        graphs::readable_root(),
        dsn("markersLayout"),
        oxigraph::model::Literal::from(2_i64),
        GraphName::NamedNode(graphs::readable_root()),
    )
}

/// Writes the markers of every contribution graph in a store that does not note them complete:
/// a new store, or one `import` filled (exports leave the markers out: derived data, which an
/// edited dump must not bring along). A store that has them costs one look-up. Returns how
/// many graphs were marked. Blocking.
pub fn rebuild(store: &Store) -> Result<usize> {
    let db = store.db();
    if db.contains(&complete())? {
        return Ok(0);
    }
    let mut contributions = Vec::new();
    for g in db.named_graphs() {
        if let oxigraph::model::NamedOrBlankNode::NamedNode(g) = g? {
            if graphs::parse_contribution(g.as_str()).is_some() {
                contributions.push(g);
            }
        }
    }
    // In slices, so a big store is not one huge transaction; a rebuild cut short is done
    // again at the next start (the note comes last, and writing a marker again changes
    // nothing).
    for chunk in contributions.chunks(2_000) {
        store.write(|tx| {
            for g in chunk {
                let Some((hex, key)) = graphs::parse_contribution(g.as_str()) else {
                    continue;
                };
                let record = graphs::consignment(hex);
                // The graph's writer: the publisher or the contributor its key names.
                let owner = contributors(tx, &record)?
                    .into_iter()
                    .find(|o| graphs::org_key(o) == key);
                match owner {
                    Some(owner) => mark_graph(tx, g, &owner, &record)?,
                    None => tracing::warn!(
                        graph = g.as_str(),
                        "contribution graph of no known writer left without markers"
                    ),
                }
            }
            Ok(())
        })?;
    }
    store.write(|tx| {
        tx.insert(&complete());
        Ok(())
    })?;
    // A big rebuild fills the memtables before the node serves: written out, and their memory
    // returned, now rather than at the first scheduled flush.
    store.flush()?;
    crate::store::memory::release_free();
    Ok(contributions.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(store: &Store, org: &str) -> Vec<(String, String)> {
        let g = graphs::readable(org);
        let mut out: Vec<(String, String)> = store
            .db()
            .quads_for_pattern(None, None, None, Some(g.as_ref().into()))
            .map(|q| {
                let q = q.unwrap();
                (q.subject.to_string(), q.object.to_string())
            })
            .collect();
        out.sort();
        out
    }

    /// A store without the markers (an import) gets them at start-up, as routing and
    /// contributions would have written them; a second start changes nothing.
    #[test]
    fn a_store_without_the_markers_gets_them_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (publisher, agency, outsider) = (
            "did:web:node.example:org:trader",
            "did:web:node.example:org:agency",
            "did:web:node.example:org:outsider",
        );
        let partner = "did:web:partner.example:org:outsider";
        let hex = "00ff";
        let record = graphs::consignment(hex);
        let own = graphs::contribution(hex, publisher);
        let event = graphs::contribution(hex, agency);
        let elsewhere = graphs::contribution("0aaa", outsider);
        let org = |o: &str| NamedNode::new_unchecked(o);
        store
            .write(|tx| {
                for g in [&own, &event, &elsewhere] {
                    tx.insert(&Quad::new(
                        org("urn:x:s"),
                        dsn("p"),
                        org("urn:x:o"),
                        GraphName::NamedNode(g.clone()),
                    ));
                }
                let index = GraphName::NamedNode(graphs::consignment_index());
                let sharing = GraphName::NamedNode(graphs::sharing());
                tx.insert(&Quad::new(
                    record.clone(),
                    dsn("publisher"),
                    org(publisher),
                    index.clone(),
                ));
                tx.insert(&Quad::new(
                    graphs::consignment("0aaa"),
                    dsn("publisher"),
                    org(outsider),
                    index,
                ));
                tx.insert(&Quad::new(
                    record.clone(),
                    dsn("sharedWith"),
                    org(agency),
                    sharing.clone(),
                ));
                tx.insert(&Quad::new(
                    record.clone(),
                    dsn("contributor"),
                    org(agency),
                    sharing.clone(),
                ));
                // A partner node's organisation with the same id segment as the outsider.
                tx.insert(&Quad::new(
                    record.clone(),
                    dsn("sharedWith"),
                    org(partner),
                    sharing,
                ));
                Ok(())
            })
            .unwrap();
        assert_eq!(rebuild(&store).unwrap(), 3);
        let scopes = |g: &NamedNode, kind: &str| {
            vec![
                (g.to_string(), dsn("AllScope").to_string()),
                (g.to_string(), dsn(kind).to_string()),
            ]
        };
        let trader = marked(&store, publisher);
        let mut expected = scopes(&event, "SharedScope");
        expected.extend(scopes(&own, "OwnScope"));
        expected.sort();
        assert_eq!(trader, expected);
        let mut expected = scopes(&event, "OwnScope");
        expected.extend(scopes(&own, "SharedScope"));
        expected.sort();
        assert_eq!(marked(&store, agency), expected);
        // The partner's id segment is the outsider's: its markers are its own all the same.
        assert_eq!(marked(&store, outsider), scopes(&elsewhere, "OwnScope"));
        let mut expected = scopes(&event, "SharedScope");
        expected.extend(scopes(&own, "SharedScope"));
        expected.sort();
        assert_eq!(marked(&store, partner), expected);
        assert_eq!(rebuild(&store).unwrap(), 0, "done once");

        // Afterwards the markers follow the circle: the agency leaves it.
        store
            .write(|tx| member_removed(tx, &record, hex, agency))
            .unwrap();
        assert_eq!(marked(&store, agency), scopes(&event, "OwnScope"));
    }
}
