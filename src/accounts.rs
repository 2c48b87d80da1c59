//! Organisations, users and API keys, kept in the system accounts graph.
//!
//! API keys are stored as SHA-256 hashes (they are 256-bit random tokens, so a fast hash is
//! enough); the hashes are also held in memory so the per-request key check touches no disk.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use oxigraph::model::vocab::rdf;
use oxigraph::model::{GraphName, Literal, NamedNode, Quad, Term};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::identity::NodeIdentity;
use crate::secrets::random_token;
use crate::store::Query;
use crate::store::{graphs, Queries, Store};
use crate::vocab::{dsn, xsd};

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
    /// SHA-256 (hex) of an organisation key → organisation DID.
    keys: RwLock<HashMap<String, String>>,
}

pub fn key_hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

impl Accounts {
    /// Loads the key hashes. Blocking.
    pub fn open(
        store: Arc<Store>,
        queries: Arc<Queries>,
        identity: Arc<NodeIdentity>,
    ) -> Result<Self> {
        let mut keys = HashMap::new();
        for row in queries.select(&store, Query::OrganizationKeys, &[])? {
            if let (Some(Term::NamedNode(org)), Some(Term::Literal(hash))) =
                (row.get("org"), row.get("keyHash"))
            {
                keys.insert(hash.value().to_owned(), org.as_str().to_owned());
            }
        }
        Ok(Self {
            store,
            queries,
            identity,
            keys: RwLock::new(keys),
        })
    }

    /// This node's organisations (those holding a key), as loaded and created since.
    pub fn organizations(&self) -> std::collections::HashSet<String> {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        keys.values().cloned().collect()
    }

    pub fn organization_for_key(&self, key: &str) -> Option<String> {
        self.keys
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key_hash(key))
            .cloned()
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
        Ok(rows.first().and_then(user_record))
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

        self.store.write(|tx| {
            if !self
                .queries
                .select_in(
                    tx,
                    Query::UserByEmail,
                    &[("email", Literal::new_simple_literal(&new.email).into())],
                )?
                .is_empty()
            {
                return Err(Error::DuplicateEmail(format!(
                    "an account with the email {} already exists",
                    new.email
                )));
            }
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
            let new_org = (!join).then_some(&now);
            Self::write_account(
                tx,
                &org_node,
                new_org,
                minted_key.as_deref(),
                &user_node,
                &new,
                &now,
            );
            Ok(())
        })?;

        let api_key = match minted_key {
            Some(key) => {
                self.keys
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key_hash(&key), organization.clone());
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

    /// The quads of a new user (and of its organisation when `new_org` gives its creation).
    fn write_account(
        tx: &mut oxigraph::store::Transaction<'_>,
        org_node: &NamedNode,
        new_org: Option<&Literal>,
        minted_key: Option<&str>,
        user_node: &NamedNode,
        new: &NewAccount,
        now: &Literal,
    ) {
        let graph = GraphName::from(graphs::accounts());
        let mut add = |s: &NamedNode, p: NamedNode, o: Term| {
            tx.insert(&Quad::new(s.clone(), p, o, graph.clone()));
        };
        if let Some(created) = new_org {
            add(org_node, rdf::TYPE.into_owned(), dsn("Organization").into());
            add(org_node, dsn("created"), created.clone().into());
        }
        if let Some(key) = minted_key {
            add(
                org_node,
                dsn("apiKeyHash"),
                Literal::new_simple_literal(key_hash(key)).into(),
            );
        }
        let text = |v: &str| Term::from(Literal::new_simple_literal(v));
        add(user_node, rdf::TYPE.into_owned(), dsn("User").into());
        add(user_node, dsn("email"), text(&new.email));
        add(user_node, dsn("passwordHash"), text(&new.password_hash));
        add(user_node, dsn("memberOf"), org_node.clone().into());
        add(user_node, dsn("created"), now.clone().into());
        if let Some(name) = &new.profile_name {
            add(user_node, dsn("profileName"), text(name));
        }
    }
}

fn user_record(row: &oxigraph::sparql::QuerySolution) -> Option<UserRecord> {
    match (row.get("user"), row.get("org"), row.get("hash")) {
        (Some(Term::NamedNode(u)), Some(Term::NamedNode(o)), Some(Term::Literal(h))) => {
            Some(UserRecord {
                identity: u.as_str().to_owned(),
                organization: o.as_str().to_owned(),
                password_hash: h.value().to_owned(),
            })
        }
        _ => None,
    }
}

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn now_literal() -> Literal {
    Literal::new_typed_literal(
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        xsd("dateTime"),
    )
}
