//! Circles that span nodes: notices received from partner nodes, and contributions offered
//! to a consignment's provider on another node.
//!
//! A consignment shared from another node is recorded here as a **remote record**: the same
//! index facts as a local consignment (publisher = the provider organisation, its dataset id as
//! the record's graph), but no description — that stays with the provider and is pulled when
//! read. Circle membership, notifications and the receiver's list order work as for a local
//! share. A partner's contribution to one of this node's consignments is recorded as a
//! contributor whose graph is held by its own node.

use oxigraph::model::{NamedNode, Quad, Term};
use serde_json::json;

use super::{has, quad, Sharing};
use crate::consignment::listing;
use crate::error::{Error, Result};
use crate::federation::notice::{self, Kind, Received};
use crate::federation::outbox::{Notice, Outbox};
use crate::federation::token::NodeCaller;
use crate::rdf::literal;
use crate::store::graphs;
use crate::store::Query;
use crate::store::{Committed, Events};
use crate::vocab::dsn;

const NO_SUCH_ORGANIZATION: &str = "no such organisation on this node";
const NO_SUCH_CONSIGNMENT: &str = "no consignment with this id is provided by this organisation";

fn date(s: &str) -> Term {
    oxigraph::model::Literal::new_typed_literal(s, oxigraph::model::vocab::xsd::DATE_TIME).into()
}

fn index_quad(s: &NamedNode, p: &str, o: impl Into<Term>) -> Quad {
    Quad::new(
        s.clone(),
        dsn(p),
        o,
        oxigraph::model::GraphName::NamedNode(graphs::consignment_index()),
    )
}

/// The publisher of a record, from the index.
fn publisher_of(
    tx: &oxigraph::store::Transaction<'_>,
    record: &NamedNode,
) -> Result<Option<String>> {
    let index = graphs::consignment_index();
    Ok(
        crate::store::records::objects(tx, record, "publisher", index.as_ref())?
            .into_iter()
            .next(),
    )
}

impl Sharing {
    /// Records a notice a partner node sent (checked for shape by `federation::notice`).
    /// The calling node must act for the notice's actor; the receiver must be one of this
    /// node's organisations. Blocking.
    pub fn receive(&self, caller: &NodeCaller, n: &Received) -> Result<()> {
        if n.actor != caller.organization {
            return Err(Error::Forbidden(
                "the notice's actor is not the organisation the calling node acts for".into(),
            ));
        }
        if self.identity.local_organization(&n.to).is_none() {
            return Err(Error::NotFound(NO_SUCH_ORGANIZATION.into()));
        }
        let to = NamedNode::new_unchecked(&n.to);
        if !self.queries.ask(
            &self.store,
            Query::OrganizationExists,
            &[("org", to.clone().into())],
        )? {
            return Err(Error::NotFound(NO_SUCH_ORGANIZATION.into()));
        }
        // Graph names carry a key of the whole DID: a partner's organisation whose id segment
        // is also one of ours (or another partner's) still names graphs of its own.
        let key = graphs::org_key(&n.actor);
        if graphs::parse_contribution(&n.dataset)
            != Some((n.consignment.aig_hex.as_str(), key.as_str()))
        {
            return Err(Error::invalid_field(
                "object.id",
                "is not the sending organisation's dataset of this consignment",
            ));
        }
        match n.kind {
            Kind::Share => self.receive_share(n, to),
            Kind::Withdrawal => self.receive_withdrawal(n, to),
            Kind::Contribution => self.receive_contribution(n, to),
        }
    }

