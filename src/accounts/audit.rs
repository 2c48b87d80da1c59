//! The audit log: who changed which key, user, role, password or policy, and when.
//!
//! An entry is written in the transaction of the change it records, so a change that did not
//! commit leaves none and one that did always has one. Entries are numbered under the writer
//! lock (commit order) and indexed in memory by the organisation they concern — the node's
//! operator reads them all, an organisation's admins the ones about their organisation — so a
//! page costs a point read per entry. Secrets (keys, passwords, their hashes) are never in one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use oxigraph::model::{GraphName, NamedNode, Quad, Term};
use oxigraph::store::Transaction;
use serde_json::{json, Value};

use crate::consignment::Page;
use crate::error::{Error, Result};
use crate::store::{graphs, Committed, Events, ReadModel, Store};
use crate::vocab::{dsn, json_literal};

const PREFIX: &str = "urn:dataspace-node:audit:";

fn node(seq: u64) -> NamedNode {
    NamedNode::new_unchecked(format!("{PREFIX}{seq}"))
}

/// Who made a change: a user of an organisation, or the operator account.
#[derive(Debug, Clone)]
pub struct Actor {
    pub user: String,
    pub organization: String,
}

/// A change's audit log and who makes it, handed to writers of other layers (policies).
#[derive(Clone, Copy)]
pub struct Audited<'a> {
    pub log: &'a Audit,
    pub actor: &'a Actor,
}

impl Audited<'_> {
    /// [`Audit::record`] of `change` by this actor.
    pub fn record(&self, tx: &mut Transaction<'_>, events: &mut Events, change: Change<'_>) {
        self.log.record(tx, events, self.actor, change);
    }
}

/// One change to record.
pub struct Change<'a> {
    /// `key.created`, `key.revoked`, `user.created`, `user.updated`, `password.changed`,
    /// `operator.created`, `policy.created`, `policy.deleted`.
    pub action: &'a str,
    /// The organisation the change concerns; `None` for the node as a whole.
    pub organization: Option<&'a str>,
    /// What was changed: a key id, a user DID, a policy uid.
    pub target: &'a str,
    /// The change itself, without secrets (a role, `disabled`, a key's name).
    pub details: Value,
}

#[derive(Default)]
struct Index {
    all: Vec<u64>,
    by_org: HashMap<String, Vec<u64>>,
}

pub struct Audit {
    next: AtomicU64,
    index: RwLock<Index>,
}

impl Audit {
    /// Indexes every stored entry. Blocking.
    pub fn load(store: &Store) -> Result<Self> {
        let mut index = Index::default();
        let (p, g) = (dsn("audit"), graphs::audit());
        let quads =
            store
                .db()
                .quads_for_pattern(None, Some(p.as_ref()), None, Some(g.as_ref().into()));
        for q in quads {
            let q = q?;
            let (Some(seq), Term::Literal(l)) = (number_of(&q.subject), &q.object) else {
                continue;
            };
            let org = serde_json::from_str::<Value>(l.value())
                .ok()
                .and_then(|v| v["organization"].as_str().map(str::to_owned));
            index.add(seq, org);
        }
        index.all.sort_unstable();
        for seqs in index.by_org.values_mut() {
            seqs.sort_unstable();
        }
        let next = index.all.last().map_or(1, |last| last + 1);
        Ok(Self {
            next: AtomicU64::new(next),
            index: RwLock::new(index),
        })
    }

    /// Writes an entry for `change` by `actor` in the transaction. Under the writer lock.
    pub fn record(
        &self,
        tx: &mut Transaction<'_>,
        events: &mut Events,
        actor: &Actor,
        change: Change<'_>,
    ) {
        let seq = self.next.fetch_add(1, Ordering::SeqCst);
        let entry = json!({
            "id": seq.to_string(),
            "at": crate::consignment::now(),
            "actor": actor.user,
            "actorOrganizationId": actor.organization,
            "action": change.action,
            "organization": change.organization,
            "target": change.target,
            "details": change.details,
        });
        tx.insert(&Quad::new(
            node(seq),
            dsn("audit"),
            json_literal(entry.to_string()),
            GraphName::NamedNode(graphs::audit()),
        ));
        events.push(Committed::Audited {
            seq,
            org: change.organization.map(str::to_owned),
        });
    }

    /// A page of entries, newest first: all of them (`org` `None`, the operator) or those
    /// about `org`; `before` is the previous page's cursor. Blocking.
    pub fn page(
        &self,
        store: &Store,
        org: Option<&str>,
        limit: usize,
        before: Option<&str>,
    ) -> Result<Page> {
        let before = match before {
            Some(c) => Some(c.parse::<u64>().map_err(|_| {
                Error::invalid_field("cursor", "not a cursor this list handed out")
            })?),
            None => None,
        };
        let seqs: Vec<u64> = {
            let index = self.index.read().unwrap_or_else(|p| p.into_inner());
            let list = match org {
                None => &index.all[..],
                Some(org) => index.by_org.get(org).map_or(&[][..], Vec::as_slice),
            };
            let end = before.map_or(list.len(), |b| list.partition_point(|s| *s < b));
            list[..end].iter().rev().take(limit + 1).copied().collect()
        };
        let more = seqs.len() > limit;
        let mut entities = Vec::with_capacity(limit);
        for seq in seqs.iter().take(limit) {
            let found = store.value(&node(*seq), &dsn("audit"), &graphs::audit())?;
            if let Some(Term::Literal(l)) = found {
                if let Ok(v) = serde_json::from_str::<Value>(l.value()) {
                    entities.push(v);
                }
            }
        }
        let cursor = more.then(|| seqs[limit - 1].to_string());
        Ok(Page::new(entities, cursor))
    }
}

impl Index {
    fn add(&mut self, seq: u64, org: Option<String>) {
        self.all.push(seq);
        if let Some(org) = org {
            self.by_org.entry(org).or_default().push(seq);
        }
    }
}

fn number_of(subject: &oxigraph::model::NamedOrBlankNode) -> Option<u64> {
    match subject {
        oxigraph::model::NamedOrBlankNode::NamedNode(n) => {
            n.as_str().strip_prefix(PREFIX)?.parse().ok()
        }
        _ => None,
    }
}

impl ReadModel for Audit {
    fn apply(&self, event: &Committed) {
        if let Committed::Audited { seq, org } = event {
            self.index
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .add(*seq, org.clone());
        }
    }
}
