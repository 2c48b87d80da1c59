//! IRIs of the node's own vocabulary and of the external vocabularies it writes.

use oxigraph::model::NamedNode;

/// Namespace of the node's own terms (account records, derived summary facts, system events).
pub const DSN: &str = "https://w3id.org/dataspace-node/ns#";
pub const XSD: &str = "http://www.w3.org/2001/XMLSchema#";

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
