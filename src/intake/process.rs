//! The inbox write: a replay answered at once, a document's content taken before the
//! transaction, then one transaction that applies the activity (or fails its task) and writes
//! its log entry.

use std::time::Instant;

use oxigraph::model::GraphName;
use oxigraph::store::Transaction;
use serde_json::Value;

use super::activity::{Activity, Kind};
use super::apply::Apply;
use super::entries::{remove_entry, write_entry};
use super::log::{Entry, TaskError};
use super::prepare::Prepared;
use super::{Intake, Outcome, Timings};
use crate::auth::Caller;
use crate::consignment::ports;
use crate::documents::Content;
use crate::error::Result;
use crate::store::ahead::Ahead;
use crate::store::bulk::DeferredCell;
use crate::store::{graphs, Events};

/// A document's content as taken before the transaction: `Err` is the task's error message.
pub(super) type Taken = Option<std::result::Result<Content, String>>;

/// One activity on its way into the write transaction.
pub(super) struct Pending<'a> {
    pub caller: &'a Caller,
    pub prepared: &'a Prepared,
    pub content: &'a Taken,
    pub started_at: &'a str,
    /// A bulk load's deferred writes (`None` in the inbox).
    pub deferred: Option<&'a DeferredCell>,
    /// A `Create`'s description written ahead of the writer lock (the inbox's).
    pub ahead: Option<&'a Ahead>,
}

/// What becomes of a task that fails in the transaction (a conflict, a consignment not found).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Failures {
    /// Its failed log entry is written: the inbox answers with it, a retry replaces it.
    Logged,
    /// Nothing of it is written: the bulk load reports it and a later load tries again.
    Dropped,
}

impl Intake {
    /// Processes one inbox body for `caller`. Request errors are `Err`; everything else,
    /// task failures included, is an entry. Blocking (CPU and store work).
    pub fn process(&self, caller: &Caller, body: &[u8]) -> Result<Outcome> {
        let mut timings = Timings::default();
        let started_at = crate::consignment::now();
        let prepared = self.prepare(caller, body, &mut timings)?;

        // Replays of an applied activity are answered before any other work. A failed one is
        // processed again (nothing of it was applied), and its entry replaced.
        if let Some(entry) = self.entry(&caller.organization, &prepared.entry_id)? {
            if !entry.failed() {
                return Ok(Outcome {
                    entry,
                    created: false,
                    timings,
                });
            }
        }

        let t = Instant::now();
        let content = if prepared.failures.is_empty() {
            self.take_content(caller, &prepared.activity)?
        } else {
            None
        };
        timings.fetch = t.elapsed();

        let t = Instant::now();
        let ahead = self.write_ahead(caller, &prepared)?;
        let pending = Pending {
            caller,
            prepared: &prepared,
            content: &content,
            started_at: &started_at,
            deferred: None,
            ahead: ahead.as_ref(),
        };
        // Writes are serialised by the writer lock, which keeps no order: organisations take
        // turns at it, so one with many writes waiting does not keep another's behind them.
        // The turn ends with the lock, before the sync the commit waits for.
        let turn = self.writes.slot_blocking(&caller.organization);
        // Committed: the new consignment joins its organisation's list, routing's shares and
        // notifications their indexes — the models registered with the store apply the events.
        let committed = self.store.commit_in_turn(turn, |tx, events, _| {
            let written = self.write(&pending, tx, events, Failures::Logged)?;
            // Adopted, or gone with a failed task or a replay: the graph is whole or nothing.
            if let Some(ahead) = &ahead {
                ahead.settle(tx)?;
            }
            Ok(written)
        });
        let ((mut entry, created), events) = match committed {
            Ok(c) => c,
            Err(e) => {
                if let Some(ahead) = &ahead {
                    if let Err(d) = self.store.discard(ahead) {
                        tracing::warn!(error = %d, "a failed write's description stays until the next start's clean-up");
                    }
                }
                return Err(e);
            }
        };
        timings.store = t.elapsed();
        timings.route = events.routing;
        // As a later GET of the entry (or a replay) answers: with the node's attestation — the
        // one just issued, or, for an identical post applied meanwhile, the stored one.
        if !entry.failed() && entry.attestation.is_none() {
            let graph = crate::store::graphs::activities(&caller.organization);
            entry.attestation =
                crate::store::activities::credential_of(&self.store, &graph, &entry.id)?;
        }
        Ok(Outcome {
            entry,
            created,
            timings,
        })
    }

