//! `Create`: a new consignment of the caller's organisation.

use oxigraph::store::Transaction;

use super::lookup::Record;
use super::system_event::Revision;
use super::writer::Writer;
use super::Apply;
use crate::consignment::changes;
use crate::error::Result;
use crate::intake::log::TaskError;
use crate::sharing::readable;
use crate::store::graphs;
use crate::store::{Committed, Events};

impl Apply<'_> {
    pub(super) fn create(
        &self,
        tx: &mut Transaction<'_>,
        events: &mut Events,
    ) -> Result<Result<i64, TaskError>> {
        let (global_id, identifier) = self.ids();
        for key in [&global_id, &identifier] {
            if self.lookup(tx, key)?.is_some() || self.claimed_in_commit(key) {
                return Ok(Err(TaskError::conflict(format!(
                    "your organisation already has a consignment with globalId or identifier {key:?}"
                ))));
            }
        }
        let aig = self.object_id;
        let record = Record {
            publisher: self.org().to_owned(),
            aig_hex: aig.to_owned(),
            global_id,
            identifier,
        };
        let now = self.now.to_owned();
        // The contribution graph is new, and so are the record (its aig id was just minted)
        // and the log entry's payload (a load defers only an activity without an earlier
        // entry): a bulk load writes them around the transaction.
        let defer = self.deferred.filter(|_| self.may_defer);
        let mut w = Writer::deferring(tx, defer, record.graph());
        if let Some(d) = defer {
            w.creates(record.node(), graphs::consignment_index());
            w.creates(
                graphs::minted("activity-log", self.entry_id),
                graphs::activities(self.org()),
            );
            let ids = [&record.global_id, &record.identifier].map(|s| s.to_string());
            d.borrow_mut()
                .claim(self.org(), ids.into_iter().chain([record.aig_id()]));
        }
        match self.ahead {
            // Written ahead of the lock from the same expansion and root (`store::ahead`).
            Some(ahead) => w.written += i64::try_from(ahead.adopt()).unwrap_or(i64::MAX),
            None => w.triples(&self.split(&record.node().into()), &record.graph()),
        }
        self.summary(&mut w, &record, &now, &now);
        self.index(&mut w, &record, &now, &now);
        self.system_event(
            &mut w,
            &record,
            Revision {
                graph: &record.graph(),
                object_type: "Consignment",
                object_id: &format!("aig:{aig}"),
                changed: changes::created(),
                document: None,
            },
            events,
        );
        self.activity_graph(&mut w, &record);
        let written = w.written;
        readable::contribution_added(tx, &record.node(), aig, self.org())?;
        self.route(tx, &record, &now, &now, events)?;
        if let Some(created_ms) = crate::consignment::listing::millis(&now) {
            events.push(Committed::ConsignmentCreated {
                publisher: record.publisher.clone(),
                created_ms,
                aig: format!("aig:{aig}"),
            });
        }
        Ok(Ok(written))
    }
}
