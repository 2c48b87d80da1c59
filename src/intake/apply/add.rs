//! `Add`: an event or a document added to a consignment — the caller's own, or one shared with
//! it (the caller then becomes a contributor of its circle).

use oxigraph::model::{NamedNode, NamedOrBlankNode, Term};
use oxigraph::store::Transaction;
use serde_json::{json, Map, Value};

use super::document::Revising;
use super::lookup::Record;
use super::system_event::Revision;
use super::writer::{date_literal, json_literal, remove_quads, subject_quads, Writer};
use super::Apply;
use crate::consignment::ports::string_value;
use crate::documents::Content;
use crate::error::{Error, Result};
use crate::intake::log::TaskError;
use crate::rdf::literal;
use crate::sharing::{readable, Sharing};
use crate::store::{graphs, Committed, Events};
use crate::vocab::{dsn, unece};

impl Apply<'_> {
    pub(super) fn add(
        &self,
        tx: &mut Transaction<'_>,
        events: &mut Events,
    ) -> Result<Result<i64, TaskError>> {
        let target_key = self
            .activity
            .target()
            .and_then(|t| string_value(t.get("globalId")))
            .unwrap_or_default()
            .to_owned();
        let record = match self.target(tx, &target_key)? {
            Ok(record) => record,
            Err(e) => return Ok(Err(e)),
        };
        // Its update time (and maybe its status) moves.
        events.push(Committed::RowChanged {
            aig_hex: record.aig_hex.clone(),
        });
        let object = self.activity.object();
        let is_document = object.get("type").and_then(Value::as_str) == Some("Document");
        let kind = if is_document {
            "Document"
        } else {
            "SupplyChainEvent"
        };
        let node = match self.object_root {
            NamedOrBlankNode::NamedNode(n) => n.clone(),
            NamedOrBlankNode::BlankNode(_) => return Err(Error::internal("minted root is blank")),
        };
        let graph = graphs::contribution(&record.aig_hex, self.org());
        let revising = if is_document {
            match self.revising(tx, &graph, &record, &target_key)? {
                Ok(Some(revising)) => Some(revising),
                Ok(None) => return Ok(Ok(0)),
                Err(e) => return Ok(Err(e)),
            }
        } else {
            None
        };
        if record.publisher != self.org() {
            self.join_circle(tx, &record, events)?;
        }
        let mut triples = self.split(self.object_root);
        let mut object = object.clone();
        if let Some(uri) = self.content.and_then(Content::stored_uri) {
            let uri_id = unece("uRIId");
            for t in triples.iter_mut().filter(|t| t.predicate == uri_id) {
                t.object = literal(&uri);
            }
            object.insert("uRIId".into(), json!(uri));
        }
        let mut w = Writer::new(tx);
        w.triples(&triples, &graph);
        self.contribution(&mut w, &node, &graph, &record, &object)?;
        let mut document = None;
        if let Some(Revising { content, previous }) = revising {
            let number = previous
                .as_ref()
                .map_or(0, |(_, p)| p.document_revision + 1);
            document = Some((self.document_id().to_owned(), number));
            self.revision(&mut w, &node, &graph, &object, content, previous);
        }
        self.touch(&mut w, &record)?;
        self.system_event(
            &mut w,
            &record,
            Revision {
                graph: &graph,
                object_type: kind,
                object_id: node.as_str(),
                changed: Vec::new(),
                document,
            },
            events,
        );
        self.activity_graph(&mut w, &record);
        Ok(Ok(w.written))
    }

    /// The consignment the Add's target names.
    fn target(&self, tx: &Transaction<'_>, key: &str) -> Result<Result<Record, TaskError>> {
        // The caller's own consignment wins; among shared ones, those of the first rank that
        // holds any (this node's organisations', else partners') must be exactly one, or
        // another publisher's consignment could receive what was meant for this one.
        let found = match self.lookup(tx, key)? {
            Some(own) => Some(own),
            None => {
                let mut shared = self.lookup_shared(tx, key)?;
                if shared.len() > 1 {
                    let candidates = shared
                        .iter()
                        .map(|r| (r.aig_hex.as_str(), r.publisher.as_str()));
                    return Ok(Err(TaskError::ambiguous(key, candidates)));
                }
                shared.pop()
            }
        };
        Ok(found.ok_or_else(|| {
            TaskError::not_found(format!(
                "no consignment with globalId {key:?} is available to your organisation"
            ))
        }))
    }

    /// A circle member's contribution: the views find its graph through this.
    fn join_circle(
        &self,
        tx: &mut Transaction<'_>,
        record: &Record,
        events: &mut Events,
    ) -> Result<()> {
        let first = Sharing::add_contributor(tx, &record.node(), self.org())?;
        if first {
            readable::contribution_added(tx, &record.node(), &record.aig_hex, self.org())?;
        }
        if first && self.sharing.is_remote(&record.publisher) {
            let created = self.created_of(tx, record)?;
            let routed = self.routed(record, &created);
            self.sharing
                .offer_contribution(tx, &routed, self.org(), self.now, events)?;
        }
        Ok(())
    }

    /// What the node states about every added event or document, and an event's status.
    fn contribution(
        &self,
        w: &mut Writer<'_, '_>,
        node: &NamedNode,
        graph: &NamedNode,
        record: &Record,
        object: &Map<String, Value>,
    ) -> Result<()> {
        w.add(node.clone(), dsn("consignment"), record.node(), graph);
        w.add(
            node.clone(),
            dsn("contributor"),
            NamedNode::new_unchecked(self.org()),
            graph,
        );
        w.add(node.clone(), dsn("recorded"), date_literal(self.now), graph);
        w.add(
            node.clone(),
            dsn("payload"),
            json_literal(&Value::Object(object.clone())),
            graph,
        );
        if object.get("type").and_then(Value::as_str) == Some("Document") {
            return Ok(());
        }
        if let Some(at) = string_value(object.get("occurrenceDateTime")) {
            w.add(node.clone(), dsn("occurredAt"), date_literal(at), graph);
            let code = string_value(object.get("typeCode")).unwrap_or_default();
            latest_status(w, record, graph, self.org(), code, at)?;
        }
        Ok(())
    }

    /// The record's update time moves with every contribution.
    fn touch(&self, w: &mut Writer<'_, '_>, record: &Record) -> Result<()> {
        let index = graphs::consignment_index();
        remove_quads(w.tx, &record.node(), Some(&dsn("updated")), &index)?;
        w.add(
            record.node(),
            dsn("updated"),
            date_literal(self.now),
            &index,
        );
        Ok(())
    }
}

