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
//! - `policies`: what callers do with policies (create, read, list, delete and revoke);
//!   `routing`: grants and notifications when a consignment is routed; `circles`: who a
//!   consignment is shared with and who contributed; `paging`: the pages of shared lists and
//!   notifications; `remote`: notices received from partner nodes, `held`: how many records
//!   each partner node shares with each organisation.
//!
//! Routing runs inside the inbox's write transaction (`Create`, and `Update` when the ports
//! changed): grants and notifications commit together with the consignment or not at all.
//! Grants are never withdrawn by an update: a consignment whose port of entry moves from KEMBA to
//! TZDAR stays readable by the Kenyan agency that already received it and is shared with the
//! Tanzanian one too. Deleting a policy revokes the grants that policy alone gave.

mod circles;
mod held;
pub mod index;
pub mod notifications;
pub mod offers;
mod paging;
mod policies;
pub mod policy;
pub mod readable;
mod remote;
mod routing;

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use oxigraph::model::{GraphName, NamedNode, Quad, Term};
use oxigraph::store::Transaction;

use crate::consignment::cursor::Cursors;
use crate::consignment::listing::{self, Listing};
use crate::consignment::ConsignmentRef;
use crate::error::Result;
use crate::federation::notice as federation_notice;
use crate::federation::Federation;
use crate::identity::NodeIdentity;
use crate::rdf::text;
use crate::store::snapshot::{Decoder, Encoder, Snapshot};
use crate::store::Query;
use crate::store::{graphs, Committed, Queries, ReadModel, Store};
use index::PolicySet;
use notifications::Notifications;
use policy::Policy;

/// The consignment being routed.
pub struct Routed<'a> {
    pub consignment: &'a ConsignmentRef,
    /// The record's creation time (its list key).
    pub created: &'a str,
}

