//! The checks of an expanded activity: its keys, its type's shape (which reaches the actor,
//! the object and the target), the D23B vocabulary under the object, and the node's reserved
//! IRIs.

use std::collections::HashSet;

use oxigraph::model::{NamedNode, NamedOrBlankNode, Term, Triple};
use serde_json::{Map, Value};

use super::activity::{self, Activity, Kind};
use super::prepare::Roots;
use super::shapes::{Failure, Index};
use super::Intake;
use crate::jsonld::Expansion;
use crate::store::graphs;

const AS: &str = "https://www.w3.org/ns/activitystreams#";

impl Intake {
    pub(super) fn check(
        &self,
        activity: &Activity,
        expansion: &Expansion,
        roots: &Roots,
        minted: &[&NamedOrBlankNode],
    ) -> Vec<Failure> {
        let index = Index::new(expansion);
        let mut failures = Vec::new();
        // The record is looked up by these: a JSON number passes the shapes (the context
        // coerces it to an xsd:string literal) but would key the record by nothing.
        let keys: &[(&str, Option<&Map<String, Value>>)] = match activity.kind {
            Kind::Create | Kind::Update => &[
                ("object.globalId", Some(activity.object())),
                ("object.identifier", Some(activity.object())),
            ],
            Kind::Add => &[("target.globalId", activity.target())],
        };
        for (path, holder) in keys {
            let name = path.rsplit('.').next().unwrap_or(path);
            if let Some(value) = holder.and_then(|h| h.get(name)) {
                // A new consignment's ids may not take the form of the node's: that text
                // names the record the node minted it for, and nothing else (`graphs::is_aig_id`),
                // so a consignment under it could never be found by it, nor kept unique by it.
                // (An Update may keep such an id an earlier version stored: `apply::update`.)
                let text = crate::consignment::ports::string_value(Some(value));
                if activity.kind == Kind::Create && text.is_some_and(graphs::is_aig_id) {
                    failures.push(not_an_aig_id(path, value.to_string()));
                }
                if !activity::is_string_or_value_object(value) {
                    failures.push(Failure {
                        path: (*path).into(),
                        constraint: "string or value object".into(),
                        value: Some(value.to_string()),
                        message: format!(
                            "{path} must be a JSON string or a JSON-LD value object with a string \
                             @value"
                        ),
                    });
                }
            }
        }
        if activity.kind == Kind::Add {
            document_keys(activity, expansion, roots, &mut failures);
        }
        // The activity is validated by its type's shape (activity.ttl), which reaches the
        // actor, the object and the target through their properties.
        let class = NamedNode::new_unchecked(format!("{AS}{}", activity.kind.as_str()));
        match self.shapes.shape_for_class(class.as_ref()) {
            Some(shape) => self
                .shapes
                .validate(&index, shape, &roots.activity, "", &mut failures),
            None => failures.push(Failure {
                path: "type".into(),
                constraint: "sh:targetClass".into(),
                value: Some(activity.kind.as_str().into()),
                message: format!("no shape for {} activities", activity.kind.as_str()),
            }),
        }
        // Every D23B property under the object is a known one of the kind the context gives.
        let objects = objects_of(expansion, &roots.activity);
        let object_root = roots
            .object
            .clone()
            .filter(|o| objects.iter().any(|t| **t == Term::from(o.clone())));
        if let Some(root) = &object_root {
            let dropped: Vec<String> = expansion
                .dropped
                .iter()
                .filter(|p| p.starts_with("object."))
                .cloned()
                .collect();
            self.shapes
                .check_vocabulary(&index, root, "object", &dropped, &mut failures);
            if expansion.dropped_more > 0 {
                failures.push(Failure {
                    path: "object".into(),
                    constraint: "known property".into(),
                    value: None,
                    message: format!(
                        "{} more keys are not terms of the D23B or Activity Streams contexts",
                        expansion.dropped_more
                    ),
                });
            }
        }
        reserved_iris(expansion, minted, &mut failures);
        failures
    }
}

