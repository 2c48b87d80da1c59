//! The constraints on each value of a property: `sh:nodeKind`, `sh:datatype`, `sh:pattern`,
//! `sh:minLength`, `sh:maxLength`, `sh:in`.

use oxigraph::model::Term;

use super::{Index, NodeKind, PropertyShape, Shapes};

impl Shapes {
    pub(super) fn check_value(
        &self,
        index: &Index<'_>,
        ps: &PropertyShape,
        value: &Term,
        here: &str,
        fail: &mut impl FnMut(String, Option<&Term>, String),
    ) {
        let shown = index.display(value);
        if let Some(kind) = ps.node_kind {
            if !kind.matches(value) {
                fail(
                    format!("sh:nodeKind {kind:?}"),
                    Some(value),
                    format!("{here} must be {}, found {shown:?}", kind.wanted()),
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
        if let Some(text) = text_of(value) {
            check_text(ps, value, text, here, &shown, fail);
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
}

/// The text a pattern or length constraint reads: a literal's value, an IRI.
fn text_of(value: &Term) -> Option<&str> {
    match value {
        Term::Literal(l) => Some(l.value()),
        Term::NamedNode(n) => Some(n.as_str()),
        _ => None,
    }
}

/// `sh:pattern`, `sh:minLength` and `sh:maxLength` on the value's text.
fn check_text(
    ps: &PropertyShape,
    value: &Term,
    text: &str,
    here: &str,
    shown: &str,
    fail: &mut impl FnMut(String, Option<&Term>, String),
) {
    if let Some((regex, source)) = &ps.pattern {
        if !regex.is_match(text) {
            // A pattern of hundreds of characters (dates) tells a caller less than a word.
            let (constraint, message) = match &ps.message {
                Some(said) => (
                    "sh:pattern".to_owned(),
                    format!("{here} has the value {shown:?}, which is {said}"),
                ),
                None => (
                    format!("sh:pattern {source}"),
                    format!("{here} has the value {shown:?}, which does not match {source}"),
                ),
            };
            fail(constraint, Some(value), message);
        }
    }
    if let Some(min) = ps.min_length {
        if text.chars().count() < min {
            fail(
                format!("sh:minLength {min}"),
                Some(value),
                format!("{here} must have at least {min} character(s)"),
            );
        }
    }
    if let Some(max) = ps.max_length {
        if text.chars().count() > max {
            fail(
                format!("sh:maxLength {max}"),
                Some(value),
                format!("{here} may have at most {max} characters"),
            );
        }
    }
}

impl NodeKind {
    fn matches(self, value: &Term) -> bool {
        matches!(
            (self, value),
            (NodeKind::Iri, Term::NamedNode(_))
                | (NodeKind::Literal, Term::Literal(_))
                | (NodeKind::BlankNode, Term::BlankNode(_))
                | (
                    NodeKind::BlankNodeOrIri,
                    Term::NamedNode(_) | Term::BlankNode(_)
                )
        )
    }

    /// What a value of this kind is, in a message.
    fn wanted(self) -> &'static str {
        match self {
            NodeKind::Iri => "a code IRI (e.g. unece:…#code)",
            NodeKind::Literal => "a string or value object",
            NodeKind::BlankNode => "a nested object",
            NodeKind::BlankNodeOrIri => "an object or IRI",
        }
    }
}
