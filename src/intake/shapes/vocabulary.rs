//! The vocabulary check: every D23B property under the object is a known one, with a value of
//! the kind the D23B context gives it (see the module docs of [`super`]).

use std::collections::HashSet;
use std::str::FromStr;

use oxigraph::model::vocab::xsd;
use oxigraph::model::{NamedNodeRef, NamedOrBlankNode, Term};

use super::{short, Failure, Index, Shapes, UNECE};
use crate::jsonld::PropertyKind;

impl Shapes {
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

fn valid_lexical(datatype: NamedNodeRef<'_>, text: &str) -> bool {
    if datatype == xsd::DATE_TIME {
        oxsdatatypes::DateTime::from_str(text).is_ok()
    } else if datatype == xsd::BOOLEAN {
        matches!(text, "true" | "false" | "1" | "0")
    } else {
        true
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use oxigraph::model::vocab::xsd;

    use super::valid_lexical;
    use crate::intake::shapes::Shapes;

    const SHAPE_NS: &str = "https://w3id.org/dataspace-node/shapes#";

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
