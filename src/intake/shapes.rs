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

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use oxigraph::io::{RdfFormat, RdfParser};
use oxigraph::model::vocab::{rdf, xsd};
use oxigraph::model::{Graph, NamedNode, NamedNodeRef, NamedOrBlankNode, Term, TermRef, Triple};
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
        include_str!("../../shapes/consignment.ttl"),
    ),
    ("activity.ttl", include_str!("../../shapes/activity.ttl")),
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

    fn values(&self, subject: &NamedOrBlankNode, predicate: &NamedNode) -> Vec<&'a Term> {
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
    pub fn load(vocabulary: HashMap<String, PropertyKind>) -> Result<Self, String> {
        let mut graph = Graph::new();
        for (name, text) in SOURCES {
            for triple in RdfParser::from_format(RdfFormat::Turtle).for_slice(text.as_bytes()) {
                let triple = triple.map_err(|e| format!("shapes/{name}: {e}"))?;
                graph.insert(&Triple::from(triple));
            }
        }
        let node_shape = sh("NodeShape");
        let mut shapes = HashMap::new();
        let mut by_class = HashMap::new();
        let mut shape_paths = HashSet::new();
        let roots: Vec<NamedOrBlankNode> = graph
            .subjects_for_predicate_object(rdf::TYPE, &node_shape)
            .map(|s| s.into_owned())
            .collect();
        for root in roots {
            let NamedOrBlankNode::NamedNode(name) = &root else {
                return Err("node shapes must be named".into());
            };
            let name = name.as_str().to_owned();
            for (p, _) in graph
                .triples_for_subject(&root)
                .map(|t| (t.predicate, t.object))
            {
                let p = p.as_str();
                if ![
                    rdf::TYPE.as_str(),
                    sh("targetClass").as_str(),
                    sh("property").as_str(),
                ]
                .contains(&p)
                {
                    return Err(format!("{name}: unsupported {p}"));
                }
            }
            for class in graph.objects_for_subject_predicate(&root, &sh("targetClass")) {
                let TermRef::NamedNode(class) = class else {
                    return Err(format!("{name}: sh:targetClass must be an IRI"));
                };
                by_class.insert(class.into_owned(), name.clone());
            }
            let mut shape = NodeShape::default();
            for prop in graph.objects_for_subject_predicate(&root, &sh("property")) {
                let prop: NamedOrBlankNode = match prop {
                    TermRef::BlankNode(b) => b.into_owned().into(),
                    TermRef::NamedNode(n) => n.into_owned().into(),
                    _ => return Err(format!("{name}: a property shape must be a node")),
                };
                let ps = property_shape(&graph, &prop).map_err(|e| format!("{name}: {e}"))?;
                shape_paths.insert(ps.path.as_str().to_owned());
                shape.properties.push(ps);
            }
            shapes.insert(name, shape);
        }
        for shape in shapes.values() {
            for p in &shape.properties {
                let named = p.node.iter().chain(p.or.iter().flatten());
                for node in named {
                    if !shapes.contains_key(node) {
                        return Err(format!("sh:node {node} is not defined"));
                    }
                }
            }
        }
        Ok(Self {
            shapes,
            by_class,
            shape_paths,
            vocabulary,
        })
    }

    /// The shape for a node typed `class` (by `sh:targetClass`).
    pub fn shape_for_class(&self, class: NamedNodeRef<'_>) -> Option<&str> {
        self.by_class.get(&class.into_owned()).map(String::as_str)
    }

    pub fn has_shape(&self, name: &str) -> bool {
        self.shapes.contains_key(name)
    }

    /// Validates `focus` against the shape `shape`; failures are appended to `out`.
    pub fn validate(
        &self,
        index: &Index<'_>,
        shape: &str,
        focus: &NamedOrBlankNode,
        path: &str,
        out: &mut Vec<Failure>,
    ) {
        let mut seen = HashSet::new();
        self.validate_node(index, shape, focus, path, out, &mut seen);
    }

    fn validate_node<'a>(
        &self,
        index: &Index<'a>,
        shape_name: &str,
        focus: &NamedOrBlankNode,
        path: &str,
        out: &mut Vec<Failure>,
        seen: &mut HashSet<(String, NamedOrBlankNode)>,
    ) {
        if !seen.insert((shape_name.to_owned(), focus.clone())) {
            return;
        }
        let Some(shape) = self.shapes.get(shape_name) else {
            return;
        };
        for ps in &shape.properties {
            let values = index.values(focus, &ps.path);
            let here = if ps.path.as_ref() == rdf::TYPE {
                join(path, "type")
            } else {
                join(path, short(ps.path.as_str()))
            };
            let mut fail = |constraint: String, value: Option<&Term>, message: String| {
                out.push(Failure {
                    path: here.clone(),
                    constraint,
                    value: value.map(|v| index.display(v)),
                    message,
                });
            };
            if let Some(min) = ps.min {
                if values.len() < min {
                    fail(
                        format!("sh:minCount {min}"),
                        None,
                        if min == 1 {
                            format!("{here} is required")
                        } else {
                            format!("{here} needs at least {min} values")
                        },
                    );
                }
            }
            if let Some(max) = ps.max {
                if values.len() > max {
                    fail(
                        format!("sh:maxCount {max}"),
                        None,
                        format!(
                            "{here} may have at most {max} value(s), found {}",
                            values.len()
                        ),
                    );
                }
            }
            if let Some(expected) = &ps.has_value {
                if !values.contains(&expected) {
                    fail(
                        format!("sh:hasValue {}", short(&display(expected))),
                        values.first().copied(),
                        format!("{here} must be {}", short(&display(expected))),
                    );
                }
            }
            for value in &values {
                self.check_value(index, ps, value, &here, &mut fail);
            }
            if let Some(node_shape) = &ps.node {
                for value in &values {
                    self.value_node(index, node_shape, value, &here, out, seen);
                }
            }
            if let Some(alternatives) = &ps.or {
                for value in &values {
                    self.value_or(index, alternatives, value, &here, out, seen);
                }
            }
        }
    }

    /// `sh:node`: the value must be a node conforming to `shape_name`.
    fn value_node(
        &self,
        index: &Index<'_>,
        shape_name: &str,
        value: &Term,
        here: &str,
        out: &mut Vec<Failure>,
        seen: &mut HashSet<(String, NamedOrBlankNode)>,
    ) {
        match value {
            Term::NamedNode(n) => {
                let n = NamedOrBlankNode::from(n.clone());
                self.validate_node(index, shape_name, &n, here, out, seen)
            }
            Term::BlankNode(b) => {
                let b = NamedOrBlankNode::from(b.clone());
                self.validate_node(index, shape_name, &b, here, out, seen)
            }
            other => out.push(Failure {
                path: here.to_owned(),
                constraint: format!("sh:node {}", short_shape(shape_name)),
                value: Some(index.display(other)),
                message: format!("{here} must be an object, found {:?}", index.display(other)),
            }),
        }
    }

    /// `sh:or`: the value conforms to one of `alternatives`. When it conforms to none, the
    /// failures reported are those of the alternative it came closest to (fewest failures),
    /// which for a typed object is the shape of its type.
    fn value_or(
        &self,
        index: &Index<'_>,
        alternatives: &[String],
        value: &Term,
        here: &str,
        out: &mut Vec<Failure>,
        seen: &HashSet<(String, NamedOrBlankNode)>,
    ) {
        let mut closest: Option<Vec<Failure>> = None;
        for alternative in alternatives {
            let mut failures = Vec::new();
            let mut seen = seen.clone();
            self.value_node(index, alternative, value, here, &mut failures, &mut seen);
            if failures.is_empty() {
                return;
            }
            if closest.as_ref().is_none_or(|c| failures.len() < c.len()) {
                closest = Some(failures);
            }
        }
        out.extend(closest.unwrap_or_default());
    }

    fn check_value(
        &self,
        index: &Index<'_>,
        ps: &PropertyShape,
        value: &Term,
        here: &str,
        fail: &mut impl FnMut(String, Option<&Term>, String),
    ) {
        let shown = index.display(value);
        if let Some(kind) = ps.node_kind {
            let ok = matches!(
                (kind, value),
                (NodeKind::Iri, Term::NamedNode(_))
                    | (NodeKind::Literal, Term::Literal(_))
                    | (NodeKind::BlankNode, Term::BlankNode(_))
                    | (
                        NodeKind::BlankNodeOrIri,
                        Term::NamedNode(_) | Term::BlankNode(_)
                    )
            );
            if !ok {
                let wanted = match kind {
                    NodeKind::Iri => "a code IRI (e.g. unece:…#code)",
                    NodeKind::Literal => "a string or value object",
                    NodeKind::BlankNode => "a nested object",
                    NodeKind::BlankNodeOrIri => "an object or IRI",
                };
                fail(
                    format!("sh:nodeKind {kind:?}"),
                    Some(value),
                    format!("{here} must be {wanted}, found {shown:?}"),
                );
                return;
            }
        }
        if let Some(dt) = &ps.datatype {
            let ok = matches!(value, Term::Literal(l) if l.datatype() == dt.as_ref());
            if !ok {
                fail(
                    format!("sh:datatype {}", dt.as_str()),
                    Some(value),
                    format!(
                        "{here} must be a value typed {}, found {shown:?}",
                        dt.as_str()
                    ),
                );
            }
        }
        let text = match value {
            Term::Literal(l) => Some(l.value()),
            Term::NamedNode(n) => Some(n.as_str()),
            _ => None,
        };
        if let (Some((regex, source)), Some(text)) = (&ps.pattern, text) {
            if !regex.is_match(text) {
                fail(
                    format!("sh:pattern {source}"),
                    Some(value),
                    format!("{here} has the value {shown:?}, which does not match {source}"),
                );
            }
        }
        if let (Some(min), Some(text)) = (ps.min_length, text) {
            if text.chars().count() < min {
                fail(
                    format!("sh:minLength {min}"),
                    Some(value),
                    format!("{here} must have at least {min} character(s)"),
                );
            }
        }
        if let (Some(max), Some(text)) = (ps.max_length, text) {
            if text.chars().count() > max {
                fail(
                    format!("sh:maxLength {max}"),
                    Some(value),
                    format!("{here} may have at most {max} characters"),
                );
            }
        }
        if let Some(allowed) = &ps.allowed {
            if !allowed.contains(value) {
                fail(
                    "sh:in".into(),
                    Some(value),
                    format!(
                        "{here} has the value {shown:?}, which is not one of the allowed values"
                    ),
                );
            }
        }
    }

    /// The vocabulary check of every triple under `root` (see the module docs). `dropped` are the
    /// document keys that expanded to no IRI.
    pub fn check_vocabulary(
        &self,
        index: &Index<'_>,
        root: &NamedOrBlankNode,
        path: &str,
        dropped: &[String],
        out: &mut Vec<Failure>,
    ) {
        for key in dropped {
            out.push(Failure {
                path: key.clone(),
                constraint: "known property".into(),
                value: None,
                message: format!("{key} is not a term of the D23B or Activity Streams contexts"),
            });
        }
        let mut stack = vec![(root.clone(), path.to_owned())];
        let mut seen = HashSet::new();
        while let Some((node, here)) = stack.pop() {
            if !seen.insert(node.clone()) {
                continue;
            }
            for t in index.triples(&node) {
                let p = t.predicate.as_str();
                let at = format!("{here}.{}", short(p));
                if p.starts_with(UNECE) {
                    match self.vocabulary.get(p) {
                        Some(kind) => {
                            if let Some(message) = kind_mismatch(kind, &t.object) {
                                out.push(Failure {
                                    path: at.clone(),
                                    constraint: "D23B range".into(),
                                    value: Some(index.display(&t.object)),
                                    message: format!("{at} {message}"),
                                });
                            }
                        }
                        None if self.shape_paths.contains(p) => {}
                        None => out.push(Failure {
                            path: at.clone(),
                            constraint: "known property".into(),
                            value: None,
                            message: format!("{at} is not a D23B property"),
                        }),
                    }
                }
                match &t.object {
                    Term::BlankNode(b) => stack.push((b.clone().into(), at)),
                    Term::NamedNode(n)
                        if index.out.contains_key(&NamedOrBlankNode::from(n.clone())) =>
                    {
                        stack.push((n.clone().into(), at))
                    }
                    _ => {}
                }
            }
        }
    }
}

