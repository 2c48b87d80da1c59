//! The SHACL checks: a focus node against a node shape, its property shapes' counts and
//! values, `sh:node` and `sh:or` followed into nested objects.

use std::collections::HashSet;

use oxigraph::model::vocab::rdf;
use oxigraph::model::{NamedOrBlankNode, Term};

use super::{display, join, short, Failure, Index, PropertyShape, Shapes};

impl Shapes {
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
            check_counts(ps, &values, &here, &mut fail);
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
                let path = index.path_of(&n, here);
                self.validate_node(index, shape_name, &n, &path, out, seen)
            }
            Term::BlankNode(b) => {
                let b = NamedOrBlankNode::from(b.clone());
                let path = index.path_of(&b, here);
                self.validate_node(index, shape_name, &b, &path, out, seen)
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
}

fn short_shape(iri: &str) -> &str {
    iri.rsplit_once('#').map_or(iri, |(_, l)| l)
}

/// `sh:minCount`, `sh:maxCount` and `sh:hasValue`: constraints on a property's values taken
/// together.
fn check_counts(
    ps: &PropertyShape,
    values: &[&Term],
    here: &str,
    fail: &mut impl FnMut(String, Option<&Term>, String),
) {
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
}
