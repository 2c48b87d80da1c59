//! The consignment index read by id, for the read paths: which records of any publisher a
//! path id names.
//!
//! Read as quad patterns rather than through the SPARQL engine: every read of a consignment
//! (view, events, documents, history, linked data, a partner's dataset) starts here, and a
//! SPARQL evaluation of the three-way look-up spent most of its time planning and
//! internalising the query's constants (perf on a node answering views: the look-up was a
//! third of its CPU, `queries/consignment_by_any_id.rq` until 2026-11-26).

use std::collections::HashSet;

use oxigraph::model::{GraphNameRef, NamedNode, NamedOrBlankNode, QuadRef, Term};

use super::{graphs, Store};
use crate::error::Result;
use crate::rdf::literal;
use crate::vocab::dsn;

/// At most this many of the records a caller may read answer one id (the newest; its own
/// first): each publisher holds an id at most once, so more would take that many
/// organisations sharing one id with the caller. Applied by the reader after it has kept
/// the records the caller may read — cut before, records any partner node may announce
/// under an id could push the caller's own, or the one shared with it, out of the answer.
pub const MAX_MATCHES: usize = 50;

/// A consignment record of the index, with the facts a read needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexed {
    /// The consignment node.
    pub record: NamedNode,
    pub publisher: String,
    /// `aig:<hex>`.
    pub aig: String,
    /// The publisher's contribution graph.
    pub graph: NamedNode,
    pub created: String,
    pub updated: String,
    pub global_id: String,
    pub identifier: String,
}

/// Every complete record whose globalId, identifier or aig id (`aig:<hex>`) is `key`, once
/// each, newest first (ties by aig id).
pub fn by_any_id(store: &Store, key: &str) -> Result<Vec<Indexed>> {
    let index = graphs::consignment_index();
    let graph = GraphNameRef::NamedNode(index.as_ref());
    // A set: many publishers may share an id, and one record may match it twice.
    let records: HashSet<NamedNode> = named_by(store, key, graph)?.into_iter().collect();
    let mut found = Vec::with_capacity(records.len());
    for record in records {
        if let Some(entry) = facts(store, record, graph)? {
            found.push(entry);
        }
    }
    found.sort_by(|a, b| {
        instant(&b.created)
            .cmp(&instant(&a.created))
            .then_with(|| a.aig.cmp(&b.aig))
    });
    Ok(found)
}