fn kind_mismatch(kind: &PropertyKind, value: &Term) -> Option<String> {
    match (kind, value) {
        (PropertyKind::Node, Term::Literal(l)) => Some(format!(
            "must be an object or code IRI, found the text {:?}",
            l.value()
        )),
        (PropertyKind::Node, _) => None,
        (PropertyKind::Literal(_), Term::NamedNode(_) | Term::BlankNode(_)) => {
            Some("must be a string or value, found an object".into())
        }
        (PropertyKind::Literal(Some(dt)), Term::Literal(l))
            if (dt.as_ref() == xsd::BOOLEAN || dt.as_ref() == xsd::DATE_TIME)
                && !(l.datatype() == dt.as_ref() && valid_lexical(dt.as_ref(), l.value())) =>
        {
            Some(format!(
                "must be a valid {}, found {:?}",
                short_xsd(dt.as_str()),
                l.value()
            ))
        }
        _ => None,
    }
}

fn short_xsd(iri: &str) -> String {
    iri.strip_prefix("http://www.w3.org/2001/XMLSchema#")
        .map_or_else(|| iri.to_owned(), |l| format!("xsd:{l}"))
}

fn short_shape(iri: &str) -> &str {
    iri.rsplit_once('#').map_or(iri, |(_, l)| l)
}

