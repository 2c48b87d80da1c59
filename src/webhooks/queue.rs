//! Deliveries queued in the transaction of the change they tell of (a [`Journal`]): a write
//! that does not commit queues nothing, and a crash after the commit loses nothing. Who is told
//! is decided there too, from what the transaction reads — the consignment's publisher, circle
//! and contributors as this very write leaves them — so a grant revoked in an earlier commit
//! stops every later event, and a grant given by this write already counts. Each event's
//! deliveries are one [`Batch`] record, whatever the number of subscriptions told.

use oxigraph::model::NamedNode;
use oxigraph::store::Transaction;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::batch::{Batch, Pending};
use super::{Subscription, Webhooks};
use crate::consignment::now;
use crate::error::Result;
use crate::store::{graphs, records, Change, Committed, Events, Journal};

pub fn graph() -> NamedNode {
    NamedNode::new_unchecked("urn:dataspace-node:system:webhook-deliveries")
}

/// One event for one subscription, and how its delivery went, as its batch holds it. `body`
/// is fixed when queued, so every attempt (and a replay) sends the same bytes under the same
/// id.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// The `webhook-id`.
    pub id: String,
    pub subscription: String,
    pub kind: String,
    pub created: String,
    /// Commit order across the node: deliveries of a subscription go out in this order.
    pub seq: u64,
    pub body: String,
    pub state: State,
    /// For a subscription with `full`: the object its body is to carry, read as the subscriber
    /// at the revision before the first attempt (then the body holds it and this goes).
    pub full: Option<FullRef>,
}

/// How a delivery went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<String>,
    /// How often a retry or replay asked for it again: an attempt that began before the last
    /// of them does not mark it delivered (the one asked for is still to be sent).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resets: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Which object a `full` delivery carries: as `organization` reads it at `at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FullRef {
    pub organization: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub aig_id: String,
    pub at: String,
    pub object_id: String,
}

impl Delivery {
    /// What the delivery log answers: everything but the body.
    pub fn public(&self) -> Value {
        json!({
            "id": self.id, "type": self.kind, "created": self.created,
            "attempts": self.state.attempts, "lastStatus": self.state.last_status,
            "lastError": self.state.last_error, "nextAttempt": self.state.next_attempt,
            "deliveredAt": self.state.delivered_at,
        })
    }
}

/// A consignment's ids and the organisations that read it, as the transaction has them.
struct Readers {
    consignment: Value,
    publisher: String,
    shared: Vec<String>,
    entry_country: Option<String>,
    exit_country: Option<String>,
}

impl Readers {
    fn of(tx: &Transaction<'_>, aig_hex: &str) -> Result<Option<Self>> {
        let record = graphs::consignment(aig_hex);
        let index = graphs::consignment_index();
        let Some(publisher) = records::objects(tx, &record, "publisher", index.as_ref())?
            .into_iter()
            .next()
        else {
            return Ok(None);
        };
        let text = |p: &str| records::literal(tx, &record, p, index.as_ref());
        let consignment = json!({
            "aigId": format!("aig:{aig_hex}"),
            "globalId": text("globalId")?,
            "identifier": text("identifier")?,
        });
        let mut shared = records::circle(tx, &record)?;
        shared.extend(records::contributors(tx, &record)?);
        shared.retain(|o| *o != publisher);
        let summary = graphs::summary(aig_hex);
        let contribution = graphs::contribution(aig_hex, &publisher);
        let country = |p: &str| records::literal(tx, &summary, p, contribution.as_ref());
        Ok(Some(Self {
            consignment,
            entry_country: country("portOfEntryCountry")?,
            exit_country: country("portOfExitCountry")?,
            shared,
            publisher,
        }))
    }

    /// Whether `s` is told: its organisation reads the consignment in the subscription's
    /// scope, and the ports match its filter.
    fn tell(&self, s: &Subscription) -> bool {
        let own = s.organization == self.publisher;
        let shared = !own && self.shared.contains(&s.organization);
        let scoped = match s.filter.scope.as_deref() {
            Some("own") => own,
            Some("shared") => shared,
            _ => own || shared,
        };
        scoped && self.ports_match(s)
    }

    fn ports_match(&self, s: &Subscription) -> bool {
        let port = |want: &Option<String>, have: &Option<String>| {
            want.as_ref().is_none_or(|w| have.as_ref() == Some(w))
        };
        port(&s.filter.port_of_entry_country_id, &self.entry_country)
            && port(&s.filter.port_of_exit_country_id, &self.exit_country)
    }
}

