//! On what grounds an organisation reads a consignment: the ODRL constraints of the policy
//! permissions that name it, match the consignment's ports and granted it. A Dataspace
//! Protocol offer carries them, so a connector sees why it was offered a dataset.

use oxigraph::model::{GraphName, NamedNode, Quad};
use serde_json::{json, Value};

use super::policy::Facts;
use super::Sharing;
use crate::error::Result;
use crate::store::graphs;
use crate::vocab::dsn;

/// The routing facts of a consignment from its stored summary columns.
pub fn facts_of_summary(summary: &Value) -> Facts {
    let text = |k: &str| summary.get(k).and_then(Value::as_str).map(str::to_owned);
    Facts {
        entry_country: text("portOfEntryCountryId"),
        exit_country: text("portOfExitCountryId"),
        entry: text("portOfEntryCode"),
        exit: text("portOfExitCode"),
    }
}

impl Sharing {
    /// The constraints, as ODRL JSON (`leftOperand` the node's operand name), of every
    /// permission naming `org` that `facts` satisfy in a policy that granted `record` to
    /// `org`, each permission's constraints once. Blocking.
    pub fn grounds(&self, record: &NamedNode, facts: &Facts, org: &str) -> Result<Vec<Vec<Value>>> {
        let set = self.policy_set();
        let org_node = NamedNode::new_unchecked(org);
        let mut out: Vec<Vec<Value>> = Vec::new();
        for (assignee, uid) in set.route(facts) {
            let granted = Quad::new(
                record.clone(),
                dsn("sharedWith"),
                org_node.clone(),
                GraphName::NamedNode(graphs::grants(&uid)),
            );
            if assignee != org || !self.store.db().contains(&granted)? {
                continue;
            }
            let Some(policy) = set.get(&uid) else {
                continue;
            };
            for p in &policy.permissions {
                if p.assignee != org || !p.matches(facts) {
                    continue;
                }
                let constraints: Vec<Value> = p
                    .constraints
                    .iter()
                    .map(|c| {
                        let (operator, right) = if c.any_of {
                            ("isAnyOf", json!(c.values))
                        } else {
                            ("eq", json!(c.values.first()))
                        };
                        json!({
                            "leftOperand": c.operand.name(),
                            "operator": operator,
                            "rightOperand": right,
                        })
                    })
                    .collect();
                if !out.contains(&constraints) {
                    out.push(constraints);
                }
            }
        }
        Ok(out)
    }
}
