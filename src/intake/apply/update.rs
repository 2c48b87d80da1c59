//! `Update`: a consignment's description and summary replaced; its events, documents and
//! system events stay.

use std::collections::HashSet;

use oxigraph::model::{GraphName, NamedOrBlankNode, Quad, Term};
use oxigraph::store::Transaction;
use serde_json::Value;

use super::lookup::Record;
use super::relabel::reuse_blank_nodes;
use super::route::facts;
use super::system_event::Revision;
use super::writer::{subject_quads, Writer};
use super::Apply;
use crate::consignment::changes;
use crate::error::Result;
use crate::intake::log::TaskError;
use crate::sharing::policy::Facts;
use crate::store::{activities, graphs, Committed, Events};
use crate::vocab::dsn;

impl Apply<'_> {
    pub(super) fn update(
        &self,
        tx: &mut Transaction<'_>,
        events: &mut Events,
    ) -> Result<Result<i64, TaskError>> {
        let (global_id, identifier) = self.ids();
        let by_global_id = self.lookup(tx, &global_id)?;
        let by_identifier = self.lookup(tx, &identifier)?;
        let Some(old) = by_global_id.clone().or_else(|| by_identifier.clone()) else {
            return Ok(Err(TaskError::not_found(format!(
                "your organisation has no consignment with globalId {global_id:?} or identifier {identifier:?}"
            ))));
        };
        for (key, other) in [(&global_id, &by_global_id), (&identifier, &by_identifier)] {
            if other.as_ref().is_some_and(|o| o.aig_hex != old.aig_hex) {
                return Ok(Err(TaskError::conflict(format!(
                    "another consignment of your organisation already uses {key:?}"
                ))));
            }
        }
        // An id of the aig form is never taken: it names only the record minted for it.
        for (path, key) in [
            ("object.globalId", &global_id),
            ("object.identifier", &identifier),
        ] {
            if graphs::is_aig_id(key) {
                let failure = super::super::checks::not_an_aig_id(path, format!("{key:?}"));
                return Ok(Err(TaskError::validation(&[failure])));
            }
        }
        let created = self.created_of(tx, &old)?;
        let now = self.now.to_owned();
        let replaced = replaced(tx, &old)?;
        let (old_facts, old_entry) = stored_facts(&replaced, &old);
        let old_payload = match old_entry {
            Some(entry) => activities::of_entry_in(&*tx, &graphs::activities(self.org()), &entry)?
                .and_then(|activity| activity.get("object").cloned()),
            None => None,
        };
        let new_payload = Value::Object(self.activity.object().clone());
        let changed = changes::paths(old_payload.as_ref(), &new_payload);
        let record = Record {
            global_id,
            identifier,
            ..old
        };
        events.push(Committed::RowChanged {
            aig_hex: record.aig_hex.clone(),
        });
        let object = self.split(&record.node().into());
        let object = reuse_blank_nodes(&replaced, object);
        let mut w = Writer::replacing(tx, replaced);
        w.triples(&object, &record.graph());
        self.summary(&mut w, &record, &created, &now);
        self.index(&mut w, &record, &created, &now);
        let aig_id = format!("aig:{}", record.aig_hex);
        self.system_event(
            &mut w,
            &record,
            Revision {
                graph: &record.graph(),
                object_type: "Consignment",
                object_id: &aig_id,
                changed,
                document: None,
            },
            events,
        );
        self.activity_graph(&mut w, &record);
        let written = w.finish();
        // Only a change of ports routes again; grants already given stay (see `sharing`).
        if old_facts != facts(self.ports) {
            self.route(tx, &record, &created, &now, events)?;
        }
        Ok(Ok(written))
    }
}

/// The routing facts and the log entry of the revision whose activity's payload keeps the
/// description's JSON, as the stored summary has them, from the quads the update replaces
/// (which hold the summary node's).
fn stored_facts(replaced: &[Quad], record: &Record) -> (Facts, Option<String>) {
    let mut facts = Facts::default();
    let mut entry_id = None;
    let summary: NamedOrBlankNode = graphs::summary(&record.aig_hex).into();
    let log_entry = dsn("logEntry");
    for q in replaced.iter().filter(|q| q.subject == summary) {
        let value = match &q.object {
            Term::NamedNode(entry) if q.predicate == log_entry => {
                let id = entry.as_str().rsplit(':').next().unwrap_or_default();
                entry_id = Some(id.to_owned());
                continue;
            }
            Term::Literal(value) => value,
            _ => continue,
        };
        let slot = match q.predicate.as_str().strip_prefix(crate::vocab::DSN) {
            Some("portOfEntryCode") => &mut facts.entry,
            Some("portOfExitCode") => &mut facts.exit,
            Some("portOfEntryCountry") => &mut facts.entry_country,
            Some("portOfExitCountry") => &mut facts.exit_country,
            _ => continue,
        };
        *slot = Some(value.value().to_owned());
    }
    (facts, entry_id)
}

/// A consignment's description (everything reachable from the consignment node in its graph,
/// stopping at nodes the node minted), its summary node and its index record: what an Update
/// replaces.
fn replaced(tx: &Transaction<'_>, record: &Record) -> Result<Vec<Quad>> {
    let graph = GraphName::NamedNode(record.graph());
    let mut old = Vec::new();
    let mut seen = HashSet::new();
    let summary: NamedOrBlankNode = graphs::summary(&record.aig_hex).into();
    let mut stack: Vec<NamedOrBlankNode> = vec![record.node().into(), summary.clone()];
    while let Some(node) = stack.pop() {
        if !seen.insert(node.clone()) {
            continue;
        }
        for quad in tx.quads_for_pattern(Some(node.as_ref()), None, None, Some(graph.as_ref())) {
            let quad = quad?;
            if node != summary {
                match &quad.object {
                    Term::BlankNode(b) => stack.push(b.clone().into()),
                    Term::NamedNode(n) if !n.as_str().starts_with(graphs::MINTED_PREFIX) => {
                        stack.push(n.clone().into())
                    }
                    _ => {}
                }
            }
            old.push(quad);
        }
    }
    old.extend(subject_quads(
        tx,
        &record.node(),
        None,
        &graphs::consignment_index(),
    )?);
    Ok(old)
}
