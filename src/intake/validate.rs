//! `POST /inbox/validate`: every check of the inbox, with nothing stored — and the look-ups
//! of the caller's consignments that both it and the write's content step make outside the
//! transaction.

use std::collections::HashSet;

use oxigraph::model::NamedNode;
use serde_json::{Map, Value};

use super::activity::{Activity, Kind};
use super::shapes::Failure;
use super::{Intake, Timings};
use crate::auth::Caller;
use crate::consignment::ports;
use crate::error::Result;
use crate::rdf::literal;
use crate::store::Query;

/// The answer of `POST /inbox/validate`.
#[derive(Debug, serde::Serialize)]
pub struct Validation {
    pub valid: bool,
    pub failures: Vec<Failure>,
    pub warnings: Vec<ports::Warning>,
    /// The ConsignmentSummary columns the node would derive (Create and Update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Value>,
}

impl Intake {
    /// `POST /inbox/validate`: every check of [`Intake::process`] — request checks, expansion,
    /// shapes, port derivation, and whether the consignment it names is there for the caller —
    /// with nothing stored. Blocking.
    pub fn validate(&self, caller: &Caller, body: &[u8]) -> Result<Validation> {
        let p = self.prepare(caller, body, &mut Timings::default())?;
        let mut failures = p.failures;
        if failures.is_empty() {
            failures.extend(self.reference_failure(caller, &p.activity)?);
        }
        let summary =
            match p.activity.kind {
                Kind::Create | Kind::Update => Some(Value::Object(
                    crate::consignment::summary::build(p.activity.object(), &p.ports, &self.codes),
                )),
                Kind::Add => None,
            };
        Ok(Validation {
            valid: failures.is_empty(),
            failures,
            warnings: p.warnings,
            summary,
        })
    }

    /// What the transaction would find wrong with the consignment the activity names: a Create
    /// of ids the caller uses already, an Update or Add of one it cannot reach.
    fn reference_failure(&self, caller: &Caller, activity: &Activity) -> Result<Option<Failure>> {
        let object = activity.object();
        let id = |holder: Option<&Map<String, Value>>, key: &str| {
            holder
                .and_then(|h| ports::string_value(h.get(key)))
                .unwrap_or_default()
                .to_owned()
        };
        let owned = |key: &str| self.owns(caller, key);
        let failure = |path: &str, constraint: &str, value: String, message: String| Failure {
            path: path.into(),
            constraint: constraint.into(),
            value: Some(value),
            message,
        };
        Ok(match activity.kind {
            Kind::Create => {
                let mut taken = None;
                for key in ["globalId", "identifier"] {
                    let value = id(Some(object), key);
                    if taken.is_none() && owned(&value)? {
                        taken = Some(failure(
                            &format!("object.{key}"),
                            "ConflictError",
                            value.clone(),
                            format!("your organisation already has a consignment with {value:?}"),
                        ));
                    }
                }
                taken
            }
            Kind::Update => {
                let (global_id, identifier) =
                    (id(Some(object), "globalId"), id(Some(object), "identifier"));
                (!owned(&global_id)? && !owned(&identifier)?).then(|| {
                    failure(
                        "object.globalId",
                        "NotFoundError",
                        global_id.clone(),
                        format!(
                            "your organisation has no consignment with globalId {global_id:?} or \
                             identifier {identifier:?}"
                        ),
                    )
                })
            }
            Kind::Add => {
                let key = id(activity.target(), "globalId");
                let shared = if owned(&key)? {
                    1
                } else {
                    self.shared_matches(caller, &key)?
                };
                match shared {
                    0 => Some(failure(
                        "target.globalId",
                        "NotFoundError",
                        key.clone(),
                        format!(
                            "no consignment with globalId {key:?} is available to your organisation"
                        ),
                    )),
                    1 => None,
                    _ => Some(failure(
                        "target.globalId",
                        "ConflictError",
                        key.clone(),
                        format!(
                            "{key:?} names consignments of more than one publisher shared with \
                             your organisation; name one by its aig id"
                        ),
                    )),
                }
            }
        })
    }

    /// How many consignments shared with the caller `key` names: 0, 1, or 2 for more than
    /// one (the answer stops reading at the second). Blocking.
    pub(super) fn shared_matches(&self, caller: &Caller, key: &str) -> Result<usize> {
        let org = NamedNode::new_unchecked(caller.organization.as_str());
        let bindings = [("org", org.into()), ("key", literal(key))];
        let mut records: HashSet<String> = HashSet::new();
        self.queries.each(
            &self.store,
            Query::ConsignmentSharedByKey,
            &bindings,
            |row| {
                if let Some(record) = row.get("record") {
                    records.insert(record.to_string());
                }
                records.len() < 2
            },
        )?;
        Ok(records.len())
    }

    /// Is a consignment with globalId, identifier or aig id `key` the caller's own? Blocking.
    pub(super) fn owns(&self, caller: &Caller, key: &str) -> Result<bool> {
        let org = NamedNode::new_unchecked(caller.organization.as_str());
        let bindings = [("org", org.into()), ("key", literal(key))];
        let rows = self
            .queries
            .select(&self.store, Query::ConsignmentByKey, &bindings)?;
        Ok(!rows.is_empty())
    }
}