fn valid_lexical(datatype: NamedNodeRef<'_>, text: &str) -> bool {
    if datatype == xsd::DATE_TIME {
        oxsdatatypes::DateTime::from_str(text).is_ok()
    } else if datatype == xsd::BOOLEAN {
        matches!(text, "true" | "false" | "1" | "0")
    } else {
        true
    }
}

fn property_shape(graph: &Graph, node: &NamedOrBlankNode) -> Result<PropertyShape, String> {
    let mut ps = PropertyShape {
        path: NamedNode::new_unchecked("urn:unset"),
        min: None,
        max: None,
        datatype: None,
        node_kind: None,
        pattern: None,
        min_length: None,
        max_length: None,
        has_value: None,
        allowed: None,
        node: None,
        or: None,
    };
    let mut has_path = false;
    let count = |t: TermRef<'_>| -> Result<usize, String> {
        match t {
            TermRef::Literal(l) => l.value().parse().map_err(|_| format!("bad count {l}")),
            other => Err(format!("bad count {other}")),
        }
    };
    let iri = |t: TermRef<'_>| -> Result<NamedNode, String> {
        match t {
            TermRef::NamedNode(n) => Ok(n.into_owned()),
            other => Err(format!("expected an IRI, found {other}")),
        }
    };
    for triple in graph.triples_for_subject(node) {
        let o = triple.object;
        match triple.predicate.as_str().strip_prefix(SH) {
            Some("path") => {
                ps.path = iri(o).map_err(|e| format!("sh:path: {e} (only IRI paths)"))?;
                has_path = true;
            }
            Some("minCount") => ps.min = Some(count(o)?),
            Some("maxCount") => ps.max = Some(count(o)?),
            Some("minLength") => ps.min_length = Some(count(o)?),
            Some("maxLength") => ps.max_length = Some(count(o)?),
            Some("datatype") => ps.datatype = Some(iri(o)?),
            Some("hasValue") => ps.has_value = Some(o.into_owned()),
            Some("node") => ps.node = Some(iri(o)?.as_str().to_owned()),
            Some("nodeKind") => {
                ps.node_kind = Some(match iri(o)?.as_str().strip_prefix(SH) {
                    Some("IRI") => NodeKind::Iri,
                    Some("Literal") => NodeKind::Literal,
                    Some("BlankNode") => NodeKind::BlankNode,
                    Some("BlankNodeOrIRI") => NodeKind::BlankNodeOrIri,
                    _ => return Err(format!("unsupported sh:nodeKind {o}")),
                })
            }
            Some("pattern") => {
                let TermRef::Literal(l) = o else {
                    return Err("sh:pattern must be a string".into());
                };
                let regex = Regex::new(l.value()).map_err(|e| format!("sh:pattern {l}: {e}"))?;
                ps.pattern = Some((regex, l.value().to_owned()));
            }
            Some("in") => ps.allowed = Some(list(graph, o).map_err(|e| format!("sh:in: {e}"))?),
            Some("or") => {
                let names = list(graph, o).map_err(|e| format!("sh:or: {e}"))?;
                let names = names
                    .iter()
                    .map(|t| iri(t.as_ref()).map(NamedNode::into_string));
                ps.or = Some(names.collect::<Result<_, _>>()?);
            }
            _ => return Err(format!("unsupported constraint {}", triple.predicate)),
        }
    }
    if !has_path {
        return Err("a property shape without sh:path".into());
    }
    Ok(ps)
}