    fn receive_share(&self, n: &Received, to: NamedNode) -> Result<()> {
        let record = n.consignment.node();
        let node = crate::federation::did::node_of(&n.actor).unwrap_or_default();
        let cap = self.federation.limits().remote_records;
        self.store.commit(|tx, events| {
            let member = quad(record.clone(), dsn("sharedWith"), to.clone());
            let joins = !has(tx, &member)?;
            // Checked before anything is written: a refused share leaves no record behind.
            if joins {
                super::held::add(tx, &to, node, cap)?;
            }
            let mut created = n.created.clone();
            match publisher_of(tx, &record)? {
                Some(p) if p != n.actor => {
                    return Err(Error::Conflict(
                        "this consignment id belongs to another publisher".into(),
                    ))
                }
                Some(_) => {
                    // The date the record was first stored with keys it in every receiver's
                    // list alike (a later notice's may differ: held to this node's clock).
                    let index = graphs::consignment_index();
                    let stored =
                        crate::store::records::literal(tx, &record, "created", index.as_ref())?;
                    if let Some(stored) = stored {
                        created = stored;
                    }
                }
                None => {
                    let actor = NamedNode::new_unchecked(&n.actor);
                    for q in [
                        index_quad(&record, "publisher", actor),
                        index_quad(&record, "aigId", literal(&n.consignment.aig_id())),
                        index_quad(&record, "globalId", literal(&n.consignment.global_id)),
                        index_quad(&record, "identifier", literal(&n.consignment.identifier)),
                        index_quad(&record, "graph", NamedNode::new_unchecked(&n.dataset)),
                        index_quad(&record, "created", date(&n.created)),
                        index_quad(&record, "updated", date(&n.created)),
                    ] {
                        tx.insert(&q);
                    }
                }
            }
            if !joins {
                return Ok(());
            }
            tx.insert(&member);
            super::readable::member_added(tx, &record, &n.consignment.aig_hex, to.as_str())?;
            let note = json!({
                "id": null,
                "type": "ConsignmentShared",
                "consignment": {
                    "globalId": n.consignment.global_id,
                    "identifier": n.consignment.identifier,
                    "aigId": n.consignment.aig_id(),
                },
                "provider": n.actor,
                "datasetId": n.dataset,
                "policy": n.policy,
                "date": n.published,
            });
            let seq = self.notifications.write(tx, to.as_str(), note)?;
            events.push(Committed::NotificationWritten {
                org: to.as_str().to_owned(),
                seq,
            });
            if let Some(ms) = listing::millis(&created) {
                events.push(Committed::Shared {
                    org: to.as_str().to_owned(),
                    created_ms: ms,
                    aig: n.consignment.aig_id(),
                });
            }
            Ok(())
        })?;
        Ok(())
    }