    /// The transaction of one activity, under the writer lock: its entry (and whether it is
    /// new).
    pub(super) fn write(
        &self,
        pending: &Pending<'_>,
        tx: &mut Transaction<'_>,
        events: &mut Events,
        failures: Failures,
    ) -> Result<(Entry, bool)> {
        let p = pending.prepared;
        let log_node = graphs::minted("activity-log", &p.entry_id);
        let activities_graph = graphs::activities(&pending.caller.organization);
        // Taken under the writer lock: creation times increase strictly in commit order, so
        // the lists (newest first by creation time) keep commit order, even for Creates
        // within one millisecond, and across restarts (the time is stored).
        let now = self.store.stamp();
        // Checked again under the writer lock: two identical posts racing apply once.
        let previous = super::entries::entry_in(&*tx, &activities_graph, &log_node)?;
        if let Some(existing) = previous.as_ref().filter(|e| !e.failed()) {
            return Ok((existing.clone(), false));
        }
        let now = crate::consignment::format_millis(now);
        // A failed entry is replaced in the transaction (`remove_entry`), so what the activity
        // writes on it cannot be deferred: nothing of such an activity is.
        let (outcome, issued) = self.apply(pending, previous.is_none(), tx, events, &now)?;
        let failed = outcome.is_err();
        if failed {
            // The task failed: nothing but its log entry counts (and not even that for a load).
            events.clear();
        }
        let mut entry = Entry::new(
            p.entry_id.clone(),
            self.identity.node_did(),
            pending.started_at.to_owned(),
            crate::consignment::now(),
            outcome,
            p.warnings.clone(),
        );
        if failed && failures == Failures::Dropped {
            return Ok((entry, false));
        }
        if previous.is_some() {
            remove_entry(tx, &activities_graph, &log_node)?;
        }
        write_entry(tx, &activities_graph, &log_node, &entry)?;
        // Never stored in the entry's JSON: a read takes it from the activity (`entry`).
        entry.attestation = issued.filter(|_| !failed);
        Ok((entry, true))
    }

    /// The task's outcome (the statements written, or why nothing was) and the trust
    /// credential issued for the activity, if it was applied.
    fn apply(
        &self,
        pending: &Pending<'_>,
        may_defer: bool,
        tx: &mut Transaction<'_>,
        events: &mut Events,
        now: &str,
    ) -> Result<(std::result::Result<i64, TaskError>, Option<String>)> {
        let p = pending.prepared;
        if !p.failures.is_empty() {
            return Ok((Err(TaskError::validation(&p.failures)), None));
        }
        if let Some(Err(message)) = pending.content {
            return Ok((Err(TaskError::document(message.clone())), None));
        }
        let apply = Apply {
            caller: pending.caller,
            activity: &p.activity,
            expansion: &p.expansion,
            object_root: &p.object_root,
            object_id: &p.object_id,
            activity_root: &p.activity_root,
            entry_id: &p.entry_id,
            activity_hash: &p.activity_hash,
            ports: &p.ports,
            credentials: &self.credentials,
            queries: &self.queries,
            codes: &self.codes,
            sharing: &self.sharing,
            content: pending.content.as_ref().and_then(|c| c.as_ref().ok()),
            attestor: self.documents.attestor(),
            now,
            deferred: pending.deferred,
            may_defer,
            ahead: pending.ahead,
            issued: Default::default(),
        };
        let outcome = apply.run(tx, events)?;
        Ok((outcome, apply.issued.into_inner()))
    }

    /// A `Create`'s description written ahead of the writer lock, in its new contribution
    /// graph ([`crate::store::ahead`]); `None` for anything else, or an activity whose checks
    /// failed.
    fn write_ahead(&self, caller: &Caller, p: &Prepared) -> Result<Option<Ahead>> {
        if p.activity.kind != Kind::Create || !p.failures.is_empty() {
            return Ok(None);
        }
        let node = graphs::consignment(&p.object_id);
        let graph = graphs::contribution(&p.object_id, &caller.organization);
        let triples = super::apply::object_triples(
            &p.expansion,
            &p.object_root,
            &p.activity_root,
            &node.into(),
        );
        let quads = triples
            .into_iter()
            .map(|t| t.in_graph(GraphName::NamedNode(graph.clone())))
            .collect();
        self.store.write_ahead(&graph, quads).map(Some)
    }

    /// A document's content, taken before the transaction so that its blob is durable before
    /// any record names it, and the writer lock is never held across a fetch. `None` when the
    /// activity adds no document, or adds one to a consignment the caller cannot reach (the
    /// transaction then fails the task without anything being fetched); `Some(Err)` is the
    /// task's error.
    pub(super) fn take_content(&self, caller: &Caller, activity: &Activity) -> Result<Taken> {
        let object = activity.object();
        if activity.kind != Kind::Add
            || object.get("type").and_then(Value::as_str) != Some("Document")
        {
            return Ok(None);
        }
        let target = activity
            .target()
            .and_then(|t| ports::string_value(t.get("globalId")))
            .unwrap_or_default();
        if !self.owns(caller, target)? && self.shared_matches(caller, target)? == 0 {
            return Ok(None);
        }
        let uri = ports::string_value(object.get("uRIId"));
        // Intake runs on a blocking thread (see the inbox handler), which may wait on a future.
        let handle = tokio::runtime::Handle::current();
        Ok(Some(handle.block_on(self.documents.acquire(uri))))
    }
}
