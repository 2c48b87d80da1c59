//! Reading the accounts graph (and the ended sessions) into memory at start-up: one pass over
//! each graph, grouped by subject.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicI64;

use oxigraph::model::{NamedOrBlankNode, Term};

use super::keys::{Key, KEY_PREFIX};
use super::people::{Person, Role, Standing};
use crate::error::Result;
use crate::store::{graphs, Store};
use crate::vocab::dsn;

/// The live keys by hash, and who may hold a session.
pub struct Loaded {
    pub keys: HashMap<String, Key>,
    pub standing: Standing,
}

/// Every fact of one subject: predicate IRI → objects.
type Facts = HashMap<String, Vec<Term>>;

fn by_subject(store: &Store, graph: &oxigraph::model::NamedNode) -> Result<HashMap<String, Facts>> {
    let mut out: HashMap<String, Facts> = HashMap::new();
    for q in store
        .db()
        .quads_for_pattern(None, None, None, Some(graph.as_ref().into()))
    {
        let q = q?;
        let NamedOrBlankNode::NamedNode(s) = q.subject else {
            continue;
        };
        out.entry(s.into_string())
            .or_default()
            .entry(q.predicate.into_string())
            .or_default()
            .push(q.object);
    }
    Ok(out)
}

fn text(facts: &Facts, p: &str) -> Option<String> {
    facts.get(dsn(p).as_str())?.iter().find_map(|t| match t {
        Term::Literal(l) => Some(l.value().to_owned()),
        _ => None,
    })
}

fn named(facts: &Facts, p: &str) -> Vec<String> {
    facts.get(dsn(p).as_str()).map_or_else(Vec::new, |ts| {
        ts.iter()
            .filter_map(|t| match t {
                Term::NamedNode(n) => Some(n.as_str().to_owned()),
                _ => None,
            })
            .collect()
    })
}

fn is_a(facts: &Facts, class: &str) -> bool {
    facts
        .get(oxigraph::model::vocab::rdf::TYPE.as_str())
        .is_some_and(|ts| {
            ts.iter()
                .any(|t| matches!(t, Term::NamedNode(n) if *n == dsn(class)))
        })
}

/// A user's facts as a [`Person`], and whether a role was stored for it.
fn person_of(s: &str, facts: &Facts, node_did: &str) -> Option<(Person, bool)> {
    if !is_a(facts, "User") {
        return None;
    }
    let role = text(facts, "role").and_then(|r| Role::parse(&r));
    let org = match named(facts, "memberOf").into_iter().next() {
        Some(org) => org,
        None if role == Some(Role::Operator) => node_did.to_owned(),
        None => return None,
    };
    let person = Person {
        identity: s.to_owned(),
        organization: org,
        email: text(facts, "email").unwrap_or_default(),
        profile_name: text(facts, "profileName"),
        role: role.unwrap_or(Role::Member),
        disabled: text(facts, "disabled").as_deref() == Some("true"),
        generation: text(facts, "sessionGeneration")
            .and_then(|g| g.parse().ok())
            .unwrap_or(0),
        created: text(facts, "created").unwrap_or_default(),
    };
    Some((person, role.is_some()))
}

/// Reads the accounts; the operator account's sessions name `node_did`. Blocking.
pub fn load(store: &Store, node_did: &str) -> Result<Loaded> {
    let subjects = by_subject(store, &graphs::accounts())?;
    let mut keys = HashMap::new();
    let mut standing = Standing::default();
    let mut explicit = HashSet::new();
    let mut orgs: HashMap<&str, String> = HashMap::new();
    for (s, facts) in &subjects {
        if is_a(facts, "Organization") {
            orgs.insert(s, text(facts, "created").unwrap_or_default());
        }
    }
    for (s, facts) in &subjects {
        if let Some(org_created) = orgs.get(s.as_str()) {
            for hash in facts.get(dsn("apiKeyHash").as_str()).into_iter().flatten() {
                let Term::Literal(hash) = hash else { continue };
                let hash = hash.value().to_owned();
                let id = super::keys::key_id(&hash);
                let meta = subjects.get(&format!("{KEY_PREFIX}{id}"));
                let meta_text = |p| meta.and_then(|m| text(m, p));
                let last_used = meta_text("lastUsed")
                    .and_then(|t| crate::consignment::listing::millis(&t))
                    .unwrap_or(0);
                keys.insert(
                    hash,
                    Key {
                        id,
                        org: s.clone(),
                        name: meta_text("name").unwrap_or_else(|| "default".into()),
                        created: meta_text("created").unwrap_or_else(|| org_created.clone()),
                        last_used: AtomicI64::new(last_used),
                        saved: AtomicI64::new(last_used),
                    },
                );
            }
        } else if let Some(id) = s.strip_prefix(KEY_PREFIX) {
            if text(facts, "revokedAt").is_some() {
                standing.revoked_keys.insert(id.to_owned());
            }
        } else if let Some((person, has_role)) = person_of(s, facts, node_did) {
            if has_role {
                explicit.insert(s.clone());
            }
            standing.people.insert(s.clone(), person);
        }
    }
    standing.settle_roles(&explicit);
    let now = chrono::Utc::now().timestamp();
    for (s, facts) in by_subject(store, &graphs::ended_sessions())? {
        let (Some(jti), Some(until)) = (
            s.strip_prefix(super::SESSION_PREFIX),
            text(&facts, "endsAt").and_then(|t| t.parse::<i64>().ok()),
        ) else {
            continue;
        };
        if until >= now {
            standing.ended.insert(jti.to_owned(), until);
        }
    }
    Ok(Loaded { keys, standing })
}
