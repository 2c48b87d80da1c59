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

use std::collections::HashSet;

use oxigraph::model::vocab::rdf;
use oxigraph::model::{BlankNode, GraphName, Literal, NamedNode, Quad};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::consignment::ports::is_locode;
use crate::vocab::{dsn, DSN, ODRL, ODRL_CONTEXT, ODRL_CONTEXT_ALIASES};

/// Most values one `isAnyOf` may list.
const MAX_VALUES: usize = 1000;
/// Most permissions one policy may hold.
const MAX_PERMISSIONS: usize = 1000;

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

/// One problem with a policy body: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub message: String,
}

impl Problem {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"field": self.field, "message": self.message})
    }
}

/// A checked body: `uid` is absent when the node is to mint one.
#[derive(Debug)]
pub struct Draft {
    pub uid: Option<String>,
    pub permissions: Vec<Permission>,
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

/// What a body is checked against.
pub struct Rules<'a> {
    pub countries: &'a HashSet<String>,
    /// The one `target` IRI: this node's consignments.
    pub target: &'a str,
}

/// `"x"`, or a value object `{"@value": "x"}` / `{"@id": "x"}`.
fn string(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) => Some(s),
        Value::Object(o) if o.len() == 1 => o
            .get("@value")
            .or_else(|| o.get("@id"))
            .or_else(|| o.get("uid"))
            .and_then(Value::as_str),
        _ => None,
    }
}

/// A single object or an array of them, as JSON-LD allows.
fn many(value: &Value) -> Vec<&Value> {
    match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    }
}

/// `name`, `odrl:name` or the full ODRL IRI.
fn odrl_term(text: &str) -> &str {
    text.strip_prefix(ODRL)
        .or_else(|| text.strip_prefix("odrl:"))
        .unwrap_or(text)
}

