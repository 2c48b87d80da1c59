//! An organisation's API keys: several, named, each revocable on its own.
//!
//! A key is stored as its SHA-256 (`<org> dsn:apiKeyHash`), with its name, creation and last
//! use on `<urn:dataspace-node:key:{id}>`, where the id is the first 16 hex digits of the hash
//! — public, since the key is 256 random bits. A revoked key loses its hash and keeps
//! `dsn:revokedAt`, so the sessions made with it stay refused after a restart. The last use is
//! kept in memory per minute and written by the node's periodic task, never by a request.

use std::sync::atomic::{AtomicI64, Ordering};

use oxigraph::model::{GraphName, Literal, NamedNode, Quad};
use serde_json::{json, Value};

use super::audit::{Actor, Change};
use super::{key_hash, now_literal, Accounts};
use crate::error::{Error, Result};
use crate::secrets::random_token;
use crate::store::{graphs, replace_value};
use crate::vocab::{dsn, xsd};

pub const KEY_PREFIX: &str = "urn:dataspace-node:key:";

/// Names are for people telling keys apart.
const MAX_NAME: usize = 100;

pub struct Key {
    pub id: String,
    pub org: String,
    pub name: String,
    pub created: String,
    /// Milliseconds since the epoch, to the minute; 0: never.
    pub last_used: AtomicI64,
    /// The last use as stored.
    pub saved: AtomicI64,
}

impl Key {
    pub fn public(&self) -> Value {
        let last = self.last_used.load(Ordering::Relaxed);
        json!({
            "id": self.id,
            "name": self.name,
            "created": self.created,
            "lastUsed": (last > 0).then(|| crate::consignment::format_millis(last)),
        })
    }

    /// Notes a use now, to the minute.
    pub fn used(&self) {
        let now = chrono::Utc::now().timestamp_millis();
        let minute = now - now.rem_euclid(60_000);
        if self.last_used.load(Ordering::Relaxed) < minute {
            self.last_used.fetch_max(minute, Ordering::Relaxed);
        }
    }
}

pub fn key_id(hash: &str) -> String {
    hash.get(..16).unwrap_or(hash).to_owned()
}

pub fn key_node(id: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{KEY_PREFIX}{id}"))
}

/// The quads of a new key of `org`.
pub(super) fn key_quads(org: &NamedNode, key: &str, name: &str, created: &Literal) -> Vec<Quad> {
    let hash = key_hash(key);
    let node = key_node(&key_id(&hash));
    let g = GraphName::from(graphs::accounts());
    vec![
        Quad::new(
            org.clone(),
            dsn("apiKeyHash"),
            Literal::new_simple_literal(&hash),
            g.clone(),
        ),
        Quad::new(node.clone(), dsn("keyOf"), org.clone(), g.clone()),
        Quad::new(
            node.clone(),
            dsn("name"),
            Literal::new_simple_literal(name),
            g.clone(),
        ),
        Quad::new(node, dsn("created"), created.clone(), g),
    ]
}

pub fn check_name(name: &str) -> Result<()> {
    let n = name.chars().count();
    if n == 0 || n > MAX_NAME || name.chars().any(char::is_control) {
        return Err(Error::invalid_field(
            "name",
            format!("1 to {MAX_NAME} characters, no control characters"),
        ));
    }
    Ok(())
}

impl Accounts {
    /// The key's organisation and id, noting its use; `None` for no live key.
    pub fn key_of(&self, key: &str) -> Option<(String, String)> {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        let k = keys.get(&key_hash(key))?;
        k.used();
        Some((k.org.clone(), k.id.clone()))
    }

    /// Notes a use of the live key with id `id` (a console session's requests name their key
    /// by id instead of sending it).
    pub fn note_use(&self, id: &str) {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = keys.values().find(|k| k.id == id) {
            k.used();
        }
    }

    /// `org`'s live keys, oldest first.
    pub fn keys_of(&self, org: &str) -> Vec<Value> {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        let mut of: Vec<_> = keys.values().filter(|k| k.org == org).collect();
        of.sort_by(|a, b| (&a.created, &a.id).cmp(&(&b.created, &b.id)));
        of.into_iter().map(Key::public).collect()
    }

