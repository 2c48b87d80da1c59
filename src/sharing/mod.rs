//! Data sharing: ODRL policies → routing of consignments by their derived ports → grants that
//! put organisations in a consignment's circle → notifications.
//!
//! A consignment's **circle** is its publisher plus every organisation a grant shares it with.
//! Members read the publisher's description and every contribution (events, documents, system
//! events) any contributor added; a grantee contributes with `Add`, into its own contribution
//! graph. Nothing else ever widens what an organisation reads.
//!
//! - [`policy`]: the accepted ODRL form, checked with every problem listed.
//! - [`index`]: the policies in memory, indexed by the port values their constraints test.
//! - [`notifications`]: numbered notifications and the wake-up signal of the streams.
//!
//! Routing runs inside the inbox's write transaction (`Create`, and `Update` when the ports
//! changed): grants and notifications commit together with the consignment or not at all.
//! Grants are never withdrawn by an update: a consignment whose port of entry moves from KEMBA to
//! TZDAR stays readable by the Kenyan agency that already received it and is shared with the
//! Tanzanian one too. Deleting a policy revokes the grants that policy alone gave.

pub mod index;
pub mod notifications;
pub mod policy;
pub mod readable;
mod remote;
mod upgrade;

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use oxigraph::model::{GraphName, Literal, NamedNode, Quad, Term};
use oxigraph::store::Transaction;
use serde_json::{json, Value};

use crate::auth::Caller;
use crate::consignment::cursor::{Cursors, Position};
use crate::consignment::listing::{self, Key, Listing};
use crate::consignment::Page;
use crate::error::{Error, Result};
use crate::federation::notice::{self as federation_notice, Kind};
use crate::federation::Federation;
use crate::identity::NodeIdentity;
use crate::rdf::text;
use crate::store::{graphs, Committed, Events, Queries, ReadModel, Store};
use crate::vocab::{dsn, RDF_JSON};
use index::PolicySet;
use notifications::Notifications;
use policy::{Facts, Permission, Policy, Rules};

/// The consignment being routed.
pub struct Routed<'a> {
    pub consignment: &'a NamedNode,
    pub aig_hex: &'a str,
    pub global_id: &'a str,
    pub identifier: &'a str,
    pub publisher: &'a str,
    /// The record's creation time (its list key).
    pub created: &'a str,
    /// The publisher's contribution graph: the dataset the notification names.
    pub graph: &'a NamedNode,
    /// The ConsignmentSummary columns, built only when a partner node is notified.
    pub summary: Box<dyn Fn() -> Value + 'a>,
}

