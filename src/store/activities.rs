//! The activities organisations' activity graphs keep, found by the log entry that applied
//! them: the payload (the activity as received, with the generator and trust credential the
//! node injected) is the one copy of each revision's description and of the node's
//! attestation. Every look-up names the activity graph of the organisation whose revision it
//! reads, so it finds nothing of another.
//!
//! Since 2026-11-26 the payload is on the log entry itself (`<entry> dsn:payload`); data dirs
//! from before kept it on the activity node, which names the entry (`<activity> dsn:logEntry
//! <entry>`) — read as a second try, so both layouts answer alike while
//! `intake::activity_layout` rewrites them in the background.

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
    Ok(payload_of(source, graph, entry_id)?.and_then(|text| serde_json::from_str(&text).ok()))
}

/// The payload's text, in either layout.
fn payload_of(
    source: &impl QuadSource,
    graph: &NamedNode,
    entry_id: &str,
) -> Result<Option<String>> {
    let log = graphs::minted("activity-log", entry_id);
    let on_entry = || -> Result<Option<String>> {
        Ok(payloads(source, graph, log.as_ref().into())?
            .into_iter()
            .next())
    };
    if let Some(text) = on_entry()? {
        return Ok(Some(text));
    }
    if let Some(text) = earlier_layout(source, graph, &log, entry_id)? {
        return Ok(Some(text));
    }
    // Each look-up reads the store as it is then: the rewrite may have moved the payload onto
    // the entry between the two above (layouts only ever go from the earlier to this one).
    on_entry()
}

/// The payload on the activity node that names the entry: the layout before 2026-11-26.
fn earlier_layout(
    source: &impl QuadSource,
    graph: &NamedNode,
    log: &NamedNode,
    entry_id: &str,
) -> Result<Option<String>> {
    let log_entry = dsn("logEntry");
    for quad in source.matching(
        None,
        log_entry.as_ref(),
        Some(log.as_ref().into()),
        graph.as_ref(),
    )? {
        for text in payloads(source, graph, quad.subject.as_ref())? {
            // An activity node the caller named twice (its own `id`) holds two payloads: the
            // credential of each names the entry that applied it.
            let credential = credential_in(&text);
            if credential.is_some_and(|c| issued_for(&c, entry_id)) {
                return Ok(Some(text));
            }
        }
    }
    Ok(None)
}

/// The `dsn:payload` literals of `subject` in `graph`.
fn payloads(
    source: &impl QuadSource,
    graph: &NamedNode,
    subject: NamedOrBlankNodeRef<'_>,
) -> Result<Vec<String>> {
    let payload = dsn("payload");
    Ok(source
        .matching(Some(subject), payload.as_ref(), None, graph.as_ref())?
        .into_iter()
        .filter_map(|q| match q.object {
            Term::Literal(l) => Some(l.value().to_owned()),
            _ => None,
        })
        .collect())
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

/// The node's credential (attestation) of the activity log entry `entry_id` applied: the one
/// in the activity's payload (until 2026-11-26 also a quad of its own, `dsn:trustCredential`,
/// the same string). Blocking.
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

fn issued_for(credential: &str, entry_id: &str) -> bool {
    claims(credential).is_some_and(|c| c.get("jti").and_then(Value::as_str) == Some(entry_id))
}

/// The claims of a compact JWS the node issued (read from its own store: already trusted).
pub fn claims(jws: &str) -> Option<Value> {
    let part = jws.split('.').nth(1)?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).ok()?).ok()
}