    /// The provider no longer shares its consignment with `to`: the membership goes, as a
    /// local policy's deletion takes it (the notification of the share stays, a record of what
    /// happened). A withdrawal of a share this node never recorded changes nothing.
    fn receive_withdrawal(&self, n: &Received, to: NamedNode) -> Result<()> {
        let record = n.consignment.node();
        self.store.commit(|tx, events| {
            if publisher_of(tx, &record)?.as_deref() != Some(n.actor.as_str()) {
                return Ok(());
            }
            let member = quad(record.clone(), dsn("sharedWith"), to.clone());
            if !has(tx, &member)? {
                return Ok(());
            }
            tx.remove(&member);
            if let Some(node) = crate::federation::did::node_of(&n.actor) {
                super::held::remove(tx, &to, node)?;
            }
            super::readable::member_removed(tx, &record, &n.consignment.aig_hex, to.as_str())?;
            let index = graphs::consignment_index();
            let created = crate::store::records::literal(tx, &record, "created", index.as_ref())?;
            if let Some(ms) = created.as_deref().and_then(listing::millis) {
                events.push(Committed::Unshared {
                    org: to.as_str().to_owned(),
                    created_ms: ms,
                    aig: n.consignment.aig_id(),
                });
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Tells partner nodes' organisations that lost every grant to a consignment when a policy
    /// was deleted (`revoked`: record, organisation): their undelivered `Announce`s of it are
    /// dropped from the outbox, and an `Undo` queued behind whatever else waits for them. In
    /// the deletion's transaction.
    pub(super) fn withdraw_remote(
        &self,
        tx: &mut oxigraph::store::Transaction<'_>,
        revoked: &[(NamedNode, String)],
        uid: &str,
        now: &str,
        events: &mut Events,
    ) -> Result<()> {
        let remote: Vec<&(NamedNode, String)> = revoked
            .iter()
            .filter(|(_, org)| self.federation.is_remote(org))
            .collect();
        if remote.is_empty() {
            return Ok(());
        }
        let pairs: Vec<(NamedNode, String)> = remote.iter().map(|p| (*p).clone()).collect();
        Outbox::drop_announces(tx, &pairs)?;
        let index = graphs::consignment_index();
        for (record, org) in remote {
            let fact = |p: &str| crate::store::records::literal(tx, record, p, index.as_ref());
            let (Some(global_id), Some(identifier), Some(created), Some(publisher), Some(hex)) = (
                fact("globalId")?,
                fact("identifier")?,
                fact("created")?,
                publisher_of(tx, record)?,
                super::readable::aig_hex(record),
            ) else {
                continue;
            };
            let dataset = graphs::contribution(hex, &publisher);
            let subject = notice::Subject {
                dataset: dataset.as_str(),
                consignment: crate::consignment::ConsignmentRef {
                    aig_hex: hex.to_owned(),
                    global_id,
                    identifier,
                    publisher: publisher.clone(),
                },
                created: &created,
            };
            let body = notice::build(Kind::Withdrawal, &publisher, org, &subject, Some(uid), now);
            self.queue(tx, &publisher, org, body, events);
        }
        Ok(())
    }

    fn receive_contribution(&self, n: &Received, to: NamedNode) -> Result<()> {
        let record = n.consignment.node();
        self.store.commit(|tx, events| {
            if publisher_of(tx, &record)?.as_deref() != Some(to.as_str()) {
                return Err(Error::NotFound(NO_SUCH_CONSIGNMENT.into()));
            }
            let actor = NamedNode::new_unchecked(&n.actor);
            if !has(tx, &quad(record.clone(), dsn("sharedWith"), actor.clone()))? {
                return Err(Error::Forbidden(
                    "the consignment is not shared with the offering organisation".into(),
                ));
            }
            tx.insert(&quad(record.clone(), dsn("contributor"), actor));
            super::readable::contribution_added(tx, &record, &n.consignment.aig_hex, &n.actor)?;
            events.push(Committed::CircleChanged {
                aig_hex: n.consignment.aig_hex.clone(),
            });
            Ok(())
        })?;
        Ok(())
    }

    /// Queues an `Offer` of `org`'s contribution to a consignment provided by an organisation
    /// on another node (first contribution only); in the inbox's transaction.
    pub fn offer_contribution(
        &self,
        tx: &mut oxigraph::store::Transaction<'_>,
        c: &super::Routed<'_>,
        org: &str,
        now: &str,
        events: &mut Events,
    ) -> Result<()> {
        if !self.federation.is_remote(c.consignment.publisher.as_str()) {
            return Ok(());
        }
        let dataset = graphs::contribution(&c.consignment.aig_hex, org);
        let body = notice::build(
            Kind::Contribution,
            org,
            c.consignment.publisher.as_str(),
            &c.subject(dataset.as_str()),
            None,
            now,
        );
        self.queue(tx, org, c.consignment.publisher.as_str(), body, events);
        Ok(())
    }

    /// Writes a notice to the outbox in the transaction.
    pub(super) fn queue(
        &self,
        tx: &mut oxigraph::store::Transaction<'_>,
        from: &str,
        to: &str,
        body: serde_json::Value,
        events: &mut Events,
    ) {
        let notice = Notice {
            id: body["id"].as_str().unwrap_or_default().to_owned(),
            from: from.to_owned(),
            to: to.to_owned(),
            body,
        };
        Outbox::queue(tx, &notice, events);
    }

    /// Is this organisation on another node?
    pub fn is_remote(&self, org: &str) -> bool {
        self.federation.is_remote(org)
    }
}