impl<'a> Routed<'a> {
    /// What a notice to a partner node says about this consignment and `dataset`.
    pub fn subject(&self, dataset: &'a str) -> federation_notice::Subject<'a> {
        federation_notice::Subject {
            dataset,
            global_id: self.global_id,
            identifier: self.identifier,
            aig_hex: self.aig_hex,
            created: self.created,
        }
    }
}

pub struct Sharing {
    store: Arc<Store>,
    identity: Arc<NodeIdentity>,
    federation: Arc<Federation>,
    queries: Arc<Queries>,
    countries: Arc<HashSet<String>>,
    target: String,
    policies: RwLock<PolicySet>,
    /// Per organisation, the consignments shared with it, in list order.
    shared: Listing,
    pub notifications: Notifications,
    cursors: Cursors,
}

fn quad(s: impl Into<oxigraph::model::NamedOrBlankNode>, p: NamedNode, o: impl Into<Term>) -> Quad {
    Quad::new(s, p, o, GraphName::NamedNode(graphs::sharing()))
}

fn has(tx: &Transaction<'_>, q: &Quad) -> Result<bool> {
    Ok(tx
        .quads_for_pattern(
            Some(q.subject.as_ref()),
            Some(q.predicate.as_ref()),
            Some(q.object.as_ref()),
            Some(q.graph_name.as_ref()),
        )
        .next()
        .transpose()?
        .is_some())
}

const POLICY_NOT_FOUND: &str = "no policy with this uid is available to you";

impl Sharing {
    /// Loads policies, shares and notification numbers from the store. Blocking.
    pub fn open(
        store: Arc<Store>,
        queries: Arc<Queries>,
        countries: Arc<HashSet<String>>,
        identity: Arc<NodeIdentity>,
        federation: Arc<Federation>,
        cursor_key: &[u8],
    ) -> Result<Self> {
        upgrade::run(&store, &queries)?;
        let marked = readable::rebuild(&store)?;
        if marked > 0 {
            tracing::info!(
                graphs = marked,
                "readable-graph markers written for the SPARQL endpoint"
            );
        }
        let mut policies = PolicySet::default();
        queries.each(&store, "policies", &[], |row| {
            match text(&row, "state").map(|s| serde_json::from_str::<Policy>(&s)) {
                Some(Ok(p)) => policies.insert(p),
                _ => tracing::error!(policy = ?text(&row, "policy"), "unreadable stored policy skipped"),
            }
            true
        })?;
        let shared = Listing::default();
        queries.each(&store, "shared_records", &[], |row| {
            if let (Some(org), Some(aig), Some(ms)) = (
                text(&row, "org"),
                listing::aig_of(&row),
                text(&row, "created").and_then(|c| listing::millis(&c)),
            ) {
                shared.insert(&org, (ms, aig));
            }
            true
        })?;
        let notifications = Notifications::load(&store, &queries)?;
        tracing::info!(policies = policies.len(), "sharing rules loaded");
        Ok(Self {
            target: format!(
                "{}/supply-chain/data-space/consignments",
                identity.base_url()
            ),
            store,
            identity,
            federation,
            queries,
            countries,
            policies: RwLock::new(policies),
            shared,
            notifications,
            cursors: Cursors::new(cursor_key),
        })
    }

    /// ISO 3166 alpha-2 codes: what a port's country and a country rule may be.
    pub fn countries(&self) -> Arc<HashSet<String>> {
        self.countries.clone()
    }

    /// The one ODRL `target` of policies: this node's consignments.
    pub fn target(&self) -> &str {
        &self.target
    }

    fn policy_set(&self) -> std::sync::RwLockReadGuard<'_, PolicySet> {
        self.policies.read().unwrap_or_else(|p| p.into_inner())
    }

    /// `POST /policies`: checks the body, stores the policy and indexes it. Blocking.
    pub fn create_policy(&self, body: &Value) -> Result<Value> {
        let rules = Rules {
            countries: &self.countries,
            target: &self.target,
        };
        // An organisation of this node that exists, or one of a partner node: routing then
        // announces the share to that node.
        let exists = |did: &str| {
            self.federation.is_partner_organization(did)
                || match NamedNode::new(did) {
                    Ok(org) => self
                        .queries
                        .ask(&self.store, "organization_exists", &[("org", org.into())])
                        .unwrap_or(false),
                    Err(_) => false,
                }
        };
        let draft = policy::check(body, &rules, &exists).map_err(|problems| {
            let mut properties = serde_json::Map::new();
            properties.insert(
                "problems".into(),
                Value::Array(problems.iter().map(policy::Problem::to_json).collect()),
            );
            Error::BadRequest {
                message: format!(
                    "the policy is not in the accepted ODRL form ({} problem{})",
                    problems.len(),
                    if problems.len() == 1 { "" } else { "s" }
                ),
                properties,
            }
        })?;
        let policy = Policy {
            uid: draft
                .uid
                .unwrap_or_else(|| format!("urn:uuid:{}", uuid::Uuid::new_v4())),
            permissions: draft.permissions,
            created: crate::consignment::now(),
        };
        let graph = graphs::policy(&policy.uid);
        let state = serde_json::to_string(&policy).map_err(Error::internal)?;
        let stored = serde_json::to_value(&policy).map_err(Error::internal)?;
        self.store.commit(|tx, events| {
            if self.policy_set().get(&policy.uid).is_some() {
                return Err(Error::Conflict(format!(
                    "a policy with uid {:?} already exists; delete it first to replace it",
                    policy.uid
                )));
            }
            for q in policy.quads(&self.target, &graph) {
                tx.insert(&q);
            }
            tx.insert(&Quad::new(
                NamedNode::new_unchecked(&policy.uid),
                dsn("policyState"),
                Literal::new_typed_literal(state, NamedNode::new_unchecked(RDF_JSON)),
                GraphName::NamedNode(graph.clone()),
            ));
            events.push(Committed::PolicyStored { state: stored });
            Ok(())
        })?;
        let all: Vec<&Permission> = policy.permissions.iter().collect();
        Ok(policy.to_json(&self.target, &all))
    }

