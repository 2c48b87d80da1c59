//! One constraint of a permission: its left operand, its operator and its values.

use serde_json::{Map, Value};

use super::check::{odrl_term, string, unknown_keys, Problem, Rules};
use super::{Constraint, Operand};
use crate::consignment::ports::is_locode;

/// Most values one `isAnyOf` may list.
const MAX_VALUES: usize = 1000;

pub(super) fn check_constraint(
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
    check_type(c, at, problems);
    let operand = left_operand(c, at, problems);
    let any_of = operator(c, at, problems);
    let values = right_operand(c.get("rightOperand"), any_of, at, problems);
    let checked = checked_values(values, operand, rules, problems);
    (problems.len() == before).then(|| Constraint {
        operand: operand.expect("checked"),
        any_of: any_of.expect("checked"),
        values: checked,
    })
}

fn check_type(c: &Map<String, Value>, at: &str, problems: &mut Vec<Problem>) {
    if let Some(t) = c.get("@type").or_else(|| c.get("type")) {
        if string(t).map(odrl_term) != Some("Constraint") {
            problems.push(Problem::new(
                format!("{at}.@type"),
                "must be \"Constraint\" when given (logical constraints are not supported)",
            ));
        }
    }
}

fn left_operand(c: &Map<String, Value>, at: &str, problems: &mut Vec<Problem>) -> Option<Operand> {
    let names = Operand::ALL.map(Operand::name).join(", ");
    match c.get("leftOperand").and_then(string) {
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
    }
}

/// `Some(true)` for `isAnyOf`, `Some(false)` for `eq`.
fn operator(c: &Map<String, Value>, at: &str, problems: &mut Vec<Problem>) -> Option<bool> {
    match c.get("operator").and_then(string).map(odrl_term) {
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
    }
}

/// The values the right operand lists, each with where it is in the body; `None` for a value
/// that is not a string.
fn right_operand<'v>(
    right: Option<&'v Value>,
    any_of: Option<bool>,
    at: &str,
    problems: &mut Vec<Problem>,
) -> Vec<(String, Option<&'v str>)> {
    match (any_of, right) {
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
    }
}

/// The well-formed values, each once, in the order given; a problem for every other one.
fn checked_values(
    values: Vec<(String, Option<&str>)>,
    operand: Option<Operand>,
    rules: &Rules<'_>,
    problems: &mut Vec<Problem>,
) -> Vec<String> {
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
    checked
}