/// A document's `uRIId` and `identifier` are read as sent (its content is taken before the
/// write, its documentId keys its revisions), so the shape's verdict on the expanded value is
/// not enough: a value under another spelling of the key (`unece:uRIId`), in an array or as a
/// number would pass it and be read as no content, or no identifier.
fn document_keys(
    activity: &Activity,
    expansion: &Expansion,
    roots: &Roots,
    out: &mut Vec<Failure>,
) {
    let object = activity.object();
    if object.get("type").and_then(Value::as_str) != Some("Document") {
        return;
    }
    for name in ["uRIId", "identifier"] {
        let predicate = crate::vocab::unece(name);
        let expanded = roots.object.as_ref().is_some_and(|root| {
            expansion
                .triples
                .iter()
                .any(|t| t.subject == *root && t.predicate == predicate)
        });
        let sent = object.get(name);
        let readable = sent.is_some_and(activity::is_string_or_value_object);
        let text = crate::consignment::ports::string_value(sent);
        if name == "identifier" && text.is_some_and(|t| t.starts_with(graphs::MINTED_PREFIX)) {
            // A document sent without an identifier is read by its node's IRI: no other
            // document may take that id.
            out.push(Failure {
                path: "object.identifier".into(),
                constraint: "not a node id".into(),
                value: sent.map(Value::to_string),
                message: format!(
                    "object.identifier may not start with {}: the node names its own \
                     resources so",
                    graphs::MINTED_PREFIX
                ),
            });
        }
        if (sent.is_some() || expanded) && !readable {
            out.push(Failure {
                path: format!("object.{name}"),
                constraint: "string or value object".into(),
                value: sent.map(Value::to_string),
                message: format!(
                    "object.{name} must be sent under the key {name:?}, as a JSON string or a \
                     JSON-LD value object with a string @value"
                ),
            });
        }
    }
}

/// The failure of a consignment id of the aig form.
pub(super) fn not_an_aig_id(path: &str, value: String) -> Failure {
    Failure {
        path: path.into(),
        constraint: "not an aig id".into(),
        value: Some(value),
        message: format!(
            "{path} has the form of the node's ids (aig: and 32 lowercase hexadecimal digits), \
             which name only the consignments the node minted them for"
        ),
    }
}

/// The node's own namespaces are its bookkeeping: the reads trust `dsn:contributor`,
/// `dsn:consignment` and the minted `urn:dataspace-node:` nodes to be written by the node only.
/// A caller who could send them could make its data pose as another organisation's, so any
/// IRI in them, other than the roots the node minted for this activity, fails the activity.
fn reserved_iris(expansion: &Expansion, minted: &[&NamedOrBlankNode], out: &mut Vec<Failure>) {
    let allowed = |iri: &oxigraph::model::NamedNode| {
        let node = NamedOrBlankNode::from(iri.clone());
        let reserved = iri.as_str().starts_with(graphs::MINTED_PREFIX)
            || iri.as_str().starts_with("https://w3id.org/dataspace-node/");
        !reserved || minted.contains(&&node)
    };
    let mut seen = HashSet::new();
    for t in &expansion.triples {
        let subject = match &t.subject {
            NamedOrBlankNode::NamedNode(s) => Some(s),
            NamedOrBlankNode::BlankNode(_) => None,
        };
        let object = match &t.object {
            Term::NamedNode(o) => Some(o),
            _ => None,
        };
        for iri in [subject, Some(&t.predicate), object].into_iter().flatten() {
            if !allowed(iri) && seen.insert(iri.as_str().to_owned()) {
                out.push(Failure {
                    path: "object".into(),
                    constraint: "reserved IRI".into(),
                    value: Some(iri.as_str().to_owned()),
                    message: format!(
                        "{} is in the node's own namespace; activities cannot use it",
                        iri.as_str()
                    ),
                });
            }
        }
    }
}

/// The objects of the activity node (`as:object`).
fn objects_of<'e>(expansion: &'e Expansion, activity: &NamedOrBlankNode) -> Vec<&'e Term> {
    let as_object = format!("{AS}object");
    expansion
        .triples
        .iter()
        .filter(|t: &&Triple| t.subject == *activity && t.predicate.as_str() == as_object)
        .map(|t| &t.object)
        .collect()
}
