//! The policies in memory, indexed by the values their constraints test, so routing a
//! consignment costs the few permissions that name its ports, not a scan of every policy.

use std::collections::{BTreeSet, HashMap};

use super::policy::{Facts, Operand, Permission, Policy};

#[derive(Default)]
pub struct PolicySet {
    by_uid: HashMap<String, Policy>,
    /// (creation time in ms, uid): list order.
    order: BTreeSet<(i64, String)>,
    /// Each permission is filed under every value of its first constraint: a permission can
    /// only match a consignment whose facts include one of them.
    index: HashMap<(Operand, String), Vec<(String, usize)>>,
}

fn millis(at: &str) -> i64 {
    crate::consignment::listing::millis(at).unwrap_or(0)
}

impl PolicySet {
    pub fn len(&self) -> usize {
        self.by_uid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_uid.is_empty()
    }

    /// Every policy, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Policy> {
        self.by_uid.values()
    }

    pub fn get(&self, uid: &str) -> Option<&Policy> {
        self.by_uid.get(uid)
    }

    pub fn insert(&mut self, policy: Policy) {
        self.remove(&policy.uid);
        for (i, p) in policy.permissions.iter().enumerate() {
            if let Some(first) = p.constraints.first() {
                for value in &first.values {
                    self.index
                        .entry((first.operand, value.clone()))
                        .or_default()
                        .push((policy.uid.clone(), i));
                }
            }
        }
        self.order
            .insert((millis(&policy.created), policy.uid.clone()));
        self.by_uid.insert(policy.uid.clone(), policy);
    }

    pub fn remove(&mut self, uid: &str) -> Option<Policy> {
        let policy = self.by_uid.remove(uid)?;
        self.order
            .remove(&(millis(&policy.created), policy.uid.clone()));
        for p in &policy.permissions {
            if let Some(first) = p.constraints.first() {
                for value in &first.values {
                    let key = (first.operand, value.clone());
                    if let Some(refs) = self.index.get_mut(&key) {
                        refs.retain(|(u, _)| u != uid);
                        if refs.is_empty() {
                            self.index.remove(&key);
                        }
                    }
                }
            }
        }
        Some(policy)
    }

    /// Every (assignee, policy uid) whose permission the facts satisfy, sorted, without repeats.
    pub fn route(&self, facts: &Facts) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for operand in Operand::ALL {
            let Some(fact) = facts.get(operand) else {
                continue;
            };
            for (uid, i) in self
                .index
                .get(&(operand, fact.to_owned()))
                .map_or(&[][..], Vec::as_slice)
            {
                let permission = &self.by_uid[uid].permissions[*i];
                if permission.matches(facts) {
                    out.push((permission.assignee.clone(), uid.clone()));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Up to `n` policies newest first, strictly before `before` (creation ms, uid), with the
    /// permissions `visible` lets through; policies left with none are skipped.
    pub fn page<'a>(
        &'a self,
        before: Option<&(i64, String)>,
        n: usize,
        visible: impl Fn(&Permission) -> bool,
    ) -> Vec<(&'a Policy, Vec<&'a Permission>)> {
        let keys: Box<dyn Iterator<Item = &(i64, String)>> = match before {
            Some(b) => Box::new(self.order.range(..b.clone()).rev()),
            None => Box::new(self.order.iter().rev()),
        };
        keys.filter_map(|(_, uid)| {
            let policy = &self.by_uid[uid];
            let permissions: Vec<&Permission> =
                policy.permissions.iter().filter(|p| visible(p)).collect();
            (!permissions.is_empty()).then_some((policy, permissions))
        })
        .take(n)
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::policy::Constraint;
    use super::*;

    fn policy(uid: &str, assignee: &str, constraints: Vec<Constraint>) -> Policy {
        Policy {
            uid: uid.into(),
            permissions: vec![Permission {
                assignee: assignee.into(),
                constraints,
            }],
            created: format!("2026-01-01T00:00:0{}Z", uid.len() % 10),
        }
    }

    fn eq(operand: Operand, v: &str) -> Constraint {
        Constraint {
            operand,
            any_of: false,
            values: vec![v.into()],
        }
    }

    #[test]
    fn routes_through_the_index_and_forgets_removed_policies() {
        let mut set = PolicySet::default();
        set.insert(policy(
            "urn:p:ke",
            "ke",
            vec![eq(Operand::PortOfEntryCountry, "KE")],
        ));
        set.insert(policy(
            "urn:p:kemba",
            "op",
            vec![
                eq(Operand::PortOfEntry, "KEMBA"),
                eq(Operand::PortOfExitCountry, "BR"),
            ],
        ));
        set.insert(policy(
            "urn:p:tz",
            "tz",
            vec![eq(Operand::PortOfEntryCountry, "TZ")],
        ));
        let facts = Facts {
            entry_country: Some("KE".into()),
            exit_country: Some("BR".into()),
            entry: Some("KEMBA".into()),
            exit: Some("BRSSZ".into()),
        };
        assert_eq!(
            set.route(&facts),
            vec![
                ("ke".to_string(), "urn:p:ke".to_string()),
                ("op".to_string(), "urn:p:kemba".to_string())
            ]
        );
        let from_nl = Facts {
            exit_country: Some("NL".into()),
            ..facts.clone()
        };
        assert_eq!(
            set.route(&from_nl).len(),
            1,
            "the operator rule also needs exit BR"
        );
        set.remove("urn:p:ke");
        assert_eq!(set.route(&facts).len(), 1);
        assert!(set.route(&Facts::default()).is_empty());
        assert_eq!(set.len(), 2);
    }
}
