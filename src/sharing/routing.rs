//! Routing: the permissions a consignment's ports satisfy become grants, new members of its
//! circle and one notification per organisation that gains access.

use std::collections::HashSet;

use oxigraph::model::{GraphName, NamedNode, Quad};
use oxigraph::store::Transaction;
use serde_json::json;

use super::policy::Facts;
use super::{has, quad, readable, Routed, Sharing};
use crate::consignment::listing;
use crate::error::Result;
use crate::federation::notice::{self as federation_notice, Kind};
use crate::store::{graphs, Committed, Events};
use crate::vocab::dsn;

impl Sharing {
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
        let (record, dataset) = (c.consignment.node(), c.consignment.graph());
        let mut notified: HashSet<String> = HashSet::new();
        for (org, uid) in matches {
            if org == c.consignment.publisher {
                continue;
            }
            let org_node = NamedNode::new_unchecked(&org);
            // One quad per grant, one per new membership, one per notification: these writes
            // are most of what routing costs (docs/PERFORMANCE.md). Writing a grant that
            // exists (an Update routed again) changes nothing, so it is not looked up first.
            tx.insert(&Quad::new(
                record.clone(),
                dsn("sharedWith"),
                org_node.clone(),
                GraphName::NamedNode(graphs::grants(&uid)),
            ));
            let member = quad(record.clone(), dsn("sharedWith"), org_node);
            if notified.contains(&org) || has(tx, &member)? {
                continue;
            }
            tx.insert(&member);
            readable::member_added(tx, &record, &c.consignment.aig_hex, &org)?;
            notified.insert(org.clone());
            // A partner's organisation too: its shared list is what a Dataspace Protocol
            // connector of that DID is offered (and what a start without the snapshot rebuilds
            // from the circles, theirs included).
            if let Some(ms) = listing::millis(c.created) {
                events.push(Committed::Shared {
                    org: org.clone(),
                    created_ms: ms,
                    aig: c.consignment.aig_id(),
                });
            }
            if self.federation.is_remote(&org) {
                // The grant above is what the provider checks when the partner node pulls.
                let body = federation_notice::build(
                    Kind::Share,
                    c.consignment.publisher.as_str(),
                    &org,
                    &c.subject(dataset.as_str()),
                    Some(&uid),
                    now,
                );
                self.queue(tx, c.consignment.publisher.as_str(), &org, body, events);
                continue;
            }
            let note = json!({
                "id": null,
                "type": "ConsignmentShared",
                "consignment": {
                    "globalId": c.consignment.global_id,
                    "identifier": c.consignment.identifier,
                    "aigId": c.consignment.aig_id(),
                },
                "provider": c.consignment.publisher.as_str(),
                "datasetId": dataset.as_str(),
                "policy": uid,
                "date": now,
            });
            let seq = self.notifications.write(tx, &org, note)?;
            events.push(Committed::NotificationWritten {
                org: org.clone(),
                seq,
            });
        }
        Ok(())
    }
}
