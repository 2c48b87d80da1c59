//! What an applied activity writes, inside the caller's write transaction.
//!
//! - the object's triples, in the organisation's contribution graph for the consignment;
//! - for a consignment, its derived summary facts (ports, dates, payload) on the summary node
//!   of the same graph, and its record (publisher, ids, graph) in the system index
//!   ([`summary`]);
//! - a system event (CREATE, UPDATE, ADD) in the same contribution graph ([`system_event`]);
//! - the activity as received, with the server-injected generator and trust credential, on
//!   its log entry in the organisation's activity graph ([`activity_graph`]); the entry's
//!   JSON is written by the caller ([`super::entries`]).
//!
//! [`create`], [`update`] and [`add`] are the three kinds; a document's revision facts come
//! from [`crate::documents::revision`]. An `Update` writes only what changed ([`relabel`],
//! [`writer::Writer::replacing`]).

mod activity_graph;
mod add;
mod create;
mod document;
mod lookup;
mod relabel;
mod route;
mod split;
mod summary;
mod system_event;
mod update;
mod writer;

use oxigraph::model::{NamedNode, NamedOrBlankNode};
use oxigraph::store::Transaction;

use super::activity::{Activity, Kind};
use super::credential::Credentials;
use super::log::TaskError;
use crate::auth::Caller;
use crate::consignment::codes::CodeLists;
use crate::consignment::ports::{string_value, Ports};
use crate::documents::attest::Attestor;
use crate::documents::Content;
use crate::error::Result;
use crate::jsonld::Expansion;
use crate::sharing::Sharing;
use crate::store::ahead::Ahead;
use crate::store::bulk::DeferredCell;
use crate::store::{Events, Queries};

pub(super) use split::object_triples;
pub(super) use writer::{json_literal, subject_quads};

pub struct Apply<'a> {
    pub caller: &'a Caller,
    pub activity: &'a Activity,
    pub expansion: &'a Expansion,
    pub object_root: &'a NamedOrBlankNode,
    pub object_id: &'a str,
    pub activity_root: &'a NamedNode,
    pub entry_id: &'a str,
    pub activity_hash: &'a str,
    pub ports: &'a Ports,
    pub credentials: &'a Credentials,
    pub queries: &'a Queries,
    pub codes: &'a CodeLists,
    pub sharing: &'a Sharing,
    /// A document's content, taken before the transaction (`None` for anything else, or when
    /// the target consignment was not found then).
    pub content: Option<&'a Content>,
    pub attestor: &'a Attestor,
    /// The time the record takes (created/updated/recorded), decided once per activity.
    pub now: &'a str,
    /// The bulk load's commit this write is part of (`store::bulk`): where a `Create` defers
    /// what it makes, and where the ids deferred records took are (`None` in the inbox).
    pub deferred: Option<&'a DeferredCell>,
    /// Whether this activity's writes may be deferred (not when its failed entry is replaced).
    pub may_defer: bool,
    /// A `Create`'s description, written ahead of the writer lock (`None` elsewhere).
    pub ahead: Option<&'a Ahead>,
    /// The trust credential issued for the activity, once written: the inbox answers with it
    /// without reading it back after the commit.
    pub issued: std::cell::RefCell<Option<String>>,
}

impl Apply<'_> {
    /// `Ok(Ok(statements))` when applied, `Ok(Err(task error))` when the activity cannot be
    /// applied (nothing written), `Err` for internal failures.
    /// What the write changes that in-memory models mirror goes to `events`.
    pub fn run(
        &self,
        tx: &mut Transaction<'_>,
        events: &mut Events,
    ) -> Result<Result<i64, TaskError>> {
        match self.activity.kind {
            Kind::Create => self.create(tx, events),
            Kind::Update => self.update(tx, events),
            Kind::Add => self.add(tx, events),
        }
    }

    fn org(&self) -> &str {
        &self.caller.organization
    }

    /// Whether a record this commit defers (a bulk load's earlier `Create` of the same run,
    /// which the transaction does not see) holds `id` — asked whether or not this activity
    /// defers its own writes.
    fn claimed_in_commit(&self, id: &str) -> bool {
        self.deferred
            .is_some_and(|d| d.borrow().claims(self.org(), id))
    }

    fn ids(&self) -> (String, String) {
        let object = self.activity.object();
        (
            string_value(object.get("globalId"))
                .unwrap_or_default()
                .to_owned(),
            string_value(object.get("identifier"))
                .unwrap_or_default()
                .to_owned(),
        )
    }
}
