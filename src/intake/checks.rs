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
        read_as_sent(activity, &index, roots, &mut failures);
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

/// A value read as sent: its path, the JSON object holding it, the node it expands on.
type ReadKey<'a> = (
    &'a str,
    Option<&'a Map<String, Value>>,
    Option<&'a NamedOrBlankNode>,
);

/// The values the node reads from the JSON as sent rather than from the expansion: the ids a
/// record is keyed and looked up by, and a document's content and id (taken before the
/// write; its documentId keys its revisions). The shape's verdict on the expanded value is not
/// enough: a JSON number passes it (the context coerces it to an xsd:string literal), and so
/// does a value in an array or under another spelling of the key (`unece:globalId`) — each
/// read as nothing, which would key a record, or a revision, by nothing, or take a document
/// for one without content.
fn read_as_sent(activity: &Activity, index: &Index<'_>, roots: &Roots, out: &mut Vec<Failure>) {
    let object = activity.object();
    let target = index
        .values(
            &roots.activity,
            &NamedNode::new_unchecked(format!("{AS}target")),
        )
        .first()
        .and_then(|t| NamedOrBlankNode::try_from((*t).clone()).ok());
    let document = object.get("type").and_then(Value::as_str) == Some("Document");
    // Whether an `Add` adds a document is read from `type` as sent too: typed otherwise (as
    // `@type`, in an array) it would pass the Document shape and be stored as an event.
    let typed_document = roots.object.as_ref().is_some_and(|root| {
        index
            .values(root, &oxigraph::model::vocab::rdf::TYPE.into_owned())
            .iter()
            .any(|t| **t == Term::from(crate::vocab::unece("Document")))
    });
    if activity.kind == Kind::Add && typed_document && !document {
        out.push(Failure {
            path: "object.type".into(),
            constraint: "string".into(),
            value: object.get("type").map(Value::to_string),
            message: "a document is sent as \"type\": \"Document\"".into(),
        });
    }
    let keys: Vec<ReadKey<'_>> = match activity.kind {
        Kind::Create | Kind::Update => vec![
            ("object.globalId", Some(object), roots.object.as_ref()),
            ("object.identifier", Some(object), roots.object.as_ref()),
        ],
        Kind::Add if document => vec![
            ("target.globalId", activity.target(), target.as_ref()),
            ("object.uRIId", Some(object), roots.object.as_ref()),
            ("object.identifier", Some(object), roots.object.as_ref()),
        ],
        Kind::Add => vec![("target.globalId", activity.target(), target.as_ref())],
    };
    for key in keys {
        key_read_as_sent(activity, index, document, key, out);
    }
}

/// One id of [`read_as_sent`]: `path` as sent in `holder`, read from `subject`.
fn key_read_as_sent(
    activity: &Activity,
    index: &Index<'_>,
    document: bool,
    (path, holder, subject): ReadKey<'_>,
    out: &mut Vec<Failure>,
) {
    let name = path.rsplit('.').next().unwrap_or(path);
    let sent = holder.and_then(|h| h.get(name));
    let values = subject.map_or_else(Vec::new, |s| index.values(s, &crate::vocab::unece(name)));
    let expanded = !values.is_empty();
    let text = crate::consignment::ports::string_value(sent);
    // The value read must be the one the description holds: under a context that does not
    // define the key (a target without the D23B context) the key is dropped, and a value
    // under the full IRI would be the one stored.
    if let Some(text) = text.filter(|_| expanded) {
        let held = values
            .iter()
            .any(|v| matches!(v, Term::Literal(l) if l.value() == text));
        if !held {
            out.push(Failure {
                path: path.into(),
                constraint: "string or value object".into(),
                value: sent.map(Value::to_string),
                message: format!(
                    "{path} is not the value the description holds under {name:?}: send it \
                     once, under the key {name:?}, with the D23B context"
                ),
            });
        }
    }
    // A new consignment's ids may not take the form of the node's: that text names the
    // record the node minted it for, and nothing else (`graphs::is_aig_id`), so a
    // consignment under it could never be found by it, nor kept unique by it. (An Update's
    // is refused by `apply::update`, after the look-up that finds its consignment.)
    if activity.kind == Kind::Create && text.is_some_and(graphs::is_aig_id) {
        out.push(not_an_aig_id(
            path,
            sent.map(Value::to_string).unwrap_or_default(),
        ));
    }
    // A document sent without an identifier is read by its node's IRI: no other document
    // may take that id.
    if document
        && path == "object.identifier"
        && text.is_some_and(|t| t.starts_with(graphs::MINTED_PREFIX))
    {
        out.push(Failure {
            path: path.into(),
            constraint: "not a node id".into(),
            value: sent.map(Value::to_string),
            message: format!(
                "{path} may not start with {}: the node names its own resources so",
                graphs::MINTED_PREFIX
            ),
        });
    }
    let readable = sent.is_some_and(activity::is_string_or_value_object);
    if (sent.is_some() || expanded) && !readable {
        out.push(Failure {
            path: path.into(),
            constraint: "string or value object".into(),
            value: sent.map(Value::to_string),
            message: format!(
                "{path} must be sent under the key {name:?}, as a JSON string or a JSON-LD \
                 value object with a string @value"
            ),
        });
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
