//! The shapes of `shapes/*.ttl`, parsed and compiled once at start-up; anything outside the
//! supported SHACL Core subset fails here, so no constraint is ever silently ignored.

use std::collections::{HashMap, HashSet};

use oxigraph::io::{RdfFormat, RdfParser};
use oxigraph::model::vocab::rdf;
use oxigraph::model::{Graph, NamedNode, NamedOrBlankNode, Term, TermRef, Triple};
use regex::Regex;

use super::{sh, NodeKind, NodeShape, PropertyShape, Shapes, SH, SOURCES};
use crate::jsonld::PropertyKind;

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
}

fn property_shape(graph: &Graph, node: &NamedOrBlankNode) -> Result<PropertyShape, String> {
    let mut ps = PropertyShape {
        path: NamedNode::new_unchecked("urn:unset"),
        min: None,
        max: None,
        datatype: None,
        node_kind: None,
        pattern: None,
        message: None,
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
            Some("message") => {
                let TermRef::Literal(l) = o else {
                    return Err("sh:message must be a string".into());
                };
                ps.message = Some(l.value().to_owned());
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
    use std::collections::HashMap;

    use oxigraph::model::NamedNode;

    use super::super::{Shapes, AS, SOURCES, UNECE};

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
}