impl Webhooks {
    /// What subscription `s` is to receive of a change: its place in the batch, and for a
    /// `full` subscription which object the body is to carry.
    fn to_receive(
        &self,
        s: &Subscription,
        kind: &str,
        cause: Option<&Change>,
        n: usize,
    ) -> Pending {
        let full = cause
            .filter(|_| s.full && kind != "consignment.unshared")
            .map(|c| FullRef {
                organization: s.organization.clone(),
                kind: kind.to_owned(),
                aig_id: format!("aig:{}", c.aig_hex),
                at: c.at.clone(),
                object_id: c.object_id.clone(),
            });
        Pending::queued(&s.id, n, full)
    }

    /// Queues one event for the subscriptions told of it, as one batch.
    fn queue(
        &self,
        tx: &mut Transaction<'_>,
        kind: &str,
        data: Value,
        to: Vec<Pending>,
        orgs: &[&str],
    ) -> Batch {
        let created = now();
        let body = json!({"type": kind, "timestamp": created, "data": data}).to_string();
        let b = Batch {
            id: uuid::Uuid::new_v4().simple().to_string(),
            kind: kind.to_owned(),
            created,
            seq: self.next_seq(),
            body,
            to,
        };
        tx.insert(&b.quad());
        for q in b.index(orgs) {
            tx.insert(&q);
        }
        b
    }
}

fn data(readers: &Readers, cause: Option<&Change>) -> Value {
    let mut data = json!({
        "consignment": readers.consignment,
        "revision": cause.map(|c| c.entry_id.clone()),
        "activityLogEntryId": cause.map(|c| c.entry_id.clone()),
        "organizationIdentity": cause.map(|c| c.organization.clone()),
    });
    if let Some(c) = cause.filter(|c| c.kind == "consignment.updated") {
        data["changed"] = json!(c.changed);
    }
    if let Some((id, revision)) = cause.and_then(|c| c.document.as_ref()) {
        data["document"] = json!({"documentId": id, "documentRevision": revision});
    }
    data
}

impl Journal for Webhooks {
    fn record(&self, tx: &mut Transaction<'_>, events: &mut Events) -> Result<()> {
        let subscriptions = self.matching(Subscription::enabled);
        if subscriptions.is_empty() {
            return Ok(());
        }
        let mut queued = Vec::new();
        let mut cause: Option<Change> = None;
        for event in events.iter() {
            let (aig_hex, kind, only) = match event {
                Committed::ConsignmentChanged(c) => {
                    cause = Some((**c).clone());
                    (c.aig_hex.clone(), c.kind, None)
                }
                Committed::Shared { org, aig, .. } => (hex(aig), "consignment.shared", Some(org)),
                Committed::Unshared { org, aig, .. } => {
                    (hex(aig), "consignment.unshared", Some(org))
                }
                _ => continue,
            };
            let told: Vec<&Subscription> = subscriptions
                .iter()
                .map(|s| &**s)
                .filter(|s| s.events.iter().any(|e| e == kind))
                .filter(|s| only.is_none_or(|o| *o == s.organization))
                .collect();
            if told.is_empty() {
                continue;
            }
            let Some(readers) = Readers::of(tx, &aig_hex)? else {
                continue;
            };
            let cause = cause.as_ref().filter(|c| c.aig_hex == aig_hex);
            // A withdrawn grant is told to the organisation that lost it, which no longer
            // reads the consignment: only its ids, which it had.
            let unshared = kind == "consignment.unshared";
            let mut to = Vec::new();
            let mut orgs: Vec<&str> = Vec::new();
            for s in told {
                let told = if unshared {
                    s.filter.scope.as_deref() != Some("own") && readers.ports_match(s)
                } else {
                    readers.tell(s)
                };
                if told {
                    to.push(self.to_receive(s, kind, cause, to.len()));
                    if !orgs.contains(&s.organization.as_str()) {
                        orgs.push(&s.organization);
                    }
                }
            }
            if to.is_empty() {
                continue;
            }
            let data = if unshared {
                json!({"consignment": readers.consignment})
            } else {
                data(&readers, cause)
            };
            let b = self.queue(tx, kind, data, to, &orgs);
            queued.push(Committed::DeliveriesQueued {
                queued: b
                    .to
                    .iter()
                    .map(|p| (p.subscription.clone(), b.delivery_id(p.n)))
                    .collect(),
            });
        }
        for event in queued {
            events.push(event);
        }
        Ok(())
    }
}

fn hex(aig: &str) -> String {
    aig.strip_prefix("aig:").unwrap_or(aig).to_owned()
}