    /// A new key for `org` named `name`: its description and the key itself, which is shown
    /// this once. Blocking.
    pub fn create_key(&self, actor: &Actor, org: &str, name: &str) -> Result<(Value, String)> {
        check_name(name)?;
        let key = random_token("dsn_org_");
        let id = key_id(&key_hash(&key));
        let org_node = NamedNode::new_unchecked(org);
        let created = now_literal();
        self.store.commit(|tx, events| {
            for q in key_quads(&org_node, &key, name, &created) {
                tx.insert(&q);
            }
            self.audit.record(
                tx,
                events,
                actor,
                Change {
                    action: "key.created",
                    organization: Some(org),
                    target: &id,
                    details: json!({"name": name}),
                },
            );
            Ok(())
        })?;
        Ok((self.hold_key(&key, org, name, created.value()), key))
    }

    /// A key just stored, in memory: it authenticates from now on. Its description.
    pub(super) fn hold_key(&self, key: &str, org: &str, name: &str, created: &str) -> Value {
        let hash = key_hash(key);
        let entry = Key {
            id: key_id(&hash),
            org: org.to_owned(),
            name: name.to_owned(),
            created: created.to_owned(),
            last_used: AtomicI64::new(0),
            saved: AtomicI64::new(0),
        };
        let public = entry.public();
        self.keys
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(hash, entry);
        public
    }

    /// Revokes `org`'s key `id`: it and the sessions made with it answer 401 from now on.
    /// Blocking.
    pub fn revoke_key(&self, actor: &Actor, org: &str, id: &str) -> Result<()> {
        let not_found = || Error::NotFound(format!("organisation {org} has no key {id}"));
        let (hash, name) = {
            let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
            keys.iter()
                .find(|(_, k)| k.id == id && k.org == org)
                .map(|(h, k)| (h.clone(), k.name.clone()))
                .ok_or_else(not_found)?
        };
        let org_node = NamedNode::new_unchecked(org);
        let node = key_node(id);
        let g = GraphName::from(graphs::accounts());
        self.store.commit(|tx, events| {
            let held = Quad::new(
                org_node.clone(),
                dsn("apiKeyHash"),
                Literal::new_simple_literal(&hash),
                g.clone(),
            );
            if !tx.contains(&held)? {
                return Err(not_found());
            }
            tx.remove(&held);
            tx.insert(&Quad::new(
                node.clone(),
                dsn("keyOf"),
                org_node.clone(),
                g.clone(),
            ));
            tx.insert(&Quad::new(
                node.clone(),
                dsn("revokedAt"),
                now_literal(),
                g.clone(),
            ));
            self.audit.record(
                tx,
                events,
                actor,
                Change {
                    action: "key.revoked",
                    organization: Some(org),
                    target: id,
                    details: json!({"name": name}),
                },
            );
            Ok(())
        })?;
        self.keys
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&hash);
        self.standing_mut().revoked_keys.insert(id.to_owned());
        self.sessions_ended();
        Ok(())
    }

    /// Stores the last uses noted since the previous call, in one write. Blocking.
    pub fn save_last_used(&self) -> Result<()> {
        let due: Vec<(String, i64)> = {
            let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
            keys.values()
                .filter_map(|k| {
                    let last = k.last_used.load(Ordering::Relaxed);
                    (last > k.saved.load(Ordering::Relaxed)).then(|| (k.id.clone(), last))
                })
                .collect()
        };
        if due.is_empty() {
            return Ok(());
        }
        let g = graphs::accounts();
        self.store.write(|tx| {
            for (id, last) in &due {
                let at = Literal::new_typed_literal(
                    crate::consignment::format_millis(*last),
                    xsd("dateTime"),
                );
                replace_value(tx, &key_node(id), &dsn("lastUsed"), at, &g)?;
            }
            Ok(())
        })?;
        let due: std::collections::HashMap<String, i64> = due.into_iter().collect();
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        for k in keys.values() {
            if let Some(last) = due.get(&k.id) {
                k.saved.fetch_max(*last, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}