fn unknown_keys(
    object: &Map<String, Value>,
    allowed: &[&str],
    at: &str,
    problems: &mut Vec<Problem>,
) {
    for key in object.keys() {
        if !allowed.contains(&key.as_str()) {
            problems.push(Problem::new(
                format!("{at}{key}"),
                format!(
                    "is not supported here; allowed: {}",
                    allowed
                        .iter()
                        .filter(|k| !k.starts_with('@') || **k == "@type")
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
}

fn check_context(context: Option<&Value>, problems: &mut Vec<Problem>) {
    let is_odrl = |s: &str| s == ODRL_CONTEXT || ODRL_CONTEXT_ALIASES.contains(&s);
    let supported = format!("\"{ODRL_CONTEXT}\", optionally with {{\"dsn\": \"{DSN}\"}}");
    match context {
        None => problems.push(Problem::new("@context", format!("is required: {supported}"))),
        Some(Value::String(s)) if is_odrl(s) => {}
        Some(Value::Array(items)) => {
            let mut odrl = 0;
            for item in items {
                match item {
                    Value::String(s) if is_odrl(s) => odrl += 1,
                    Value::Object(o) if o.len() == 1 && o.get("dsn") == Some(&json!(DSN)) => {}
                    Value::String(s) => problems.push(Problem::new(
                        "@context",
                        format!("{s:?} is not a context this node has; it never fetches contexts. Supported: {supported}"),
                    )),
                    _ => problems.push(Problem::new(
                        "@context",
                        format!("only {supported} is supported"),
                    )),
                }
            }
            if odrl != 1 {
                problems.push(Problem::new(
                    "@context",
                    format!("must include the ODRL context {ODRL_CONTEXT} once"),
                ));
            }
        }
        Some(Value::String(s)) => problems.push(Problem::new(
            "@context",
            format!("{s:?} is not a context this node has; it never fetches contexts. Supported: {supported}"),
        )),
        Some(_) => problems.push(Problem::new("@context", format!("only {supported} is supported"))),
    }
}

/// Checks a policy body. `assignee_exists` says whether a DID is an organisation of this node.
pub fn check(
    body: &Value,
    rules: &Rules<'_>,
    assignee_exists: &dyn Fn(&str) -> bool,
) -> Result<Draft, Vec<Problem>> {
    let mut problems = Vec::new();
    let Some(policy) = body.as_object() else {
        return Err(vec![Problem::new("", "the policy must be a JSON object")]);
    };
    unknown_keys(
        policy,
        &["@context", "@type", "type", "uid", "@id", "permission"],
        "",
        &mut problems,
    );
    check_context(policy.get("@context"), &mut problems);
    match policy.get("@type").or_else(|| policy.get("type")) {
        Some(t) if string(t).map(odrl_term) == Some("Set") => {}
        Some(t) => problems.push(Problem::new("@type", format!("must be \"Set\", found {t}"))),
        None => problems.push(Problem::new("@type", "is required and must be \"Set\"")),
    }
    let uid = match policy.get("uid").or_else(|| policy.get("@id")) {
        None => None,
        Some(v) => match string(v) {
            Some(s) if NamedNode::new(s).is_ok() && s.contains(':') => Some(s.to_owned()),
            _ => {
                problems.push(Problem::new("uid", "must be an absolute IRI"));
                None
            }
        },
    };
    let mut permissions = Vec::new();
    match policy.get("permission") {
        None => problems.push(Problem::new(
            "permission",
            "at least one permission is required",
        )),
        Some(value) => {
            let items = many(value);
            if items.is_empty() {
                problems.push(Problem::new(
                    "permission",
                    "at least one permission is required",
                ));
            }
            if items.len() > MAX_PERMISSIONS {
                problems.push(Problem::new(
                    "permission",
                    format!("at most {MAX_PERMISSIONS} permissions"),
                ));
            }
            for (i, item) in items.iter().enumerate() {
                let at = format!("permission[{i}]");
                if let Some(p) = check_permission(item, &at, rules, assignee_exists, &mut problems)
                {
                    permissions.push(p);
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(Draft { uid, permissions })
    } else {
        Err(problems)
    }
}

fn check_permission(
    value: &Value,
    at: &str,
    rules: &Rules<'_>,
    assignee_exists: &dyn Fn(&str) -> bool,
    problems: &mut Vec<Problem>,
) -> Option<Permission> {
    let Some(p) = value.as_object() else {
        problems.push(Problem::new(at, "must be an object"));
        return None;
    };
    let before = problems.len();
    unknown_keys(
        p,
        &["action", "assignee", "target", "constraint"],
        &format!("{at}."),
        problems,
    );
    match p.get("action").and_then(string).map(odrl_term) {
        Some("read") => {}
        Some(other) => problems.push(Problem::new(
            format!("{at}.action"),
            format!("only \"read\" is supported, found {other:?}"),
        )),
        None => problems.push(Problem::new(
            format!("{at}.action"),
            "is required: \"read\"",
        )),
    }
    let assignee = match p.get("assignee").and_then(string) {
        Some(did) if assignee_exists(did) => Some(did.to_owned()),
        Some(did) => {
            problems.push(Problem::new(
                format!("{at}.assignee"),
                format!("{did:?} is neither an organisation on this node nor an organisation of a partner node (did:web:<host>:org:<id>, host in --federation-partners)"),
            ));
            None
        }
        None => {
            problems.push(Problem::new(
                format!("{at}.assignee"),
                "is required: the DID of an organisation on this node",
            ));
            None
        }
    };
    match p.get("target").and_then(string) {
        Some(t) if t == rules.target => {}
        Some(t) => problems.push(Problem::new(
            format!("{at}.target"),
            format!(
                "must be {:?} (this node's consignments), found {t:?}",
                rules.target
            ),
        )),
        None => problems.push(Problem::new(
            format!("{at}.target"),
            format!("is required: {:?}", rules.target),
        )),
    }
    let mut constraints = Vec::new();
    match p.get("constraint").map(many) {
        None => problems.push(Problem::new(
            format!("{at}.constraint"),
            "at least one constraint is required: a permission without one would share every consignment",
        )),
        Some(items) if items.is_empty() => problems.push(Problem::new(
            format!("{at}.constraint"),
            "at least one constraint is required",
        )),
        Some(items) => {
            for (j, item) in items.into_iter().enumerate() {
                let at = format!("{at}.constraint[{j}]");
                if let Some(c) = check_constraint(item, &at, rules, problems) {
                    constraints.push(c);
                }
            }
        }
    }
    (problems.len() == before).then(|| Permission {
        assignee: assignee.unwrap_or_default(),
        constraints,
    })
}

fn check_constraint(
    value: &Value,
    at: &str,
    rules: &Rules<'_>,
    problems: &mut Vec<Problem>,
) -> Option<Constraint> {
    let Some(c) = value.as_object() else {
        problems.push(Problem::new(at, "must be an object"));
        return None;
    };
    let before = problems.len();
    unknown_keys(
        c,
        &["leftOperand", "operator", "rightOperand", "@type", "type"],
        &format!("{at}."),
        problems,
    );
    if let Some(t) = c.get("@type").or_else(|| c.get("type")) {
        if string(t).map(odrl_term) != Some("Constraint") {
            problems.push(Problem::new(
                format!("{at}.@type"),
                "must be \"Constraint\" when given (logical constraints are not supported)",
            ));
        }
    }
    let names = Operand::ALL.map(Operand::name).join(", ");
    let operand = match c.get("leftOperand").and_then(string) {
        Some(text) => match Operand::parse(text) {
            Some(o) => Some(o),
            None => {
                problems.push(Problem::new(
                    format!("{at}.leftOperand"),
                    format!("{text:?} is not one of {names}"),
                ));
                None
            }
        },
        None => {
            problems.push(Problem::new(
                format!("{at}.leftOperand"),
                format!("is required: one of {names}"),
            ));
            None
        }
    };
    let any_of = match c.get("operator").and_then(string).map(odrl_term) {
        Some("eq") => Some(false),
        Some("isAnyOf") => Some(true),
        Some(other) => {
            problems.push(Problem::new(
                format!("{at}.operator"),
                format!("{other:?} is not supported: use eq or isAnyOf"),
            ));
            None
        }
        None => {
            problems.push(Problem::new(
                format!("{at}.operator"),
                "is required: eq or isAnyOf",
            ));
            None
        }
    };
    let right = c.get("rightOperand");
    let values: Vec<(String, Option<&str>)> = match (any_of, right) {
        (_, None) => {
            problems.push(Problem::new(format!("{at}.rightOperand"), "is required"));
            Vec::new()
        }
        (Some(false), Some(v)) => match string(v) {
            Some(s) => vec![(format!("{at}.rightOperand"), Some(s))],
            None => {
                problems.push(Problem::new(
                    format!("{at}.rightOperand"),
                    "eq takes one string value",
                ));
                Vec::new()
            }
        },
        (Some(true), Some(Value::Array(items))) if !items.is_empty() => {
            if items.len() > MAX_VALUES {
                problems.push(Problem::new(
                    format!("{at}.rightOperand"),
                    format!("isAnyOf takes at most {MAX_VALUES} values"),
                ));
            }
            items
                .iter()
                .enumerate()
                .map(|(k, v)| (format!("{at}.rightOperand[{k}]"), string(v)))
                .collect()
        }
        (Some(true), Some(_)) => {
            problems.push(Problem::new(
                format!("{at}.rightOperand"),
                "isAnyOf takes a non-empty list of strings",
            ));
            Vec::new()
        }
        (None, Some(_)) => Vec::new(),
    };
    let mut checked = Vec::new();
    for (field, value) in values {
        let Some(value) = value else {
            problems.push(Problem::new(field, "must be a string"));
            continue;
        };
        let ok = match operand {
            Some(o) if o.is_country() => value.len() == 2 && rules.countries.contains(value),
            Some(_) => is_locode(value, rules.countries),
            None => true,
        };
        if !ok {
            let expected = if operand.is_some_and(Operand::is_country) {
                "an ISO 3166-1 alpha-2 country code in capitals, e.g. \"KE\""
            } else {
                "a UN/LOCODE: two country letters and three letters or digits 2-9, in capitals, e.g. \"KEMBA\""
            };
            problems.push(Problem::new(field, format!("{value:?} is not {expected}")));
        } else if !checked.contains(&value.to_owned()) {
            checked.push(value.to_owned());
        }
    }
    (problems.len() == before).then(|| Constraint {
        operand: operand.expect("checked"),
        any_of: any_of.expect("checked"),
        values: checked,
    })
}

impl Policy {
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

    /// The policy as ODRL RDF in `graph`, plus the node's bookkeeping (`dsn:created`).
    pub fn quads(&self, target: &str, graph: &NamedNode) -> Vec<Quad> {
        let g = GraphName::NamedNode(graph.clone());
        let odrl = |local: &str| NamedNode::new_unchecked(format!("{ODRL}{local}"));
        let policy = NamedNode::new_unchecked(&self.uid);
        let mut quads = vec![
            Quad::new(policy.clone(), rdf::TYPE, odrl("Set"), g.clone()),
            Quad::new(
                policy.clone(),
                odrl("uid"),
                NamedNode::new_unchecked(&self.uid),
                g.clone(),
            ),
            Quad::new(
                policy.clone(),
                dsn("created"),
                Literal::new_typed_literal(&self.created, crate::vocab::xsd("dateTime")),
                g.clone(),
            ),
        ];
        for p in &self.permissions {
            let perm = BlankNode::default();
            quads.push(Quad::new(
                policy.clone(),
                odrl("permission"),
                perm.clone(),
                g.clone(),
            ));
            quads.push(Quad::new(
                perm.clone(),
                odrl("action"),
                odrl("read"),
                g.clone(),
            ));
            quads.push(Quad::new(
                perm.clone(),
                odrl("assignee"),
                NamedNode::new_unchecked(&p.assignee),
                g.clone(),
            ));
            quads.push(Quad::new(
                perm.clone(),
                odrl("target"),
                NamedNode::new_unchecked(target),
                g.clone(),
            ));
            for c in &p.constraints {
                let node = BlankNode::default();
                quads.push(Quad::new(
                    perm.clone(),
                    odrl("constraint"),
                    node.clone(),
                    g.clone(),
                ));
                quads.push(Quad::new(
                    node.clone(),
                    odrl("leftOperand"),
                    c.operand.iri(),
                    g.clone(),
                ));
                quads.push(Quad::new(
                    node.clone(),
                    odrl("operator"),
                    odrl(if c.any_of { "isAnyOf" } else { "eq" }),
                    g.clone(),
                ));
                if c.any_of {
                    // An ODRL list operand: one rdf:List of the values.
                    let mut rest: oxigraph::model::Term = rdf::NIL.into_owned().into();
                    for v in c.values.iter().rev() {
                        let cell = BlankNode::default();
                        quads.push(Quad::new(
                            cell.clone(),
                            rdf::FIRST,
                            Literal::new_simple_literal(v),
                            g.clone(),
                        ));
                        quads.push(Quad::new(cell.clone(), rdf::REST, rest, g.clone()));
                        rest = cell.into();
                    }
                    quads.push(Quad::new(node, odrl("rightOperand"), rest, g.clone()));
                } else {
                    quads.push(Quad::new(
                        node,
                        odrl("rightOperand"),
                        Literal::new_simple_literal(&c.values[0]),
                        g.clone(),
                    ));
                }
            }
        }
        quads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    const TARGET: &str = "http://node.test/supply-chain/data-space/consignments";
    const AGENCY: &str = "did:web:node.test:org:ke";

    fn countries() -> HashSet<String> {
        ["KE", "TZ", "BR", "NL"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn run(body: Value) -> Result<Draft, Vec<Problem>> {
        let countries = countries();
        let rules = Rules {
            countries: &countries,
            target: TARGET,
        };
        check(&body, &rules, &|did| did == AGENCY)
    }

    fn policy(constraint: Value) -> Value {
        json!({
            "@context": ODRL_CONTEXT, "@type": "Set",
            "permission": [{"action": "read", "assignee": AGENCY, "target": TARGET,
                            "constraint": constraint}]
        })
    }

    #[test]
    fn accepts_the_agency_and_operator_forms() {
        let d = run(policy(
            json!([{"leftOperand": "portOfEntryCountry", "operator": "eq", "rightOperand": "KE"}]),
        ))
        .unwrap();
        assert_eq!(
            d.permissions[0].constraints[0].operand,
            Operand::PortOfEntryCountry
        );
        assert!(d.uid.is_none());
        let d = run(policy(json!({"leftOperand": "dsn:portOfEntry", "operator": "odrl:isAnyOf", "rightOperand": ["KEMBA", "TZDAR", "KEMBA"]}))).unwrap();
        assert_eq!(
            d.permissions[0].constraints[0].values,
            vec!["KEMBA", "TZDAR"]
        );
    }

    #[test]
    fn lists_every_problem() {
        let body = json!({
            "@context": "https://example.org/other.jsonld", "@type": "Offer",
            "uid": "not an iri", "prohibition": [],
            "permission": [{"action": "modify", "assignee": "did:web:elsewhere",
                            "target": "http://x", "duty": [],
                            "constraint": [{"leftOperand": "spatial", "operator": "neq", "rightOperand": "KE"},
                                           {"leftOperand": "portOfEntry", "operator": "eq", "rightOperand": "kemba"},
                                           {"leftOperand": "portOfEntryCountry", "operator": "isAnyOf", "rightOperand": "KE"}]}]
        });
        let problems = run(body).unwrap_err();
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        for expected in [
            "@context",
            "@type",
            "uid",
            "prohibition",
            "permission[0].action",
            "permission[0].assignee",
            "permission[0].target",
            "permission[0].duty",
            "permission[0].constraint[0].leftOperand",
            "permission[0].constraint[0].operator",
            "permission[0].constraint[1].rightOperand",
            "permission[0].constraint[2].rightOperand",
        ] {
            assert!(
                fields.contains(&expected),
                "{expected} missing from {fields:?}"
            );
        }
    }

    #[test]
    fn a_permission_needs_a_constraint_and_values_must_be_well_formed() {
        assert!(run(policy(json!([]))).is_err());
        for bad in ["XX", "ke", "KEN"] {
            assert!(run(policy(json!([{"leftOperand": "portOfEntryCountry", "operator": "eq", "rightOperand": bad}]))).is_err(), "{bad}");
        }
        for bad in ["KEMB", "XXMBA", "KEMB1"] {
            assert!(
                run(policy(
                    json!([{"leftOperand": "portOfExit", "operator": "eq", "rightOperand": bad}])
                ))
                .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn all_constraints_of_a_permission_must_hold() {
        let d = run(policy(json!([
            {"leftOperand": "portOfEntryCountry", "operator": "eq", "rightOperand": "KE"},
            {"leftOperand": "portOfExit", "operator": "isAnyOf", "rightOperand": ["BRSSZ", "NLRTM"]}
        ])))
        .unwrap();
        let p = &d.permissions[0];
        let facts = |entry: &str, exit: &str| Facts {
            entry_country: Some(entry[..2].into()),
            exit_country: Some(exit[..2].into()),
            entry: Some(entry.into()),
            exit: Some(exit.into()),
        };
        assert!(p.matches(&facts("KEMBA", "BRSSZ")));
        assert!(!p.matches(&facts("KEMBA", "TZDAR")));
        assert!(!p.matches(&facts("TZDAR", "BRSSZ")));
        assert!(!p.matches(&Facts::default()));
    }
}
