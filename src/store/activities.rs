//! The activities organisations' activity graphs keep, found by the log entry that applied
//! them: the payload (the activity as received, with the generator and trust credential the
//! node injected) is the one copy of each revision's description. Every look-up names the
//! activity graph of the organisation whose revision it reads, so it finds nothing of another.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use oxigraph::model::{NamedNode, NamedNodeRef, NamedOrBlankNodeRef, Quad, Term, TermRef};
use oxigraph::store::Transaction;
use serde_json::Value;

use super::{graphs, Store};
use crate::error::Result;
use crate::vocab::dsn;

/// The activity log entry `entry_id` (32 hex digits) applied, as activity graph `graph` keeps
/// it, if any. Blocking.
pub fn of_entry(store: &Store, graph: &NamedNode, entry_id: &str) -> Result<Option<Value>> {
    of_entry_in(store.db(), graph, entry_id)
}

/// [`of_entry`] read through `source`: a write's transaction sees the activities it wrote.
pub fn of_entry_in(
    source: &impl QuadSource,
    graph: &NamedNode,
    entry_id: &str,
) -> Result<Option<Value>> {
    for text in literals(source, graph, entry_id, "payload")? {
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        // An activity node the caller named twice (its own `id`) holds two payloads: the
        // credential of each names the entry that applied it.
        let credential = value.get("trustCredential").and_then(Value::as_str);
        if credential.is_some_and(|c| issued_for(c, entry_id)) {
            return Ok(Some(value));
        }
    }
    Ok(None)
}

/// Quads of one graph matching a pattern: the store as committed, or as a transaction sees it.
pub trait QuadSource {
    fn matching(
        &self,
        subject: Option<NamedOrBlankNodeRef<'_>>,
        predicate: NamedNodeRef<'_>,
        object: Option<TermRef<'_>>,
        graph: NamedNodeRef<'_>,
    ) -> Result<Vec<Quad>>;
}

// The store and a transaction have the same `quads_for_pattern` but no trait in common.
macro_rules! quad_source {
    ($source:ty) => {
        impl QuadSource for $source {
            fn matching(
                &self,
                subject: Option<NamedOrBlankNodeRef<'_>>,
                predicate: NamedNodeRef<'_>,
                object: Option<TermRef<'_>>,
                graph: NamedNodeRef<'_>,
            ) -> Result<Vec<Quad>> {
                Ok(self
                    .quads_for_pattern(subject, Some(predicate), object, Some(graph.into()))
                    .collect::<std::result::Result<_, _>>()?)
            }
        }
    };
}

quad_source!(oxigraph::store::Store);
quad_source!(Transaction<'_>);

/// The node's credential (attestation) of the activity log entry `entry_id` applied, without
/// reading the payload. Blocking.
pub fn credential_of(store: &Store, graph: &NamedNode, entry_id: &str) -> Result<Option<String>> {
    Ok(literals(store.db(), graph, entry_id, "trustCredential")?
        .into_iter()
        .find(|c| issued_for(c, entry_id)))
}

fn issued_for(credential: &str, entry_id: &str) -> bool {
    claims(credential).is_some_and(|c| c.get("jti").and_then(Value::as_str) == Some(entry_id))
}

/// The `dsn:<predicate>` literals of the activity (or activities) in `graph` naming the log
/// entry.
fn literals(
    source: &impl QuadSource,
    graph: &NamedNode,
    entry_id: &str,
    predicate: &str,
) -> Result<Vec<String>> {
    let log = graphs::minted("activity-log", entry_id);
    let (log_entry, wanted) = (dsn("logEntry"), dsn(predicate));
    let mut out = Vec::new();
    for quad in source.matching(
        None,
        log_entry.as_ref(),
        Some(log.as_ref().into()),
        graph.as_ref(),
    )? {
        for stored in source.matching(
            Some(quad.subject.as_ref()),
            wanted.as_ref(),
            None,
            graph.as_ref(),
        )? {
            if let Term::Literal(l) = stored.object {
                out.push(l.value().to_owned());
            }
        }
    }
    Ok(out)
}

/// The claims of a compact JWS the node issued (read from its own store: already trusted).
pub fn claims(jws: &str) -> Option<Value> {
    let part = jws.split('.').nth(1)?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).ok()?).ok()
}
