//! The activities organisations' activity graphs keep, found by the log entry that applied
//! them: the payload (the activity as received, with the generator and trust credential the
//! node injected) is the one copy of each revision's description and of the node's
//! attestation. Every look-up names the activity graph of the organisation whose revision it
//! reads, so it finds nothing of another. The payload is on the log entry itself
//! (`<entry> dsn:payload`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use oxigraph::model::{NamedNode, NamedNodeRef, NamedOrBlankNodeRef, Quad, Term};
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
    Ok(payload_of(source, graph, entry_id)?.and_then(|text| serde_json::from_str(&text).ok()))
}

/// The payload's text: the `dsn:payload` literal on the log entry.
fn payload_of(
    source: &impl QuadSource,
    graph: &NamedNode,
    entry_id: &str,
) -> Result<Option<String>> {
    let log = graphs::minted("activity-log", entry_id);
    let payload = dsn("payload");
    Ok(source
        .matching(log.as_ref().into(), payload.as_ref(), graph.as_ref())?
        .into_iter()
        .find_map(|q| match q.object {
            Term::Literal(l) => Some(l.value().to_owned()),
            _ => None,
        }))
}

/// A subject's quads of one predicate in one graph: the store as committed, or as a
/// transaction sees it.
pub trait QuadSource {
    fn matching(
        &self,
        subject: NamedOrBlankNodeRef<'_>,
        predicate: NamedNodeRef<'_>,
        graph: NamedNodeRef<'_>,
    ) -> Result<Vec<Quad>>;
}

// The store and a transaction have the same `quads_for_pattern` but no trait in common.
macro_rules! quad_source {
    ($source:ty) => {
        impl QuadSource for $source {
            fn matching(
                &self,
                subject: NamedOrBlankNodeRef<'_>,
                predicate: NamedNodeRef<'_>,
                graph: NamedNodeRef<'_>,
            ) -> Result<Vec<Quad>> {
                Ok(self
                    .quads_for_pattern(Some(subject), Some(predicate), None, Some(graph.into()))
                    .collect::<std::result::Result<_, _>>()?)
            }
        }
    };
}

quad_source!(oxigraph::store::Store);
quad_source!(Transaction<'_>);

/// The node's credential (attestation) of the activity log entry `entry_id` applied: the one
/// in the activity's payload. Blocking.
pub fn credential_of(store: &Store, graph: &NamedNode, entry_id: &str) -> Result<Option<String>> {
    Ok(payload_of(store.db(), graph, entry_id)?.and_then(|text| credential_in(&text)))
}

/// The `trustCredential` of a payload, without building the rest of it (the history reads one
/// per revision).
fn credential_in(payload: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Credential {
        #[serde(rename = "trustCredential")]
        credential: Option<String>,
    }
    serde_json::from_str::<Credential>(payload).ok()?.credential
}

/// The claims of a compact JWS the node issued (read from its own store: already trusted).
pub fn claims(jws: &str) -> Option<Value> {
    let part = jws.split('.').nth(1)?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).ok()?).ok()
}