/// The members of the RDF list at `head`.
fn list(graph: &Graph, head: TermRef<'_>) -> Result<Vec<Term>, String> {
    let mut items = Vec::new();
    let mut cell = head.into_owned();
    while cell != Term::from(rdf::NIL.into_owned()) {
        let subject: NamedOrBlankNode = match &cell {
            Term::BlankNode(b) => b.clone().into(),
            _ => return Err("not a list".into()),
        };
        let first = graph
            .object_for_subject_predicate(&subject, rdf::FIRST)
            .ok_or("broken list")?;
        items.push(first.into_owned());
        cell = graph
            .object_for_subject_predicate(&subject, rdf::REST)
            .ok_or("broken list")?
            .into_owned();
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE_NS: &str = "https://w3id.org/dataspace-node/shapes#";

    #[test]
    fn every_shape_file_is_registered_and_loads() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/shapes");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".ttl"))
            .collect();
        on_disk.sort();
        let mut registered: Vec<String> = SOURCES.iter().map(|(n, _)| n.to_string()).collect();
        registered.sort();
        assert_eq!(on_disk, registered);
        let shapes = Shapes::load(HashMap::new()).unwrap();
        for name in [
            "Consignment",
            "SupplyChainEvent",
            "Document",
            "Actor",
            "Target",
        ] {
            assert!(shapes.has_shape(&format!("https://w3id.org/dataspace-node/shapes#{name}")));
        }
        for class in ["Create", "Update", "Add"] {
            let class = NamedNode::new_unchecked(format!("{AS}{class}"));
            assert!(shapes.shape_for_class(class.as_ref()).is_some(), "{class}");
        }
        // Nested consignments are typed Consignment too: no shape may target the class.
        let consignment = NamedNode::new_unchecked(format!("{UNECE}Consignment"));
        assert!(shapes.shape_for_class(consignment.as_ref()).is_none());
    }

    /// The date-time pattern of the shapes says what xsd:dateTime says (four-digit years).
    #[test]
    fn the_date_time_pattern_is_the_xsd_lexical_space() {
        let shapes = Shapes::load(HashMap::new()).unwrap();
        let event = &shapes.shapes[&format!("{SHAPE_NS}TransportEvent")];
        let (pattern, _) = event
            .properties
            .iter()
            .find_map(|p| {
                p.pattern
                    .as_ref()
                    .filter(|_| p.path.as_str().ends_with("DateTime"))
            })
            .unwrap();
        let mut checked = 0;
        for year in ["2024", "2026", "1900", "2000", "2100", "0400"] {
            for month in 0..=13 {
                for day in [0, 1, 9, 28, 29, 30, 31, 32] {
                    for time in [
                        "T08:00:00Z",
                        "T23:59:59.125+03:00",
                        "T24:00:00Z",
                        "T08:00:00",
                        "T8:00:00Z",
                        "T08:00:00+14:30",
                        "",
                    ] {
                        let text = format!("{year}-{month:02}-{day:02}{time}");
                        assert_eq!(
                            pattern.is_match(&text),
                            valid_lexical(xsd::DATE_TIME, &text) && !text.contains("T24"),
                            "{text}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 4000);
        for text in ["2026-3-5T10:00:00Z", "not-a-date", "2026-12-01T08:00:00ZZ"] {
            assert!(!pattern.is_match(text), "{text}");
        }
    }

    #[test]
    fn date_times_are_checked_for_real() {
        assert!(valid_lexical(xsd::DATE_TIME, "2026-12-01T08:00:00Z"));
        assert!(valid_lexical(xsd::DATE_TIME, "2026-12-01T08:00:00.5+03:00"));
        assert!(!valid_lexical(xsd::DATE_TIME, "not-a-date"));
        assert!(!valid_lexical(xsd::DATE_TIME, "2026-02-30T08:00:00Z"));
        assert!(!valid_lexical(xsd::DATE_TIME, "2026-12-01"));
    }
}