impl<'a> Routed<'a> {
    /// What a notice to a partner node says about this consignment and `dataset`.
    pub fn subject(&self, dataset: &'a str) -> federation_notice::Subject<'a> {
        federation_notice::Subject {
            dataset,
            consignment: self.consignment.clone(),
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
    /// Counts the policy changes: what is derived from the policies (a dataset's offer) is
    /// cached under it.
    policy_epoch: std::sync::atomic::AtomicU64,
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

impl Sharing {
    /// Loads policies, shares and notification numbers from the store. Blocking.
    pub fn open(
        store: Arc<Store>,
        queries: Arc<Queries>,
        countries: Arc<HashSet<String>>,
        identity: Arc<NodeIdentity>,
        federation: Arc<Federation>,
        cursor_key: &[u8],
        snapshot: Option<&Snapshot>,
    ) -> Result<Self> {
        let started = std::time::Instant::now();
        let marked = readable::rebuild(&store)?;
        let markers_ms = started.elapsed().as_millis();
        if marked > 0 {
            tracing::info!(
                graphs = marked,
                "readable-graph markers written for the SPARQL endpoint"
            );
        }
        let saved_policies = snapshot.and_then(|s| decode_policies(s.section("policies")?));
        let policies = match saved_policies {
            Some(policies) => policies,
            None => stored_policies(&store, &queries)?,
        };
        let policies_ms = started.elapsed().as_millis();
        let saved = snapshot.and_then(|s| {
            Some((
                Listing::decode(s.section("shared")?)?,
                Notifications::decode(s.section("notifications")?)?,
            ))
        });
        let (shared, notifications) = match saved {
            Some(saved) => saved,
            None => (
                shared_records(&store, &queries)?,
                Notifications::load(&store, &queries)?,
            ),
        };
        // Where this part of start-up's time went (each counted from its start).
        tracing::info!(
            policies = policies.len(),
            markers_ms,
            policies_ms,
            total_ms = started.elapsed().as_millis(),
            "sharing rules loaded"
        );
        Ok(Self {
            target: identity.policy_target(),
            store,
            identity,
            federation,
            queries,
            countries,
            policies: RwLock::new(policies),
            policy_epoch: std::sync::atomic::AtomicU64::new(0),
            shared,
            notifications,
            cursors: Cursors::new(cursor_key),
        })
    }

    /// The shared lists, the notification index and the policies, for the models snapshot.
    /// The policies' number does not grow with history, but reading them from the store does:
    /// a random read of each state in a store of a million consignments, 0.8–1.8 s of
    /// start-up for 10,000 policies (docs/PERFORMANCE.md).
    pub fn save(&self, snapshot: &mut Snapshot) {
        snapshot.put("shared", self.shared.encode());
        snapshot.put("notifications", self.notifications.encode());
        let policies = self.policies.read().unwrap_or_else(|p| p.into_inner());
        snapshot.put("policies", encode_policies(&policies));
    }

    /// ISO 3166 alpha-2 codes: what a port's country and a country rule may be.
    pub fn countries(&self) -> Arc<HashSet<String>> {
        self.countries.clone()
    }

    /// The one ODRL `target` of policies: this node's consignments.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The number of policy changes applied since start-up.
    pub fn policy_epoch(&self) -> u64 {
        self.policy_epoch.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn policy_set(&self) -> std::sync::RwLockReadGuard<'_, PolicySet> {
        self.policies.read().unwrap_or_else(|p| p.into_inner())
    }
}

/// The shared lists, the policy index and the notification index follow the commits.
impl ReadModel for Sharing {
    fn apply(&self, event: &Committed) {
        self.index(event);
        // After the index changed: a reader that sees the new number computes with it.
        if matches!(
            event,
            Committed::PolicyStored { .. } | Committed::PolicyRemoved { .. }
        ) {
            self.policy_epoch
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl Sharing {
    fn index(&self, event: &Committed) {
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
            } => {
                if let Some(key) = listing::key(*created_ms, aig) {
                    self.shared.insert(org, key);
                }
            }
            Committed::Unshared {
                org,
                created_ms,
                aig,
            } => {
                if let Some(key) = listing::key(*created_ms, aig) {
                    self.shared.remove(org, &key);
                }
            }
            Committed::NotificationWritten { org, seq } => {
                self.notifications.committed(&[(org.clone(), *seq)])
            }
            _ => {}
        }
    }
}

/// The policies as their JSON states, for the models snapshot.
fn encode_policies(policies: &PolicySet) -> Vec<u8> {
    let mut e = Encoder::default();
    e.u64(policies.len() as u64);
    for policy in policies.iter() {
        e.str(&serde_json::to_string(policy).expect("a policy serialises"));
    }
    e.0
}

/// The policies [`encode_policies`] wrote; `None` when the bytes are not such a list.
fn decode_policies(mut d: Decoder<'_>) -> Option<PolicySet> {
    let mut policies = PolicySet::default();
    for _ in 0..d.count(8)? {
        policies.insert(serde_json::from_str::<Policy>(d.str()?).ok()?);
    }
    d.is_empty().then_some(policies)
}

/// Every stored policy, read with its state JSON.
fn stored_policies(store: &Store, queries: &Queries) -> Result<PolicySet> {
    let mut policies = PolicySet::default();
    queries.each(store, Query::Policies, &[], |row| {
        match text(&row, "state").map(|s| serde_json::from_str::<Policy>(&s)) {
            Some(Ok(p)) => policies.insert(p),
            _ => {
                tracing::error!(policy = ?text(&row, "policy"), "unreadable stored policy skipped")
            }
        }
        true
    })?;
    Ok(policies)
}

/// The consignments shared with each organisation, in list order, from the store's grants.
fn shared_records(store: &Store, queries: &Queries) -> Result<Listing> {
    let shared = Listing::default();
    queries.each(store, Query::SharedRecords, &[], |row| {
        if let (Some(org), Some(aig), Some(ms)) = (
            text(&row, "org"),
            listing::aig_of(&row),
            text(&row, "created").and_then(|c| listing::millis(&c)),
        ) {
            if let Some(key) = listing::key(ms, &aig) {
                shared.insert(&org, key);
            }
        }
        true
    })?;
    Ok(shared)
}

#[cfg(test)]
mod tests {
    use super::policy::{Constraint, Operand, Permission};
    use super::*;

    #[test]
    fn policies_come_back_from_their_encoding() {
        let mut set = PolicySet::default();
        for (uid, port) in [("p1", "KEMBA"), ("p2", "NLRTM")] {
            set.insert(Policy {
                uid: uid.into(),
                permissions: vec![Permission {
                    assignee: format!("did:web:example.org:{uid}"),
                    constraints: vec![Constraint {
                        operand: Operand::PortOfEntry,
                        any_of: false,
                        values: vec![port.into()],
                    }],
                }],
                created: "2026-01-01T00:00:00Z".into(),
            });
        }
        let bytes = encode_policies(&set);
        let mut snapshot = Snapshot::new("t".into());
        snapshot.put("p", bytes.clone());
        let back = decode_policies(snapshot.section("p").unwrap()).unwrap();
        assert_eq!(back.len(), 2);
        for uid in ["p1", "p2"] {
            assert_eq!(back.get(uid), set.get(uid));
        }
        snapshot.put("p", bytes[..bytes.len() - 1].to_vec());
        assert!(decode_policies(snapshot.section("p").unwrap()).is_none());
    }
}
