//! Changing users: role and standing, passwords, logging out, and the operator account.

use oxigraph::model::{GraphName, Literal, NamedNode, Quad, Term};
use oxigraph::store::Transaction;
use serde_json::json;

use super::audit::{Actor, Change};
use super::people::{Person, Role};
use super::{now_literal, Accounts, CreatedAccount, NewAccount, SESSION_PREFIX};
use crate::error::{Error, Result};
use crate::store::graphs;
use crate::vocab::{dsn, xsd};

/// What `PATCH /organizations/{id}/users/{userId}` may change.
#[derive(Debug, Default)]
pub struct UserChange {
    pub role: Option<Role>,
    pub disabled: Option<bool>,
}

/// Replaces `subject`'s `predicate` in the accounts graph with `object`.
fn set(tx: &mut Transaction<'_>, subject: &NamedNode, predicate: &str, object: Term) -> Result<()> {
    crate::store::replace_value(tx, subject, &dsn(predicate), object, &graphs::accounts())
}

fn generation(n: u64) -> Term {
    Literal::new_typed_literal(n.to_string(), xsd("integer")).into()
}

impl Accounts {
    /// A user as requests see it now.
    pub fn person(&self, user: &str) -> Option<Person> {
        self.standing().people.get(user).cloned()
    }

    /// Changes a user of `org`'s role or standing. An organisation keeps at least one enabled
    /// admin. Disabling ends the user's sessions. Blocking.
    ///
    /// Users change only under the writer lock, their memory with the write that stores the
    /// change: each change starts from the one before (none is lost to a concurrent one), and
    /// the next writer's admin count sees it.
    pub fn update_user(
        &self,
        actor: &Actor,
        org: &str,
        user: &str,
        change: UserChange,
    ) -> Result<Person> {
        let node = NamedNode::new_unchecked(user);
        let ((before, after), _) = self.store.commit(|tx, events| {
            let before = self
                .person(user)
                .filter(|p| p.organization == org && p.role != Role::Operator)
                .ok_or_else(|| Error::NotFound(format!("organisation {org} has no user {user}")))?;
            let mut after = before.clone();
            after.role = change.role.unwrap_or(before.role);
            after.disabled = change.disabled.unwrap_or(before.disabled);
            if after.disabled && !before.disabled {
                after.generation += 1;
            }
            let was_admin = before.role == Role::Admin && !before.disabled;
            let is_admin = after.role == Role::Admin && !after.disabled;
            if was_admin && !is_admin && self.standing().admins_of(org) <= 1 {
                let field = if change.disabled == Some(true) {
                    "disabled"
                } else {
                    "role"
                };
                return Err(Error::invalid_field(
                    field,
                    "the organisation's last admin: make another user admin first",
                ));
            }
            let role = Literal::new_simple_literal(after.role.as_str());
            set(tx, &node, "role", role.into())?;
            let disabled = Literal::new_typed_literal(after.disabled.to_string(), xsd("boolean"));
            set(tx, &node, "disabled", disabled.into())?;
            set(tx, &node, "sessionGeneration", generation(after.generation))?;
            self.audit.record(
                tx,
                events,
                actor,
                Change {
                    action: "user.updated",
                    organization: Some(org),
                    target: user,
                    details: json!({"role": after.role, "disabled": after.disabled}),
                },
            );
            let mut standing = self.standing_mut();
            standing.people.insert(user.to_owned(), after.clone());
            Ok((before, after))
        })?;
        if after.generation != before.generation {
            self.sessions_ended();
        }
        Ok(after)
    }

    /// Stores `user`'s new password hash and ends its sessions; returns the generation a new
    /// session is to carry. Blocking.
    pub fn change_password(&self, actor: &Actor, user: &str, hash: &str) -> Result<u64> {
        let node = NamedNode::new_unchecked(user);
        let (generation_now, _) = self.store.commit(|tx, events| {
            let mut person = self
                .person(user)
                .ok_or_else(|| Error::Unauthorized(super::people::SESSION_ENDED.into()))?;
            person.generation += 1;
            let passwd = Literal::new_simple_literal(hash);
            set(tx, &node, "passwordHash", passwd.into())?;
            set(
                tx,
                &node,
                "sessionGeneration",
                generation(person.generation),
            )?;
            let org = (person.role != Role::Operator).then_some(person.organization.as_str());
            self.audit.record(
                tx,
                events,
                actor,
                Change {
                    action: "password.changed",
                    organization: org,
                    target: user,
                    details: json!({}),
                },
            );
            let n = person.generation;
            self.standing_mut().people.insert(user.to_owned(), person);
            Ok(n)
        })?;
        self.sessions_ended();
        Ok(generation_now)
    }

    /// Ends session `jti` (valid until `exp`, seconds) before its expiry; the ended sessions
    /// already past their expiry are dropped in the same write. Blocking.
    pub fn end_session(&self, jti: &str, exp: i64) -> Result<()> {
        let now = chrono::Utc::now().timestamp();
        let expired: Vec<(String, i64)> = self
            .standing()
            .ended
            .iter()
            .filter(|(_, until)| **until < now)
            .map(|(j, until)| (j.clone(), *until))
            .collect();
        let g = GraphName::from(graphs::ended_sessions());
        let ends = |j: &str, until: i64| {
            Quad::new(
                NamedNode::new_unchecked(format!("{SESSION_PREFIX}{j}")),
                dsn("endsAt"),
                Literal::new_typed_literal(until.to_string(), xsd("integer")),
                g.clone(),
            )
        };
        self.store.write(|tx| {
            for (j, until) in &expired {
                tx.remove(&ends(j, *until));
            }
            tx.insert(&ends(jti, exp));
            Ok(())
        })?;
        let mut standing = self.standing_mut();
        for (j, _) in &expired {
            standing.ended.remove(j);
        }
        standing.ended.insert(jti.to_owned(), exp);
        drop(standing);
        self.sessions_ended();
        Ok(())
    }

    /// Creates the operator account, once: it signs in with the operator key like a user and
    /// is what policies and organisations are managed with. Blocking.
    pub fn create_operator(&self, new: NewAccount) -> Result<CreatedAccount> {
        let node_did = self.identity.node_did();
        let user = self.identity.user_did(&super::new_id());
        let user_node = NamedNode::new_unchecked(&user);
        let org_node = NamedNode::new_unchecked(&node_did);
        let now = now_literal();
        let actor = Actor {
            user: "operator key".into(),
            organization: node_did.clone(),
        };
        self.store.commit(|tx, events| {
            if self
                .standing()
                .people
                .values()
                .any(|p| p.role == Role::Operator)
            {
                return Err(Error::Conflict(
                    "the operator account exists already; sign in with it".into(),
                ));
            }
            self.check_email_free(tx, &new.email)?;
            Self::write_user(tx, &org_node, &user_node, &new, Role::Operator, &now);
            self.audit.record(
                tx,
                events,
                &actor,
                Change {
                    action: "operator.created",
                    organization: None,
                    target: &user,
                    details: json!({"email": new.email}),
                },
            );
            self.remember(&user, &node_did, &new, Role::Operator, &now);
            Ok(())
        })?;
        Ok(CreatedAccount {
            identity: user,
            organization: node_did,
            api_key: String::new(),
        })
    }
}
