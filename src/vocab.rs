//! IRIs of the node's own vocabulary and of the external vocabularies it writes.

use oxigraph::model::{Literal, NamedNode, Triple};

/// Namespace of the node's own terms (account records, derived summary facts, system events),
/// each defined in `vocab/dataspace-node.ttl`.
pub const DSN: &str = "https://w3id.org/dataspace-node/ns#";
pub const XSD: &str = "http://www.w3.org/2001/XMLSchema#";

pub const AS_CONTEXT: &str = "https://www.w3.org/ns/activitystreams";
pub const AS_CONTEXT_ALIASES: &[&str] = &[
    "https://www.w3.org/ns/activitystreams#",
    "https://www.w3.org/ns/activitystreams.jsonld",
];
pub const UNECE_CONTEXT: &str = "https://vocabulary.uncefact.org/unece-context-D23B.jsonld";
pub const UNECE_CONTEXT_ALIASES: &[&str] = &[
    "https://vocabulary.uncefact.org",
    "https://vocabulary.uncefact.org/",
    "https://vocabulary.uncefact.org/unece-context.jsonld",
];
pub const ODRL_CONTEXT: &str = "http://www.w3.org/ns/odrl.jsonld";
pub const ODRL_CONTEXT_ALIASES: &[&str] = &["https://www.w3.org/ns/odrl.jsonld"];
pub const ODRL: &str = "http://www.w3.org/ns/odrl/2/";

pub fn dsn(local: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{DSN}{local}"))
}

pub const UNECE: &str = "https://vocabulary.uncefact.org/";

pub fn unece(local: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{UNECE}{local}"))
}

pub fn xsd(local: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{XSD}{local}"))
}

/// Datatype of the JSON payloads the node keeps as literals.
pub const RDF_JSON: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON";

/// `text` as an `rdf:JSON` literal: how the node stores its records' JSON.
pub fn json_literal(text: impl Into<String>) -> Literal {
    Literal::new_typed_literal(text, NamedNode::new_unchecked(RDF_JSON))
}

/// The node's vocabulary as published: `vocab/dataspace-node.ttl`, served at `GET /ns`.
pub const VOCABULARY_TURTLE: &str = include_str!("../vocab/dataspace-node.ttl");

/// The forms `GET /ns` serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VocabularyForm {
    Turtle,
    NTriples,
    JsonLd,
}

/// The vocabulary in every served form, made once at start-up: a file that does not parse
/// stops the node instead of being served broken.
pub struct Vocabulary {
    n_triples: String,
    json_ld: String,
}

impl Vocabulary {
    pub fn load() -> crate::Result<Self> {
        use oxigraph::io::{RdfFormat, RdfParser};
        let triples = RdfParser::from_format(RdfFormat::Turtle)
            .for_slice(VOCABULARY_TURTLE)
            .map(|q| q.map(Triple::from))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| crate::Error::internal(format!("vocab/dataspace-node.ttl: {e}")))?;
        Ok(Self {
            n_triples: serialize(&triples, RdfFormat::NTriples)?,
            json_ld: json_ld(&triples)?,
        })
    }

    pub fn text(&self, form: VocabularyForm) -> &str {
        match form {
            VocabularyForm::Turtle => VOCABULARY_TURTLE,
            VocabularyForm::NTriples => &self.n_triples,
            VocabularyForm::JsonLd => &self.json_ld,
        }
    }
}

/// The node's JSON-LD context for DocumentRecords (their third `@context` entry is the
/// vocabulary's IRI): `contexts/dataspace-node.jsonld`.
pub const CONTEXT: &str = include_str!("../contexts/dataspace-node.jsonld");

/// The JSON-LD form of `/ns`: one document that is both the node's context (its `@context`,
/// which is all a processor reads from a remote context) and the vocabulary (its `@graph`, in
/// expanded form, so the context's terms do not change it).
fn json_ld(triples: &[Triple]) -> crate::Result<String> {
    let expanded = serialize(
        triples,
        oxigraph::io::RdfFormat::from_media_type("application/ld+json")
            .ok_or_else(|| crate::Error::internal("no JSON-LD serializer"))?,
    )?;
    let expanded: serde_json::Value =
        serde_json::from_str(&expanded).map_err(crate::Error::internal)?;
    let nodes = match expanded {
        serde_json::Value::Object(mut o) if o.contains_key("@graph") => {
            o.remove("@graph").unwrap_or_default()
        }
        other => other,
    };
    let context: serde_json::Value =
        serde_json::from_str(CONTEXT).map_err(crate::Error::internal)?;
    let document = serde_json::json!({"@context": context["@context"], "@graph": nodes});
    serde_json::to_string(&document).map_err(crate::Error::internal)
}

fn serialize(triples: &[Triple], format: oxigraph::io::RdfFormat) -> crate::Result<String> {
    let mut out = oxigraph::io::RdfSerializer::from_format(format).for_writer(Vec::new());
    for t in triples {
        out.serialize_triple(t).map_err(crate::Error::internal)?;
    }
    let bytes = out.finish().map_err(crate::Error::internal)?;
    String::from_utf8(bytes).map_err(crate::Error::internal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::io::{RdfFormat, RdfParser};
    use oxigraph::model::vocab::rdf;
    use oxigraph::model::{Graph, NamedOrBlankNode};

    fn graph() -> Graph {
        RdfParser::from_format(RdfFormat::Turtle)
            .for_slice(VOCABULARY_TURTLE)
            .map(|q| Triple::from(q.unwrap()))
            .collect()
    }

    #[test]
    fn every_term_is_typed_labelled_and_explained() {
        let g = graph();
        let label = NamedNode::new_unchecked("http://www.w3.org/2000/01/rdf-schema#label");
        let comment = NamedNode::new_unchecked("http://www.w3.org/2000/01/rdf-schema#comment");
        let mut terms = 0;
        let subjects: std::collections::HashSet<NamedOrBlankNode> =
            g.iter().map(|t| t.subject.into_owned()).collect();
        for s in subjects {
            let NamedOrBlankNode::NamedNode(n) = &s else {
                panic!("blank subject {s}");
            };
            if !n.as_str().starts_with(DSN) {
                continue;
            }
            terms += 1;
            for p in [&rdf::TYPE.into_owned(), &label, &comment] {
                assert!(
                    g.object_for_subject_predicate(n, p).is_some(),
                    "{n} has no {p}"
                );
            }
        }
        assert!(terms > 60, "{terms} terms");
        Vocabulary::load().unwrap();
    }
}
