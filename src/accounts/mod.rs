//! Organisations, users and API keys, kept in the system accounts graph, and the audit log of
//! their changes.
//!
//! API keys are stored as SHA-256 hashes (they are 256-bit random tokens, so a fast hash is
//! enough); the hashes, the users' roles and standing and the sessions ended early are also
//! held in memory, so the per-request key and session checks touch no disk.
//!
//! Layout: `keys` (an organisation's named keys), `people` (roles, standing, the session
//! check), `users` (changing users, passwords, logging out, the operator account), `audit`,
//! `load` (reading it all at start-up).

pub mod audit;
pub mod keys;
mod load;
pub mod people;
pub mod users;

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use oxigraph::model::vocab::rdf;
use oxigraph::model::{GraphName, Literal, NamedNode, Quad, Term};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::identity::NodeIdentity;
use crate::secrets::random_token;
use crate::store::Query;
use crate::store::{graphs, Queries, Store};
use crate::vocab::{dsn, xsd};
use audit::{Actor, Audit, Change};
use keys::{key_quads, Key};
use people::{Person, Role, Standing};

/// Ended sessions are `<urn:dataspace-node:session:{jti}>` in the ended-sessions graph.
pub const SESSION_PREFIX: &str = "urn:dataspace-node:session:";

/// Who presented an `x-api-key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyHolder {
    Operator,
    Organization(String),
}

pub struct NewAccount {
    /// Already validated and normalised (lower case).
    pub email: String,
    pub password_hash: String,
    pub profile_name: Option<String>,
    /// DID of an existing organisation to join.
    pub organization: Option<String>,
}

#[derive(Debug, Clone)]
pub struct CreatedAccount {
    pub identity: String,
    pub organization: String,
    pub api_key: String,
}

#[derive(Debug, Clone)]
pub struct UserRecord {
    pub identity: String,
    pub organization: String,
    pub password_hash: String,
}

pub struct Accounts {
    store: Arc<Store>,
    queries: Arc<Queries>,
    identity: Arc<NodeIdentity>,
    /// SHA-256 (hex) of each live organisation key → the key.
    keys: RwLock<HashMap<String, Key>>,
    standing: RwLock<Standing>,
    /// Counts the changes that ended sessions: open streams re-check theirs on each.
    ended: tokio::sync::watch::Sender<u64>,
    pub audit: Arc<Audit>,
}

pub fn key_hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

impl Accounts {
    /// Loads the keys, users and ended sessions. Blocking.
    pub fn open(
        store: Arc<Store>,
        queries: Arc<Queries>,
        identity: Arc<NodeIdentity>,
    ) -> Result<Self> {
        let loaded = load::load(&store, &identity.node_did())?;
        let audit = Arc::new(Audit::load(&store)?);
        store.register(&audit);
        Ok(Self {
            store,
            queries,
            identity,
            keys: RwLock::new(loaded.keys),
            standing: RwLock::new(loaded.standing),
            ended: tokio::sync::watch::channel(0).0,
            audit,
        })
    }

    /// This node's organisations (those holding a key), as loaded and created since.
    pub fn organizations(&self) -> std::collections::HashSet<String> {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        keys.values().map(|k| k.org.clone()).collect()
    }

    /// Is `org` one of the node's organisations (it holds a key or a user)?
    pub fn organization_known(&self, org: &str) -> bool {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        keys.values().any(|k| k.org == org)
            || self
                .standing()
                .people
                .values()
                .any(|p| p.organization == org && p.role != Role::Operator)
    }

    pub fn organization_for_key(&self, key: &str) -> Option<String> {
        self.key_of(key).map(|(org, _)| org)
    }

