//! The system event (CREATE, UPDATE, ADD) an applied activity leaves in the contribution graph.

use oxigraph::model::vocab::rdf;
use oxigraph::model::NamedNode;
use serde_json::json;

use super::lookup::Record;
use super::writer::{date_literal, json_literal, Writer};
use super::Apply;
use crate::intake::new_hex;
use crate::rdf::literal;
use crate::store::graphs;
use crate::vocab::dsn;

impl Apply<'_> {
    pub(super) fn system_event(
        &self,
        w: &mut Writer<'_, '_>,
        record: &Record,
        graph: &NamedNode,
        object_type: &str,
        object_id: &str,
        now: &str,
    ) {
        let id = graphs::minted("system-event", &new_hex());
        let type_code = self.activity.kind.system_event();
        let event = json!({
            "@context": "https://www.w3.org/ns/activitystreams",
            "id": id.as_str(),
            "type": "SystemEvent",
            "typeCode": type_code,
            "source": {"id": self.caller.user, "type": "Person",
                       "detail": {"organizationId": self.org()}},
            "object": {"id": object_id, "type": object_type,
                       "detail": {"activityLogId": self.entry_id}},
            "target": {"id": format!("aig:{}", record.aig_hex), "type": "Consignment",
                       "detail": {"globalId": record.global_id, "identifier": record.identifier}},
            "date": now,
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
        w.add(id.clone(), dsn("date"), date_literal(now), graph);
        w.add(id, dsn("json"), json_literal(&event), graph);
    }
}
