//! The one ODRL 2.2 form the node routes by, checked field by field.
//!
//! ```json
//! {"@context": "http://www.w3.org/ns/odrl.jsonld", "@type": "Set", "uid": "urn:uuid:…",
//!  "permission": [{"action": "read", "assignee": "did:web:…:org:…",
//!                  "target": "<base>/supply-chain/data-space/consignments",
//!                  "constraint": [{"leftOperand": "portOfEntryCountry",
//!                                  "operator": "eq", "rightOperand": "KE"}]}]}
//! ```
//!
//! A permission's constraints all have to hold (ODRL: a rule applies when all its constraints
//! are satisfied); each permission of a policy stands on its own. Every problem of a body is
//! collected, not just the first, so an operator fixes a policy in one round.
//!
//! - `check`: a body checked against the accepted form, every problem listed; `constraint`:
//!   one constraint's operand, operator and values.
//! - `rdf`: the policy as ODRL RDF, the form the store keeps next to the node's state.

mod check;
mod constraint;
mod rdf;

use oxigraph::model::NamedNode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::vocab::{dsn, DSN, ODRL_CONTEXT};
pub use check::{check, Draft, Problem, Rules};

/// What a constraint's `leftOperand` names: a fact derived from the consignment's ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Operand {
    PortOfEntryCountry,
    PortOfExitCountry,
    PortOfEntry,
    PortOfExit,
}

impl Operand {
    pub const ALL: [Operand; 4] = [
        Operand::PortOfEntryCountry,
        Operand::PortOfExitCountry,
        Operand::PortOfEntry,
        Operand::PortOfExit,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Operand::PortOfEntryCountry => "portOfEntryCountry",
            Operand::PortOfExitCountry => "portOfExitCountry",
            Operand::PortOfEntry => "portOfEntry",
            Operand::PortOfExit => "portOfExit",
        }
    }

    pub fn iri(self) -> NamedNode {
        dsn(self.name())
    }

    /// The short name, `dsn:` compact IRI or full IRI of an operand.
    fn parse(text: &str) -> Option<Self> {
        let local = text
            .strip_prefix(DSN)
            .or_else(|| text.strip_prefix("dsn:"))
            .unwrap_or(text);
        Self::ALL.into_iter().find(|o| o.name() == local)
    }

    pub fn is_country(self) -> bool {
        matches!(
            self,
            Operand::PortOfEntryCountry | Operand::PortOfExitCountry
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Constraint {
    pub operand: Operand,
    /// `isAnyOf` (a list) rather than `eq` (one value).
    pub any_of: bool,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permission {
    /// Organisation DID.
    pub assignee: String,
    pub constraints: Vec<Constraint>,
}

/// A policy as the node keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub uid: String,
    pub permissions: Vec<Permission>,
    /// When it was stored (RFC 3339).
    pub created: String,
}

/// The facts a consignment offers to constraints: its ports' codes and countries.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Facts {
    pub entry_country: Option<String>,
    pub exit_country: Option<String>,
    pub entry: Option<String>,
    pub exit: Option<String>,
}

impl Facts {
    pub fn get(&self, operand: Operand) -> Option<&str> {
        match operand {
            Operand::PortOfEntryCountry => self.entry_country.as_deref(),
            Operand::PortOfExitCountry => self.exit_country.as_deref(),
            Operand::PortOfEntry => self.entry.as_deref(),
            Operand::PortOfExit => self.exit.as_deref(),
        }
    }

    pub fn is_empty(&self) -> bool {
        Operand::ALL.iter().all(|o| self.get(*o).is_none())
    }
}

impl Constraint {
    pub fn holds(&self, facts: &Facts) -> bool {
        facts
            .get(self.operand)
            .is_some_and(|fact| self.values.iter().any(|v| v == fact))
    }
}

impl Permission {
    pub fn matches(&self, facts: &Facts) -> bool {
        !self.constraints.is_empty() && self.constraints.iter().all(|c| c.holds(facts))
    }
}

impl Policy {
    /// The organisations its permissions name, each once.
    pub fn assignees(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .permissions
            .iter()
            .map(|p| p.assignee.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The policy as the node serves it: compact ODRL JSON-LD, operands as `dsn:` IRIs.
    pub fn to_json(&self, target: &str, permissions: &[&Permission]) -> Value {
        let permissions: Vec<Value> = permissions
            .iter()
            .map(|p| {
                let constraints: Vec<Value> = p
                    .constraints
                    .iter()
                    .map(|c| {
                        let right = if c.any_of {
                            json!(c.values)
                        } else {
                            json!(c.values.first())
                        };
                        json!({
                            "leftOperand": format!("dsn:{}", c.operand.name()),
                            "operator": if c.any_of { "isAnyOf" } else { "eq" },
                            "rightOperand": right,
                        })
                    })
                    .collect();
                json!({
                    "action": "read",
                    "assignee": p.assignee,
                    "target": target,
                    "constraint": constraints,
                })
            })
            .collect();
        json!({
            "@context": [ODRL_CONTEXT, {"dsn": DSN}],
            "@type": "Set",
            "uid": self.uid,
            "permission": permissions,
            "dateCreated": self.created,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::model::vocab::rdf;

    #[test]
    fn every_policy_operand_is_a_left_operand() {
        let g: oxigraph::model::Graph =
            oxigraph::io::RdfParser::from_format(oxigraph::io::RdfFormat::Turtle)
                .for_slice(crate::vocab::VOCABULARY_TURTLE)
                .map(|q| oxigraph::model::Triple::from(q.unwrap()))
                .collect();
        let left = oxigraph::model::Term::from(NamedNode::new_unchecked(
            "http://www.w3.org/ns/odrl/2/LeftOperand",
        ));
        for operand in Operand::ALL {
            let iri = operand.iri();
            assert!(
                g.triples_for_subject(&iri)
                    .any(|t| t.predicate == rdf::TYPE && t.object == left.as_ref()),
                "{iri} is not an odrl:LeftOperand in the vocabulary"
            );
        }
    }
}