/// Keeps the latest event (by occurrence time) of one contributor per consignment on a status
/// node, so list reads take `latestStatus` without looking at events.
fn latest_status(
    w: &mut Writer<'_, '_>,
    record: &Record,
    graph: &NamedNode,
    org: &str,
    code: &str,
    at: &str,
) -> Result<()> {
    let status = graphs::minted(
        "status",
        &format!("{}:{}", record.aig_hex, graphs::org_key(org)),
    );
    let old = subject_quads(w.tx, &status, None, graph)?;
    let newer = old.iter().all(|q| {
        q.predicate != dsn("latestAt")
            || match &q.object {
                Term::Literal(l) => match (
                    chrono::DateTime::parse_from_rfc3339(l.value()),
                    chrono::DateTime::parse_from_rfc3339(at),
                ) {
                    (Ok(old), Ok(new)) => new >= old,
                    _ => l.value() <= at,
                },
                _ => true,
            }
    });
    if !newer {
        return Ok(());
    }
    for q in &old {
        w.tx.remove(q);
    }
    w.add(status.clone(), dsn("statusOf"), record.node(), graph);
    w.add(status.clone(), dsn("latestTypeCode"), literal(code), graph);
    w.add(status, dsn("latestAt"), date_literal(at), graph);
    Ok(())
}