    /// Who may hold a session, read under one lock.
    pub fn standing(&self) -> RwLockReadGuard<'_, Standing> {
        self.standing.read().unwrap_or_else(|p| p.into_inner())
    }

    fn standing_mut(&self) -> RwLockWriteGuard<'_, Standing> {
        self.standing.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes whatever holds sessions open (streams) to check them again.
    fn sessions_ended(&self) {
        self.ended.send_modify(|n| *n += 1);
    }

    /// Changes each time sessions may have ended.
    pub fn watch_ended(&self) -> tokio::sync::watch::Receiver<u64> {
        self.ended.subscribe()
    }

    /// The node's organisations with their users and keys counted (the operator's list).
    pub fn organization_list(&self) -> Vec<serde_json::Value> {
        let mut orgs: HashMap<String, (usize, usize)> = HashMap::new();
        for k in self.keys.read().unwrap_or_else(|p| p.into_inner()).values() {
            orgs.entry(k.org.clone()).or_default().1 += 1;
        }
        for p in self.standing().people.values() {
            if p.role != Role::Operator {
                orgs.entry(p.organization.clone()).or_default().0 += 1;
            }
        }
        let mut list: Vec<_> = orgs.into_iter().collect();
        list.sort();
        list.into_iter()
            .map(|(id, (users, keys))| serde_json::json!({"id": id, "users": users, "keys": keys}))
            .collect()
    }

    /// Is `did` one of this node's organisations? Blocking.
    pub fn organization_exists(&self, did: &str) -> Result<bool> {
        let Ok(org) = NamedNode::new(did) else {
            return Ok(false);
        };
        self.queries.ask(
            &self.store,
            Query::OrganizationExists,
            &[("org", org.into())],
        )
    }

    /// The user DIDs of organisation `org`. Blocking.
    pub fn users_of(&self, org: &str) -> Result<Vec<String>> {
        let Ok(org) = NamedNode::new(org) else {
            return Ok(Vec::new());
        };
        let rows = self.queries.select(
            &self.store,
            Query::OrganizationUsers,
            &[("org", org.into())],
        )?;
        Ok(rows
            .iter()
            .filter_map(|row| match row.get("user") {
                Some(Term::NamedNode(u)) => Some(u.as_str().to_owned()),
                _ => None,
            })
            .collect())
    }

    pub fn user_by_email(&self, email: &str) -> Result<Option<UserRecord>> {
        let rows = self.queries.select(
            &self.store,
            Query::UserByEmail,
            &[("email", Literal::new_simple_literal(email).into())],
        )?;
        let node = self.identity.node_did();
        Ok(rows.first().and_then(|row| user_record(row, &node)))
    }

    /// Creates a user, and a new organisation when none is named. Everything is written in one
    /// transaction, checked under the writer lock: a duplicate email leaves nothing behind.
    /// Blocking.
    pub fn create(
        &self,
        holder: &KeyHolder,
        presented_key: &str,
        new: NewAccount,
    ) -> Result<CreatedAccount> {
        let (organization, join, minted_key) =
            self.target_of(holder, new.organization.as_deref())?;
        let org_node = NamedNode::new(&organization)
            .map_err(|_| Error::invalid_field("organizationId", "not a valid DID"))?;
        let user = self.identity.user_did(&new_id());
        let user_node = NamedNode::new_unchecked(&user);
        let now = now_literal();

        let role = if join { Role::Member } else { Role::Admin };
        let actor = self.key_actor(holder, presented_key);
        self.store.commit(|tx, events| {
            self.check_email_free(tx, &new.email)?;
            if join
                && !self.queries.ask_in(
                    tx,
                    Query::OrganizationExists,
                    &[("org", org_node.clone().into())],
                )?
            {
                return Err(Error::NotFound(format!(
                    "organisation {organization} not found on this node"
                )));
            }
            if !join {
                let g = GraphName::from(graphs::accounts());
                let org_type = dsn("Organization");
                tx.insert(&Quad::new(org_node.clone(), rdf::TYPE, org_type, g.clone()));
                tx.insert(&Quad::new(org_node.clone(), dsn("created"), now.clone(), g));
            }
            if let Some(key) = &minted_key {
                let name = if join { "operator-issued" } else { "default" };
                for q in key_quads(&org_node, key, name, &now) {
                    tx.insert(&q);
                }
                self.audit.record(
                    tx,
                    events,
                    &actor,
                    Change {
                        action: "key.created",
                        organization: Some(&organization),
                        target: &keys::key_id(&key_hash(key)),
                        details: serde_json::json!({"name": name}),
                    },
                );
            }
            Self::write_user(tx, &org_node, &user_node, &new, role, &now);
            self.audit.record(
                tx,
                events,
                &actor,
                Change {
                    action: "user.created",
                    organization: Some(&organization),
                    target: &user,
                    details: serde_json::json!({"email": new.email, "role": role}),
                },
            );
            self.remember(&user, &organization, &new, role, &now);
            Ok(())
        })?;

        let api_key = match minted_key {
            Some(key) => {
                let name = if join { "operator-issued" } else { "default" };
                self.hold_key(&key, &organization, name, now.value());
                key
            }
            None => presented_key.to_owned(),
        };
        Ok(CreatedAccount {
            identity: user,
            organization,
            api_key,
        })
    }

    /// Who the audit log names for a change made with a key alone.
    fn key_actor(&self, holder: &KeyHolder, presented_key: &str) -> Actor {
        match holder {
            KeyHolder::Operator => Actor {
                user: "operator key".into(),
                organization: self.identity.node_did(),
            },
            KeyHolder::Organization(org) => Actor {
                user: format!("API key {}", keys::key_id(&key_hash(presented_key))),
                organization: org.clone(),
            },
        }
    }

    /// Refuses an email some account has (under the writer lock).
    fn check_email_free(&self, tx: &oxigraph::store::Transaction<'_>, email: &str) -> Result<()> {
        let taken = !self
            .queries
            .select_in(
                tx,
                Query::UserByEmail,
                &[("email", Literal::new_simple_literal(email).into())],
            )?
            .is_empty();
        if taken {
            return Err(Error::DuplicateEmail(format!(
                "an account with the email {email} already exists"
            )));
        }
        Ok(())
    }

    /// A new user in memory. Under the writer lock, in the write that stores it: the next
    /// writer's checks (one operator account, the last admin) see it.
    fn remember(&self, user: &str, org: &str, new: &NewAccount, role: Role, now: &Literal) {
        self.standing_mut().people.insert(
            user.to_owned(),
            Person {
                identity: user.to_owned(),
                organization: org.to_owned(),
                email: new.email.clone(),
                profile_name: new.profile_name.clone(),
                role,
                disabled: false,
                generation: 0,
                created: now.value().to_owned(),
            },
        );
    }

    /// The organisation the new user joins (or a new one), whether it exists already, and the
    /// key minted for it, as the presented key allows.
    fn target_of(
        &self,
        holder: &KeyHolder,
        organization: Option<&str>,
    ) -> Result<(String, bool, Option<String>)> {
        Ok(match (holder, organization) {
            (KeyHolder::Operator, None) => {
                let org = self.identity.organization_did(&new_id());
                (org, false, Some(random_token("dsn_org_")))
            }
            (KeyHolder::Operator, Some(org)) => {
                // The operator cannot learn an organisation's existing key (only its hash is
                // stored), so joining through the operator mints an additional key for it.
                (org.to_owned(), true, Some(random_token("dsn_org_")))
            }
            (KeyHolder::Organization(own), None) => (own.clone(), true, None),
            (KeyHolder::Organization(own), Some(org)) if org == own => (own.clone(), true, None),
            (KeyHolder::Organization(_), Some(_)) => {
                return Err(Error::Forbidden(
                    "an organisation API key can only add users to its own organisation".into(),
                ))
            }
        })
    }

    /// The quads of a new user.
    fn write_user(
        tx: &mut oxigraph::store::Transaction<'_>,
        org_node: &NamedNode,
        user_node: &NamedNode,
        new: &NewAccount,
        role: Role,
        now: &Literal,
    ) {
        let graph = GraphName::from(graphs::accounts());
        let mut add = |p: NamedNode, o: Term| {
            tx.insert(&Quad::new(user_node.clone(), p, o, graph.clone()));
        };
        let text = |v: &str| Term::from(Literal::new_simple_literal(v));
        add(rdf::TYPE.into_owned(), dsn("User").into());
        add(dsn("email"), text(&new.email));
        add(dsn("passwordHash"), text(&new.password_hash));
        // The operator account belongs to no organisation: its sessions name the node.
        if role != Role::Operator {
            add(dsn("memberOf"), org_node.clone().into());
        }
        add(dsn("created"), now.clone().into());
        add(dsn("role"), text(role.as_str()));
        if let Some(name) = &new.profile_name {
            add(dsn("profileName"), text(name));
        }
    }
}

/// A login's account; one without an organisation is the operator's, whose sessions name the
/// node `node_did`.
fn user_record(row: &oxigraph::sparql::QuerySolution, node_did: &str) -> Option<UserRecord> {
    let organization = match row.get("org") {
        Some(Term::NamedNode(o)) => o.as_str().to_owned(),
        _ => node_did.to_owned(),
    };
    match (row.get("user"), row.get("hash")) {
        (Some(Term::NamedNode(u)), Some(Term::Literal(h))) => Some(UserRecord {
            identity: u.as_str().to_owned(),
            organization,
            password_hash: h.value().to_owned(),
        }),
        _ => None,
    }
}

pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

pub(crate) fn now_literal() -> Literal {
    Literal::new_typed_literal(
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        xsd("dateTime"),
    )
}
