//! A consignment's derived facts: its summary node in the publisher's contribution graph and
//! its record in the system index.

use oxigraph::model::vocab::rdf;
use oxigraph::model::NamedNode;
use serde_json::Value;

use super::lookup::Record;
use super::writer::{date_literal, json_literal, Writer};
use super::Apply;
use crate::consignment::ports::Port;
use crate::rdf::literal;
use crate::store::graphs;
use crate::vocab::dsn;

impl Apply<'_> {
    /// Derived facts the read views use, computed once here.
    pub(super) fn summary(
        &self,
        w: &mut Writer<'_, '_>,
        record: &Record,
        created: &str,
        updated: &str,
    ) {
        let s = graphs::summary(&record.aig_hex);
        let g = &record.graph();
        w.add(
            s.clone(),
            rdf::TYPE.into_owned(),
            dsn("ConsignmentSummary"),
            g,
        );
        w.add(s.clone(), dsn("summarizes"), record.node(), g);
        w.add(
            s.clone(),
            dsn("aigId"),
            literal(&format!("aig:{}", record.aig_hex)),
            g,
        );
        w.add(s.clone(), dsn("globalId"), literal(&record.global_id), g);
        w.add(s.clone(), dsn("identifier"), literal(&record.identifier), g);
        w.add(
            s.clone(),
            dsn("publisher"),
            NamedNode::new_unchecked(self.org()),
            g,
        );
        w.add(s.clone(), dsn("dateCreated"), date_literal(created), g);
        w.add(s.clone(), dsn("dateUpdated"), date_literal(updated), g);
        w.add(s.clone(), dsn("payloadVersion"), literal("D23B"), g);
        // The description's JSON as sent is kept once, in the activity that sent it: the
        // summary names that activity's log entry (`store::activities::of_entry` reads it).
        w.add(
            s.clone(),
            dsn("logEntry"),
            graphs::minted("activity-log", self.entry_id),
            g,
        );
        let columns =
            crate::consignment::summary::build(self.activity.object(), self.ports, self.codes);
        w.add(
            s.clone(),
            dsn("summaryJson"),
            json_literal(&Value::Object(columns)),
            g,
        );
        let mut port = |which: &str, port: &Option<Port>| {
            let Some(port) = port else { return };
            if let Some(name) = &port.name {
                w.add(s.clone(), dsn(&format!("{which}Name")), literal(name), g);
            }
            if let Some(code) = &port.code {
                w.add(s.clone(), dsn(&format!("{which}Code")), literal(code), g);
            }
            if let Some(country) = &port.country {
                w.add(
                    s.clone(),
                    dsn(&format!("{which}Country")),
                    literal(country),
                    g,
                );
            }
        };
        port("portOfExit", &self.ports.exit);
        port("portOfEntry", &self.ports.entry);
        if let Some(d) = &self.ports.arrival_date {
            w.add(s.clone(), dsn("dateOfEntry"), date_literal(d), g);
        }
        if let Some(d) = &self.ports.departure_date {
            w.add(s.clone(), dsn("dateOfDeparture"), date_literal(d), g);
        }
    }

    pub(super) fn index(
        &self,
        w: &mut Writer<'_, '_>,
        record: &Record,
        created: &str,
        updated: &str,
    ) {
        let r = record.node();
        let g = &graphs::consignment_index();
        // In the transaction even when a bulk load defers the rest of a new record: routing
        // and the readable markers read the circle, publisher included, in the same commit
        // (`store::records::circle`); the ids are looked up there, or in the commit's claims.
        w.add_now(
            r.clone(),
            dsn("publisher"),
            NamedNode::new_unchecked(self.org()),
            g,
        );
        w.add(
            r.clone(),
            dsn("aigId"),
            literal(&format!("aig:{}", record.aig_hex)),
            g,
        );
        w.add(r.clone(), dsn("globalId"), literal(&record.global_id), g);
        w.add(r.clone(), dsn("identifier"), literal(&record.identifier), g);
        w.add(r.clone(), dsn("graph"), record.graph(), g);
        w.add(r.clone(), dsn("created"), date_literal(created), g);
        w.add(r, dsn("updated"), date_literal(updated), g);
    }
}