/// Whether `org` publishes a complete record whose globalId, identifier or aig id is `key`:
/// the list's test for an own copy of a shared consignment, once per shared row of a page (a
/// SPARQL evaluation each until 2026-11-26, `queries/consignment_by_key.rq`): no record's
/// facts are read but the caller's own.
pub fn owns(store: &Store, org: &NamedNode, key: &str) -> Result<bool> {
    let index = graphs::consignment_index();
    let graph = GraphNameRef::NamedNode(index.as_ref());
    let publisher = dsn("publisher");
    for record in named_by(store, key, graph)? {
        if store
            .db()
            .contains(QuadRef::new(&record, &publisher, org, graph))?
            && facts(store, record, graph)?.is_some()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The records of the index whose globalId, identifier or aig id is `key` (one may come twice).
fn named_by(store: &Store, key: &str, graph: GraphNameRef<'_>) -> Result<Vec<NamedNode>> {
    let ids: &[&str] = if graphs::is_aig_id(key) {
        &["aigId"]
    } else {
        &["globalId", "identifier", "aigId"]
    };
    let key = literal(key);
    let mut records = Vec::new();
    for by in ids {
        let by = dsn(by);
        let matches =
            store
                .db()
                .quads_for_pattern(None, Some(by.as_ref()), Some(key.as_ref()), Some(graph));
        for quad in matches {
            if let NamedOrBlankNode::NamedNode(record) = quad?.subject {
                records.push(record);
            }
        }
    }
    Ok(records)
}

/// The record's facts in one scan; `None` unless it has every fact a record is written with.
fn facts(store: &Store, record: NamedNode, graph: GraphNameRef<'_>) -> Result<Option<Indexed>> {
    let mut publisher = None;
    let mut aig = None;
    let mut contribution = None;
    let mut created = None;
    let mut updated = None;
    let (mut global_id, mut identifier) = (None, None);
    let subject = record.as_ref().into();
    for quad in store
        .db()
        .quads_for_pattern(Some(subject), None, None, Some(graph))
    {
        let quad = quad?;
        let Some(name) = quad.predicate.as_str().strip_prefix(crate::vocab::DSN) else {
            continue;
        };
        match (name, quad.object) {
            ("publisher", Term::NamedNode(n)) => publisher = Some(n.into_string()),
            ("graph", Term::NamedNode(n)) => contribution = Some(n),
            ("aigId", Term::Literal(l)) => aig = Some(l.value().to_owned()),
            ("created", Term::Literal(l)) => created = Some(l.value().to_owned()),
            ("updated", Term::Literal(l)) => updated = Some(l.value().to_owned()),
            ("globalId", Term::Literal(l)) => global_id = Some(l.value().to_owned()),
            ("identifier", Term::Literal(l)) => identifier = Some(l.value().to_owned()),
            _ => {}
        }
    }
    let (Some(publisher), Some(aig), Some(graph), Some(created), Some(updated)) =
        (publisher, aig, contribution, created, updated)
    else {
        return Ok(None);
    };
    let (Some(global_id), Some(identifier)) = (global_id, identifier) else {
        return Ok(None);
    };
    Ok(Some(Indexed {
        record,
        publisher,
        aig,
        graph,
        created,
        updated,
        global_id,
        identifier,
    }))
}

/// The newest `updated` time of any record — every record's, partners' included (a partner's
/// dates are never ahead of this node's clock when they arrive, `federation::notice`, and an
/// `Add` to a partner's consignment stamps it with this node's time): with the newest
/// creation time, the floor of later stamps after a start without the models snapshot
/// (`queries/newest_update.rq`: none more than an hour ahead of the clock).
pub fn newest_update(store: &Store, queries: &super::Queries) -> Result<Option<i64>> {
    let limit = (chrono::Utc::now() + chrono::TimeDelta::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let limit = oxigraph::model::Literal::new_typed_literal(limit, crate::vocab::xsd("dateTime"));
    let rows = queries.select(
        store,
        super::Query::NewestUpdate,
        &[("limit", limit.into())],
    )?;
    Ok(rows
        .first()
        .and_then(|row| match row.get("newest") {
            Some(Term::Literal(at)) => Some(instant(at.value())),
            _ => None,
        })
        .filter(|ms| *ms != i64::MIN))
}

/// A creation time as milliseconds, for ordering; unreadable ones sort last.
fn instant(text: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(text).map_or(i64::MIN, |t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use oxigraph::model::{Literal, Quad};

    use super::*;
    use crate::vocab::xsd;

    /// Writes an index record; `None` leaves that id out (an incomplete record).
    fn record(store: &Store, hex: &str, ids: (Option<&str>, Option<&str>), created: &str) {
        let (global_id, identifier) = ids;
        let record = graphs::consignment(hex);
        let org = NamedNode::new_unchecked(format!("did:web:x:org:{hex}"));
        let date = |s: &str| Term::from(Literal::new_typed_literal(s, xsd("dateTime")));
        let mut facts: Vec<(&str, Term)> = vec![
            ("publisher", org.clone().into()),
            ("aigId", literal(&format!("aig:{hex}"))),
            ("graph", graphs::contribution(hex, org.as_str()).into()),
            ("created", date(created)),
            ("updated", date(created)),
        ];
        facts.extend(global_id.map(|g| ("globalId", literal(g))));
        facts.extend(identifier.map(|i| ("identifier", literal(i))));
        for (p, o) in facts {
            let quad = Quad::new(record.clone(), dsn(p), o, graphs::consignment_index());
            store.db().insert(&quad).unwrap();
        }
    }

    #[test]
    fn an_aig_id_names_only_its_record_whatever_another_took_as_its_ids() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (real, squat) = (
            "0123456789abcdef0123456789abcdef",
            "fedcba98765432100123456789abcdef",
        );
        let id = format!("aig:{real}");
        record(&store, real, (Some("G"), Some("I")), "2026-01-01T00:00:00Z");
        // Another record holding the id as its ids, and newer (Creates and partners' records
        // refuse such ids: the look-up does not rely on it).
        record(
            &store,
            squat,
            (Some(&id), Some(&id)),
            "2026-02-01T00:00:00Z",
        );
        assert_eq!(hexes(&by_any_id(&store, &id).unwrap()), [real]);
        let squatter = NamedNode::new_unchecked(format!("did:web:x:org:{squat}"));
        assert!(!owns(&store, &squatter, &id).unwrap());
        // A text of another form is matched as globalId or identifier, as before.
        let upper = format!("aig:{}", real.to_uppercase());
        record(
            &store,
            "c3",
            (Some(&upper), Some("J")),
            "2026-03-01T00:00:00Z",
        );
        assert_eq!(hexes(&by_any_id(&store, &upper).unwrap()), ["c3"]);
    }

    #[test]
    fn the_newest_update_of_every_record() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let queries = crate::store::Queries::load().unwrap();
        assert_eq!(newest_update(&store, &queries).unwrap(), None);
        for (i, at) in [
            "2026-01-01T00:00:00Z",
            "2026-03-01T00:00:00.5Z",
            "2026-02-01T00:00:00Z",
        ]
        .iter()
        .enumerate()
        {
            record(&store, &format!("{i:02x}"), (Some("G"), Some("I")), at);
        }
        let newest = chrono::DateTime::parse_from_rfc3339("2026-03-01T00:00:00.5Z").unwrap();
        assert_eq!(
            newest_update(&store, &queries).unwrap(),
            Some(newest.timestamp_millis())
        );
        // Far ahead of the clock, or not an xsd:dateTime (sorting as text after every date):
        // not taken.
        record(&store, "f0", (Some("G"), Some("I")), "2099-01-01T00:00:00Z");
        record(&store, "f1", (Some("G"), Some("I")), "2026-04-01t00:00:00z");
        assert_eq!(
            newest_update(&store, &queries).unwrap(),
            Some(newest.timestamp_millis())
        );
    }

    fn hexes(found: &[Indexed]) -> Vec<&str> {
        found.iter().map(|r| &r.aig[4..]).collect()
    }

    #[test]
    fn an_id_names_each_complete_record_once_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // The same text as globalId and identifier: one record, once.
        record(
            &store,
            "a1",
            (Some("G-1"), Some("G-1")),
            "2026-01-01T00:00:00.000Z",
        );
        record(
            &store,
            "b2",
            (Some("X"), Some("G-1")),
            "2026-03-01T00:00:00.000Z",
        );
        record(
            &store,
            "c3",
            (Some("G-1"), Some("Y")),
            "2026-02-01T00:00:00.000Z",
        );
        // Without an identifier the record is not complete: never answered.
        record(
            &store,
            "d4",
            (Some("G-1"), None),
            "2026-04-01T00:00:00.000Z",
        );
        let found = by_any_id(&store, "G-1").unwrap();
        assert_eq!(hexes(&found), ["b2", "c3", "a1"]);
        let b = &found[0];
        assert_eq!((b.global_id.as_str(), b.identifier.as_str()), ("X", "G-1"));
        assert_eq!(b.publisher, "did:web:x:org:b2");
        assert_eq!(b.graph, graphs::contribution("b2", "did:web:x:org:b2"));
        assert_eq!(
            b.created, "2026-03-01T00:00:00Z",
            "as stored: a canonical xsd:dateTime"
        );
        assert_eq!(hexes(&by_any_id(&store, "aig:c3").unwrap()), ["c3"]);
        assert!(by_any_id(&store, "aig:d4").unwrap().is_empty());
        assert!(by_any_id(&store, "G-2").unwrap().is_empty());
    }

    #[test]
    fn an_organisation_owns_a_key_by_any_id_of_its_complete_records() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        record(
            &store,
            "a1",
            (Some("G-1"), Some("ID-1")),
            "2026-01-01T00:00:00.000Z",
        );
        record(
            &store,
            "b2",
            (Some("G-2"), None),
            "2026-01-01T00:00:00.000Z",
        );
        let org = |hex: &str| NamedNode::new_unchecked(format!("did:web:x:org:{hex}"));
        for key in ["G-1", "ID-1", "aig:a1"] {
            assert!(owns(&store, &org("a1"), key).unwrap(), "{key}");
            assert!(
                !owns(&store, &org("c3"), key).unwrap(),
                "another publisher: {key}"
            );
        }
        assert!(!owns(&store, &org("a1"), "G-2").unwrap());
        assert!(
            !owns(&store, &org("b2"), "G-2").unwrap(),
            "an incomplete record"
        );
        assert!(
            !owns(&store, &org("a1"), "a1").unwrap(),
            "an aig id without its prefix"
        );
    }

    #[test]
    fn an_id_of_many_publishers_answers_every_record_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for i in 0..MAX_MATCHES + 10 {
            let created = format!("2026-01-01T00:00:{:02}.000Z", i);
            record(
                &store,
                &format!("{i:02}"),
                (Some("SHARED"), Some("SHARED")),
                &created,
            );
        }
        let found = by_any_id(&store, "SHARED").unwrap();
        // The reader caps what it answers after keeping what its caller may read.
        assert_eq!(found.len(), MAX_MATCHES + 10);
        assert_eq!(found[0].aig, format!("aig:{}", MAX_MATCHES + 9));
        assert_eq!(found[MAX_MATCHES + 9].aig, "aig:00");
    }
}
