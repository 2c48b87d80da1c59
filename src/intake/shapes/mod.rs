//! Shape checks. The SHACL files in `shapes/` are the source of truth: they are parsed at
//! start-up and interpreted here (a SHACL Core subset: `sh:targetClass`, `sh:property` with an
//! IRI `sh:path`, `sh:minCount`, `sh:maxCount`, `sh:datatype`, `sh:nodeKind`, `sh:pattern`,
//! `sh:minLength`, `sh:maxLength`, `sh:hasValue`, `sh:in`, `sh:node`, `sh:or` of node shapes).
//! A shape using anything else fails start-up, so no constraint is ever silently ignored, and
//! nothing outside SHACL Core is used, so a standard SHACL engine reads the files the same way.
//!
//! Besides the shapes, every D23B property present is checked against the D23B context: a key
//! that is no D23B term fails ("known property"), and a value must be of the kind the context
//! gives the term (a node or IRI for object properties, a literal for datatype properties, a
//! valid lexical form for booleans and date-times).
//!
//! - `load`: the shape files parsed into [`Shapes`];
//! - `validate` and `values`: the SHACL checks of a focus node and of each value;
//! - `vocabulary`: the D23B vocabulary check.

mod load;
mod validate;
mod values;
mod vocabulary;

use std::collections::{HashMap, HashSet};

use oxigraph::model::{NamedNode, NamedNodeRef, NamedOrBlankNode, Term, Triple};
use regex::Regex;
use serde::Serialize;

use crate::jsonld::PropertyKind;

const SH: &str = "http://www.w3.org/ns/shacl#";
pub const UNECE: &str = "https://vocabulary.uncefact.org/";
const AS: &str = "https://www.w3.org/ns/activitystreams#";

/// The shape files, compiled in. A test checks this list against `shapes/`.
pub const SOURCES: &[(&str, &str)] = &[
    (
        "consignment.ttl",
        include_str!("../../../shapes/consignment.ttl"),
    ),
    ("activity.ttl", include_str!("../../../shapes/activity.ttl")),
];

/// One violation: where, which constraint, the offending value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub path: String,
    pub constraint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeKind {
    Iri,
    Literal,
    BlankNode,
    BlankNodeOrIri,
}

#[derive(Debug)]
struct PropertyShape {
    path: NamedNode,
    min: Option<usize>,
    max: Option<usize>,
    datatype: Option<NamedNode>,
    node_kind: Option<NodeKind>,
    pattern: Option<(Regex, String)>,
    /// `sh:message`: what a value failing the pattern is not, said instead of the pattern.
    message: Option<String>,
    min_length: Option<usize>,
    max_length: Option<usize>,
    has_value: Option<Term>,
    allowed: Option<Vec<Term>>,
    node: Option<String>,
    /// `sh:or` of named node shapes: a value conforms to one of them.
    or: Option<Vec<String>>,
}

#[derive(Debug, Default)]
struct NodeShape {
    properties: Vec<PropertyShape>,
}

pub struct Shapes {
    shapes: HashMap<String, NodeShape>,
    by_class: HashMap<NamedNode, String>,
    /// Every property IRI a shape names (they are "known" even when the context lacks them).
    shape_paths: HashSet<String>,
    /// D23B property IRI → the kind of value the context gives it.
    vocabulary: HashMap<String, PropertyKind>,
}

/// Triples by subject, for walking a document's graph.
pub struct Index<'a> {
    out: HashMap<&'a NamedOrBlankNode, Vec<&'a Triple>>,
    labels: &'a HashMap<oxigraph::model::BlankNode, String>,
    paths: &'a HashMap<NamedOrBlankNode, String>,
}

impl<'a> Index<'a> {
    pub fn new(expansion: &'a crate::jsonld::Expansion) -> Self {
        let mut out: HashMap<&NamedOrBlankNode, Vec<&Triple>> = HashMap::new();
        for t in &expansion.triples {
            out.entry(&t.subject).or_default().push(t);
        }
        Self {
            out,
            labels: &expansion.labels,
            paths: &expansion.node_paths,
        }
    }

    /// A value as the caller wrote it, for messages.
    fn display(&self, term: &Term) -> String {
        match term {
            Term::BlankNode(b) => match self.labels.get(b) {
                Some(label) if !self.out.contains_key(&NamedOrBlankNode::from(b.clone())) => {
                    label.clone()
                }
                _ => "(a nested object)".to_owned(),
            },
            other => display(other),
        }
    }

    /// Where `node` was written in the document, array indexes included; else `fallback`
    /// (the path of the property that led to it).
    fn path_of(&self, node: &NamedOrBlankNode, fallback: &str) -> String {
        match self.paths.get(node) {
            Some(p) if !p.is_empty() => p.clone(),
            _ => fallback.to_owned(),
        }
    }

    pub(crate) fn values(
        &self,
        subject: &NamedOrBlankNode,
        predicate: &NamedNode,
    ) -> Vec<&'a Term> {
        self.out
            .get(subject)
            .map(|ts| {
                ts.iter()
                    .filter(|t| t.predicate == *predicate)
                    .map(|t| &t.object)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn triples(&self, subject: &NamedOrBlankNode) -> &[&'a Triple] {
        self.out.get(subject).map_or(&[], Vec::as_slice)
    }
}

fn sh(local: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{SH}{local}"))
}

/// `unece:consignorParty` → `consignorParty`, `as:object` → `object`; other IRIs stay whole.
pub fn short(iri: &str) -> &str {
    iri.strip_prefix(UNECE)
        .or_else(|| iri.strip_prefix(AS))
        .unwrap_or(iri)
}

/// `parent.child`, or `child` at the root.
fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() {
        child.to_owned()
    } else {
        format!("{parent}.{child}")
    }
}

fn display(term: &Term) -> String {
    match term {
        Term::Literal(l) => l.value().to_owned(),
        Term::NamedNode(n) => n.as_str().to_owned(),
        Term::BlankNode(_) => "(a nested object)".to_owned(),
        #[allow(unreachable_patterns)]
        other => other.to_string(),
    }
}

impl Shapes {
    /// The shape for a node typed `class` (by `sh:targetClass`).
    pub fn shape_for_class(&self, class: NamedNodeRef<'_>) -> Option<&str> {
        self.by_class.get(&class.into_owned()).map(String::as_str)
    }

    pub fn has_shape(&self, name: &str) -> bool {
        self.shapes.contains_key(name)
    }
}
