//! The system event (CREATE, UPDATE, ADD) an applied activity leaves in the contribution graph.
//! It is also the consignment's revision: the history reads it, and point-in-time reads find
//! the description then current through its log entry (whose activity keeps the payload).

use oxigraph::model::vocab::rdf;
use oxigraph::model::NamedNode;
use serde_json::json;

use super::lookup::Record;
use super::writer::{date_literal, json_literal, Writer};
use super::Apply;
use crate::intake::activity::Kind;
use crate::rdf::literal;
use crate::store::{graphs, Change, Committed, Events};
use crate::vocab::dsn;

/// One revision of a consignment, as the activity that made it.
pub(super) struct Revision<'r> {
    /// The contributor's contribution graph.
    pub graph: &'r NamedNode,
    pub object_type: &'r str,
    pub object_id: &'r str,
    /// JSON paths of the description that changed ([`crate::consignment::changes`]); empty
    /// for an Add, which leaves the description as it was.
    pub changed: Vec<String>,
    /// For a document's Add: its id and the number of the revision it made.
    pub document: Option<(String, i64)>,
}

impl Apply<'_> {
    pub(super) fn system_event(
        &self,
        w: &mut Writer<'_, '_>,
        record: &Record,
        rev: Revision<'_>,
        events: &mut Events,
    ) {
        let kind = match (self.activity.kind, rev.object_type) {
            (Kind::Create, _) => "consignment.created",
            (Kind::Update, _) => "consignment.updated",
            (Kind::Add, "Document") => "consignment.document_added",
            (Kind::Add, _) => "consignment.event_added",
        };
        events.push(Committed::ConsignmentChanged(Box::new(Change {
            kind,
            aig_hex: record.aig_hex.clone(),
            global_id: record.global_id.clone(),
            identifier: record.identifier.clone(),
            publisher: record.publisher.clone(),
            organization: self.org().to_owned(),
            entry_id: self.entry_id.to_owned(),
            changed: rev.changed.clone(),
            at: self.now.to_owned(),
            object_id: rev.object_id.to_owned(),
            document: rev.document.clone(),
        })));
        // One per applied activity, so the log entry's id names it.
        let id = graphs::minted("system-event", self.entry_id);
        let graph = rev.graph;
        let type_code = self.activity.kind.system_event();
        let event = json!({
            "@context": "https://www.w3.org/ns/activitystreams",
            "id": id.as_str(),
            "type": "SystemEvent",
            "typeCode": type_code,
            "source": {"id": self.caller.user, "type": "Person",
                       "detail": {"organizationId": self.org()}},
            "object": {"id": rev.object_id, "type": rev.object_type,
                       "detail": {"activityLogId": self.entry_id}},
            "target": {"id": format!("aig:{}", record.aig_hex), "type": "Consignment",
                       "detail": {"globalId": record.global_id, "identifier": record.identifier}},
            "date": self.now,
        });
        w.add(
            id.clone(),
            rdf::TYPE.into_owned(),
            dsn("SystemEvent"),
            graph,
        );
        w.add(id.clone(), dsn("typeCode"), literal(type_code), graph);
        w.add(id.clone(), dsn("consignment"), record.node(), graph);
        w.add(
            id.clone(),
            dsn("source"),
            NamedNode::new_unchecked(&self.caller.user),
            graph,
        );
        w.add(id.clone(), dsn("date"), date_literal(self.now), graph);
        w.add(
            id.clone(),
            dsn("logEntry"),
            graphs::minted("activity-log", self.entry_id),
            graph,
        );
        w.add(
            id.clone(),
            dsn("changed"),
            json_literal(&json!(rev.changed)),
            graph,
        );
        if let Some(code) = self.entry_code() {
            w.add(id.clone(), dsn("declaredPortOfEntry"), literal(code), graph);
        }
        w.add(id, dsn("json"), json_literal(&event), graph);
    }

    /// The port of entry a Create or Update declares (what the analysts' "port changed" asks).
    fn entry_code(&self) -> Option<&str> {
        if self.activity.kind == Kind::Add {
            return None;
        }
        self.ports.entry.as_ref()?.code.as_deref()
    }
}
