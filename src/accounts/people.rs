//! Users as requests see them: their organisation, role and standing, and the sessions that
//! ended early — kept in memory, so checking a session reads no disk.
//!
//! A session (a JWT, `auth::session`) carries its id, the user's session generation when it
//! was issued and the API key it was made with. It is refused once its id was ended (a
//! logout), its user's generation moved past it (disabled, password changed) or its key was
//! revoked. Each of these is written to the store in the change's own transaction and the
//! memory follows after the commit, so they survive a restart.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{json, Value};

/// What a user may do in its organisation. The operator account is the node's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Operator,
    Admin,
    Member,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Operator => "operator",
            Role::Admin => "admin",
            Role::Member => "member",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "operator" => Some(Role::Operator),
            "admin" => Some(Role::Admin),
            "member" => Some(Role::Member),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Person {
    pub identity: String,
    pub organization: String,
    pub email: String,
    pub profile_name: Option<String>,
    pub role: Role,
    pub disabled: bool,
    /// Raised whenever the user's sessions must end (disabled, password changed): a session
    /// issued under a smaller number is refused.
    pub generation: u64,
    pub created: String,
}

impl Person {
    /// What `GET /organizations/{id}/users` shows of a user.
    pub fn public(&self) -> Value {
        json!({
            "id": self.identity,
            "email": self.email,
            "profileName": self.profile_name,
            "role": self.role,
            "disabled": self.disabled,
            "created": self.created,
        })
    }
}

/// Everything a session check reads, behind one lock.
#[derive(Default)]
pub struct Standing {
    pub people: HashMap<String, Person>,
    /// Ended session ids, each with its expiry (s): kept until then.
    pub ended: HashMap<String, i64>,
    /// Ids of revoked API keys: the sessions made with them are over too.
    pub revoked_keys: HashSet<String>,
}

/// Why a session is refused.
pub const SESSION_ENDED: &str = "session ended";

impl Standing {
    /// Whether the session `jti` of `user`, made with key `key_id` under `generation`, is
    /// still good.
    pub fn admits(
        &self,
        user: &str,
        jti: &str,
        key_id: &str,
        generation: u64,
    ) -> std::result::Result<&Person, &'static str> {
        if self.ended.contains_key(jti) {
            return Err(SESSION_ENDED);
        }
        if !key_id.is_empty() && self.revoked_keys.contains(key_id) {
            return Err("session ended: its API key was revoked");
        }
        match self.people.get(user) {
            Some(p) if p.disabled => Err("the account is disabled"),
            Some(p) if generation < p.generation => Err(SESSION_ENDED),
            Some(p) => Ok(p),
            None => Err(SESSION_ENDED),
        }
    }

    /// The enabled admins of `org`.
    pub fn admins_of(&self, org: &str) -> usize {
        self.people
            .values()
            .filter(|p| p.organization == org && p.role == Role::Admin && !p.disabled)
            .count()
    }

    /// The users of `org`, oldest first.
    pub fn users_of(&self, org: &str) -> Vec<&Person> {
        let mut users: Vec<&Person> = self
            .people
            .values()
            .filter(|p| p.organization == org)
            .collect();
        users.sort_by(|a, b| (&a.created, &a.identity).cmp(&(&b.created, &b.identity)));
        users
    }

    /// Users stored before roles existed get one: the first of each organisation is its
    /// admin, the others members.
    pub fn settle_roles(&mut self, explicit: &HashSet<String>) {
        let mut first: HashMap<&str, (&str, &str)> = HashMap::new();
        for p in self.people.values() {
            if p.role == Role::Operator {
                continue;
            }
            let candidate = (p.created.as_str(), p.identity.as_str());
            first
                .entry(p.organization.as_str())
                .and_modify(|f| *f = (*f).min(candidate))
                .or_insert(candidate);
        }
        let admins: HashSet<String> = first.values().map(|(_, id)| (*id).to_owned()).collect();
        for p in self.people.values_mut() {
            if !explicit.contains(&p.identity) && p.role != Role::Operator {
                p.role = if admins.contains(&p.identity) {
                    Role::Admin
                } else {
                    Role::Member
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(id: &str, org: &str, created: &str) -> Person {
        Person {
            identity: id.into(),
            organization: org.into(),
            email: format!("{id}@example.com"),
            profile_name: None,
            role: Role::Member,
            disabled: false,
            generation: 0,
            created: created.into(),
        }
    }

    #[test]
    fn the_first_user_of_each_organisation_is_its_admin_unless_a_role_was_stored() {
        let mut s = Standing::default();
        for p in [
            person("a1", "a", "2026-01-02"),
            person("a2", "a", "2026-01-01"),
            person("b1", "b", "2026-01-01"),
            person("b2", "b", "2026-01-03"),
        ] {
            s.people.insert(p.identity.clone(), p);
        }
        s.settle_roles(&HashSet::from(["b1".to_owned()]));
        let role = |id: &str| s.people[id].role;
        assert_eq!(role("a2"), Role::Admin);
        assert_eq!(role("a1"), Role::Member);
        // b1's stored role (member) stands; it still counts as b's first user.
        assert_eq!(role("b1"), Role::Member);
        assert_eq!(role("b2"), Role::Member);
        assert_eq!(s.admins_of("a"), 1);
    }

    #[test]
    fn ended_disabled_outdated_and_revoked_key_sessions_are_refused() {
        let mut s = Standing::default();
        let mut p = person("u", "o", "2026-01-01");
        p.generation = 2;
        s.people.insert("u".into(), p);
        assert!(s.admits("u", "j1", "k1", 2).is_ok());
        assert!(s.admits("u", "j1", "k1", 1).is_err());
        assert!(s.admits("nobody", "j1", "k1", 2).is_err());
        s.ended.insert("j1".into(), i64::MAX);
        assert!(s.admits("u", "j1", "k1", 2).is_err());
        assert!(s.admits("u", "j2", "k1", 2).is_ok());
        s.revoked_keys.insert("k1".into());
        assert!(s.admits("u", "j2", "k1", 2).is_err());
        assert!(s.admits("u", "j2", "k2", 2).is_ok());
        s.people.get_mut("u").unwrap().disabled = true;
        assert!(s.admits("u", "j2", "k2", 2).is_err());
    }
}