    /// The permissions of a policy the caller may see: all for the operator, else the ones
    /// assigned to its organisation (other assignees are not its business).
    fn visible<'p>(caller: &Caller, policy: &'p Policy) -> Vec<&'p Permission> {
        policy
            .permissions
            .iter()
            .filter(|p| caller.operator || p.assignee == caller.organization)
            .collect()
    }

    /// `GET /policies/{uid}`.
    pub fn policy(&self, caller: &Caller, uid: &str) -> Result<Value> {
        let set = self.policy_set();
        let policy = set
            .get(uid)
            .ok_or_else(|| Error::NotFound(POLICY_NOT_FOUND.into()))?;
        let permissions = Self::visible(caller, policy);
        if permissions.is_empty() {
            return Err(Error::NotFound(POLICY_NOT_FOUND.into()));
        }
        Ok(policy.to_json(&self.target, &permissions))
    }

    /// `GET /policies`: newest first.
    pub fn policies(&self, caller: &Caller, limit: usize, cursor: Option<&str>) -> Result<Page> {
        let org = &caller.organization;
        let scope = if caller.operator {
            "operator"
        } else {
            "assignee"
        };
        let before = match cursor {
            Some(c) => {
                let p = self.cursors.decode(c, "policies", org, scope)?;
                let ms = listing::millis(&p.at)
                    .ok_or_else(|| Error::invalid_field("cursor", "bad position"))?;
                Some((ms, p.id))
            }
            None => None,
        };
        let set = self.policy_set();
        let page = set.page(before.as_ref(), limit + 1, |p| {
            caller.operator || &p.assignee == org
        });
        let more = page.len() > limit;
        let entities: Vec<Value> = page
            .iter()
            .take(limit)
            .map(|(policy, permissions)| policy.to_json(&self.target, permissions))
            .collect();
        let cursor = match (more, page.get(limit - 1)) {
            (true, Some((last, _))) => Some(self.cursors.encode(&Position {
                list: "policies".into(),
                org: org.clone(),
                scope: scope.into(),
                at: last.created.clone(),
                id: last.uid.clone(),
            })),
            _ => None,
        };
        Ok(Page::new(entities, cursor))
    }

    /// `DELETE /policies/{uid}`: drops the policy and the grants only it gave. Returns how
    /// many organisations lost access to how many consignments. Blocking.
    pub fn delete_policy(&self, uid: &str) -> Result<usize> {
        let graph = graphs::policy(uid);
        let (revoked, _) = self.store.commit(|tx, events| {
            if self.policy_set().get(uid).is_none() {
                return Err(Error::NotFound(POLICY_NOT_FOUND.into()));
            }
            tx.clear_graph(GraphName::NamedNode(graph.clone()).as_ref())?;
            events.push(Committed::PolicyRemoved {
                uid: uid.to_owned(),
            });
            let mut revoked = 0;
            let given = graphs::grants(uid);
            let grants = self.queries.select_in(
                tx,
                "grants_of_policy",
                &[("grants", given.clone().into())],
            )?;
            tx.clear_graph(GraphName::NamedNode(given).as_ref())?;
            for row in grants {
                let (Some(Term::NamedNode(record)), Some(Term::NamedNode(org))) =
                    (row.get("record"), row.get("org"))
                else {
                    continue;
                };
                let remains = self.queries.ask_in(
                    tx,
                    "grant_remains",
                    &[
                        ("record", record.clone().into()),
                        ("org", org.clone().into()),
                    ],
                )?;
                if !remains {
                    tx.remove(&quad(record.clone(), dsn("sharedWith"), org.clone()));
                    if let Some(hex) = readable::aig_hex(record) {
                        readable::member_removed(tx, record, hex, org.as_str())?;
                    }
                    if let (Some(aig), Some(ms)) = (
                        text(&row, "aig"),
                        text(&row, "created").and_then(|c| listing::millis(&c)),
                    ) {
                        events.push(Committed::Unshared {
                            org: org.as_str().to_owned(),
                            created_ms: ms,
                            aig,
                        });
                        revoked += 1;
                    }
                }
            }
            Ok(revoked)
        })?;
        Ok(revoked)
    }

    /// Routes a consignment: every permission its ports satisfy grants the assignee read
    /// access; an organisation that gains access is notified once. Inside the inbox's write
    /// transaction; what it shares and notifies goes into the write's `events`.
    pub fn route(
        &self,
        tx: &mut Transaction<'_>,
        c: &Routed<'_>,
        facts: &Facts,
        now: &str,
        events: &mut Events,
    ) -> Result<()> {
        if facts.is_empty() {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let result = self.grant_matches(tx, c, facts, now, events);
        events.routing += started.elapsed();
        result
    }

    fn grant_matches(
        &self,
        tx: &mut Transaction<'_>,
        c: &Routed<'_>,
        facts: &Facts,
        now: &str,
        events: &mut Events,
    ) -> Result<()> {
        let matches = self.policy_set().route(facts);
        let mut notified: HashSet<String> = HashSet::new();
        for (org, uid) in matches {
            if org == c.publisher {
                continue;
            }
            let org_node = NamedNode::new_unchecked(&org);
            // One quad per grant, one per new membership, one per notification: these writes
            // are most of what routing costs (docs/PERFORMANCE.md). Writing a grant that
            // exists (an Update routed again) changes nothing, so it is not looked up first.
            tx.insert(&Quad::new(
                c.consignment.clone(),
                dsn("sharedWith"),
                org_node.clone(),
                GraphName::NamedNode(graphs::grants(&uid)),
            ));
            let member = quad(c.consignment.clone(), dsn("sharedWith"), org_node);
            if notified.contains(&org) || has(tx, &member)? {
                continue;
            }
            tx.insert(&member);
            readable::member_added(tx, c.consignment, c.aig_hex, &org)?;
            notified.insert(org.clone());
            if self.federation.is_remote(&org) {
                // The grant above is what the provider checks when the partner node pulls.
                let body = federation_notice::build(
                    Kind::Share,
                    c.publisher,
                    &org,
                    &c.subject(c.graph.as_str()),
                    Some(&uid),
                    Some((c.summary)()),
                    now,
                );
                self.queue(tx, c.publisher, &org, body, events);
                continue;
            }
            let note = json!({
                "id": null,
                "type": "ConsignmentShared",
                "consignment": {
                    "globalId": c.global_id,
                    "identifier": c.identifier,
                    "aigId": format!("aig:{}", c.aig_hex),
                },
                "provider": c.publisher,
                "datasetId": c.graph.as_str(),
                "policy": uid,
                "date": now,
            });
            let seq = self.notifications.write(tx, &org, note)?;
            events.push(Committed::NotificationWritten {
                org: org.clone(),
                seq,
            });
            if let Some(ms) = listing::millis(c.created) {
                events.push(Committed::Shared {
                    org,
                    created_ms: ms,
                    aig: format!("aig:{}", c.aig_hex),
                });
            }
        }
        Ok(())
    }

    /// Is the consignment shared with `org` (is `org` in its circle, besides the publisher)?
    pub fn is_shared_with(&self, record: &NamedNode, org: &str) -> Result<bool> {
        let q = quad(
            record.clone(),
            dsn("sharedWith"),
            NamedNode::new_unchecked(org),
        );
        Ok(self.store.db().contains(&q)?)
    }

    /// Is the record with aig id bits `bits` shared with `org`? From memory, kept in commit
    /// order with the grants.
    pub fn shares_with(&self, org: &str, bits: u128) -> bool {
        self.shared.contains(org, bits)
    }

    /// The organisations other than the publisher that contributed to a consignment.
    pub fn contributors(&self, record: &NamedNode) -> Result<Vec<String>> {
        let g = GraphName::NamedNode(graphs::sharing());
        let p = dsn("contributor");
        readable::named_objects(
            self.store
                .db()
                .quads_for_pattern(
                    Some(record.as_ref().into()),
                    Some(p.as_ref()),
                    None,
                    Some(g.as_ref()),
                )
                .map(|q| q.map_err(Into::into)),
        )
    }

    /// Records `org` as a contributor of a consignment it does not publish; `true` when it
    /// had not contributed before.
    pub fn add_contributor(
        tx: &mut Transaction<'_>,
        record: &NamedNode,
        org: &str,
    ) -> Result<bool> {
        let q = quad(
            record.clone(),
            dsn("contributor"),
            NamedNode::new_unchecked(org),
        );
        let new = !has(tx, &q)?;
        if new {
            tx.insert(&q);
        }
        Ok(new)
    }

    /// Up to `n` list keys of consignments shared with `org`, newest first, after `after`.
    pub fn shared_page(&self, org: &str, after: Option<&Key>, n: usize) -> Vec<Key> {
        self.shared.page(org, after, n)
    }

    /// `GET /notifications`: the caller organisation's, newest first.
    pub fn notification_page(
        &self,
        caller: &Caller,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<Page> {
        let org = &caller.organization;
        let before = match cursor {
            Some(c) => Some(
                self.cursors
                    .decode(c, "notifications", org, "")?
                    .id
                    .parse::<u64>()
                    .map_err(|_| Error::invalid_field("cursor", "bad position"))?,
            ),
            None => None,
        };
        let seqs = self.notifications.page(org, before, limit + 1);
        let more = seqs.len() > limit;
        let mut entities = Vec::with_capacity(limit);
        for seq in seqs.iter().take(limit) {
            entities.extend(self.notifications.json(&self.store, org, *seq)?);
        }
        let cursor = match (more, seqs.get(limit - 1)) {
            (true, Some(last)) => Some(self.cursors.encode(&Position {
                list: "notifications".into(),
                org: org.clone(),
                scope: String::new(),
                at: String::new(),
                id: last.to_string(),
            })),
            _ => None,
        };
        Ok(Page::new(entities, cursor))
    }

    /// The caller organisation's notifications numbered above `after`, oldest first, at most
    /// `n`: what a stream sends next. Blocking.
    pub fn notifications_after(
        &self,
        org: &str,
        after: u64,
        n: usize,
    ) -> Result<Vec<(u64, Value)>> {
        let mut out = Vec::new();
        for seq in self.notifications.after(org, after, n) {
            if let Some(json) = self.notifications.json(&self.store, org, seq)? {
                out.push((seq, json));
            }
        }
        Ok(out)
    }
}

/// The shared lists, the policy index and the notification index follow the commits.
impl ReadModel for Sharing {
    fn apply(&self, event: &Committed) {
        match event {
            Committed::PolicyStored { state } => {
                match serde_json::from_value::<Policy>(state.clone()) {
                    Ok(p) => self
                        .policies
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(p),
                    Err(e) => tracing::error!(error = %e, "a stored policy could not be indexed"),
                }
            }
            Committed::PolicyRemoved { uid } => {
                self.policies
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(uid);
            }
            Committed::Shared {
                org,
                created_ms,
                aig,
            } => self.shared.insert(org, (*created_ms, aig.clone())),
            Committed::Unshared {
                org,
                created_ms,
                aig,
            } => self.shared.remove(org, &(*created_ms, aig.clone())),
            Committed::NotificationWritten { org, seq } => {
                self.notifications.committed(&[(org.clone(), *seq)])
            }
            _ => {}
        }
    }
}
