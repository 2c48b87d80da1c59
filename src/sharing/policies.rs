//! The policies callers manage: stored with their ODRL quads and their state, listed only
//! to the operator and the assignees, deleted together with the grants they alone gave.

use oxigraph::model::{GraphName, NamedNode, Quad, Term};
use serde_json::Value;

use super::policy::{self, Permission, Policy, Rules};
use super::{quad, readable, Sharing};
use crate::accounts::audit::{Audited, Change};
use crate::auth::Caller;
use crate::consignment::cursor::Position;
use crate::consignment::listing;
use crate::consignment::Page;
use crate::error::{Error, Result};
use crate::rdf::text;
use crate::store::Query;
use crate::store::{graphs, Committed};
use crate::vocab::{dsn, json_literal};

const POLICY_NOT_FOUND: &str = "no policy with this uid is available to you";

/// The audit entry of a policy change, one per assignee: each assignee's admins read theirs.
fn policy_change<'a>(action: &'a str, uid: &'a str, assignee: &'a str) -> Change<'a> {
    Change {
        action,
        organization: Some(assignee),
        target: uid,
        details: serde_json::json!({}),
    }
}

impl Sharing {
    /// `POST /policies`: checks the body, stores the policy and indexes it. Blocking.
    pub fn create_policy(&self, body: &Value, by: Audited<'_>) -> Result<Value> {
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
                        .ask(
                            &self.store,
                            Query::OrganizationExists,
                            &[("org", org.into())],
                        )
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
                json_literal(state),
                GraphName::NamedNode(graph.clone()),
            ));
            events.push(Committed::PolicyStored { state: stored });
            for assignee in &policy.assignees() {
                by.record(
                    tx,
                    events,
                    policy_change("policy.created", &policy.uid, assignee),
                );
            }
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
    pub fn delete_policy(&self, uid: &str, by: Audited<'_>) -> Result<usize> {
        let graph = graphs::policy(uid);
        let (revoked, _) = self.store.commit(|tx, events| {
            let Some(assignees) = self.policy_set().get(uid).map(Policy::assignees) else {
                return Err(Error::NotFound(POLICY_NOT_FOUND.into()));
            };
            for assignee in &assignees {
                by.record(tx, events, policy_change("policy.deleted", uid, assignee));
            }
            tx.clear_graph(GraphName::NamedNode(graph.clone()).as_ref())?;
            events.push(Committed::PolicyRemoved {
                uid: uid.to_owned(),
            });
            let mut revoked = 0;
            let mut withdrawn = Vec::new();
            let given = graphs::grants(uid);
            let grants = self.queries.select_in(
                tx,
                Query::GrantsOfPolicy,
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
                    Query::GrantRemains,
                    &[
                        ("record", record.clone().into()),
                        ("org", org.clone().into()),
                    ],
                )?;
                if !remains {
                    withdrawn.push((record.clone(), org.as_str().to_owned()));
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
            let now = crate::consignment::format_millis(self.store.stamp());
            self.withdraw_remote(tx, &withdrawn, uid, &now, events)?;
            Ok(revoked)
        })?;
        Ok(revoked)
    }
}
