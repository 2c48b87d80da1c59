//! A policy body checked field by field against the one accepted form.

use std::collections::HashSet;

use oxigraph::model::NamedNode;
use serde_json::{json, Map, Value};

use super::constraint::check_constraint;
use super::{Constraint, Permission};
use crate::vocab::{DSN, ODRL, ODRL_CONTEXT, ODRL_CONTEXT_ALIASES};

/// Most permissions one policy may hold.
const MAX_PERMISSIONS: usize = 1000;

/// One problem with a policy body: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub message: String,
}

impl Problem {
    pub(super) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
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

/// What a body is checked against.
pub struct Rules<'a> {
    pub countries: &'a HashSet<String>,
    /// The one `target` IRI: this node's consignments.
    pub target: &'a str,
}

/// `"x"`, or a value object `{"@value": "x"}` / `{"@id": "x"}`.
pub(super) fn string(value: &Value) -> Option<&str> {
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
pub(super) fn odrl_term(text: &str) -> &str {
    text.strip_prefix(ODRL)
        .or_else(|| text.strip_prefix("odrl:"))
        .unwrap_or(text)
}

pub(super) fn unknown_keys(
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
    check_action(p, at, problems);
    let assignee = check_assignee(p, at, assignee_exists, problems);
    check_target(p, at, rules, problems);
    let constraints = check_constraints(p, at, rules, problems);
    (problems.len() == before).then(|| Permission {
        assignee: assignee.unwrap_or_default(),
        constraints,
    })
}

fn check_action(p: &Map<String, Value>, at: &str, problems: &mut Vec<Problem>) {
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
}

fn check_assignee(
    p: &Map<String, Value>,
    at: &str,
    assignee_exists: &dyn Fn(&str) -> bool,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    match p.get("assignee").and_then(string) {
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
    }
}

fn check_target(p: &Map<String, Value>, at: &str, rules: &Rules<'_>, problems: &mut Vec<Problem>) {
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
}

fn check_constraints(
    p: &Map<String, Value>,
    at: &str,
    rules: &Rules<'_>,
    problems: &mut Vec<Problem>,
) -> Vec<Constraint> {
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
    constraints
}

#[cfg(test)]
mod tests {
    use super::super::{Facts, Operand};
    use super::*;

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
