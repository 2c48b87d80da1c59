//! Compaction: the triples of one resource back to a single JSON-LD tree under a compiled
//! context.
//!
//! Not the JSON-LD 1.1 compaction algorithm (it starts from expanded JSON-LD, which would mean
//! running a generic processor on the 400 KB D23B context per request), but the same result
//! for the graphs the node stores, built straight from triples:
//! - the root node at the top; every other node that is not embedded goes to `@included`;
//! - a node referenced exactly once is embedded where it is referenced, unless the caller keeps
//!   it apart (the node's own events, documents, summaries); blank nodes referenced more often,
//!   or in a cycle, get `_:bN` labels;
//! - a property becomes the context's term for its IRI when the value fits the term's type
//!   coercion (`@id`, `@vocab`, a datatype), else a compact IRI (`unece:…`) or the full IRI,
//!   with the value written so that no coercion applies to it;
//! - every string chosen to stand for an IRI is expanded back with the same context before it
//!   is used, so a term or prefix that would expand to something else is never picked.
//!
//! Expanding the output with [`super::Expander`] (`with_included`) therefore gives exactly the
//! input triples, up to blank node names; the unit tests and the linked-data read tests check
//! that.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use oxigraph::model::vocab::{rdf, xsd};
use oxigraph::model::{BlankNode, Literal, NamedNode, NamedOrBlankNode, Term, Triple};
use serde_json::{Map, Value};

use super::{ActiveContext, Coercion, Container, Contexts, Expanded};

/// One context's terms, indexed by IRI for compaction. Built once, shared by every request.
pub struct Compactor {
    url: String,
    ctx: Arc<ActiveContext>,
    /// Property IRI → (term, coercion) of the terms without a container, shortest term first.
    terms: HashMap<String, Vec<(String, Coercion)>>,
    /// (namespace IRI, prefix term), longest namespace first.
    prefixes: Vec<(String, String)>,
    id_key: String,
    type_key: String,
}

impl Compactor {
    /// The compactor for the context document known to `contexts` as `url`.
    pub fn new(contexts: &Contexts, url: &str) -> Result<Self, String> {
        let ctx = contexts
            .extend(&contexts.empty(), &Value::String(url.to_owned()), "")
            .map_err(|e| e.to_string())?;
        let mut terms: HashMap<String, Vec<(String, Coercion)>> = HashMap::new();
        let mut prefixes = Vec::new();
        let mut id_key = "@id".to_owned();
        let mut type_key = "@type".to_owned();
        for (term, def) in &ctx.terms {
            match def.iri.as_str() {
                "@id" if term.len() < id_key.len() || id_key.starts_with('@') => {
                    id_key = term.clone()
                }
                "@type" if term.len() < type_key.len() || type_key.starts_with('@') => {
                    type_key = term.clone()
                }
                iri if iri.starts_with('@') => {}
                iri => {
                    if def.prefix {
                        prefixes.push((iri.to_owned(), term.clone()));
                    }
                    if def.container == Container::None {
                        terms
                            .entry(iri.to_owned())
                            .or_default()
                            .push((term.clone(), def.coercion.clone()));
                    }
                }
            }
        }
        for list in terms.values_mut() {
            list.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then(a.0.cmp(&b.0)));
        }
        prefixes.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        Ok(Self {
            url: url.to_owned(),
            ctx,
            terms,
            prefixes,
            id_key,
            type_key,
        })
    }

    /// The JSON-LD document of `triples` with `root` at the top. `apart` names nodes that are
    /// never embedded, even when referenced once.
    pub fn compact(
        &self,
        root: &NamedOrBlankNode,
        triples: &[Triple],
        apart: impl Fn(&NamedNode) -> bool,
    ) -> Result<Value, String> {
        let mut graph = Graph::default();
        for t in triples {
            let entry = graph.subjects.entry(t.subject.clone()).or_default();
            if entry.is_empty() {
                graph.order.push(t.subject.clone());
            }
            entry.push(t);
            if let Some(node) = as_node(&t.object) {
                *graph.refs.entry(node).or_default() += 1;
            }
        }
        let mut out = Emitter {
            c: self,
            graph: &graph,
            root,
            apart: &apart,
            visited: HashSet::new(),
            labels: HashMap::new(),
            depth: 0,
        };
        let mut top = Map::new();
        top.insert("@context".into(), Value::String(self.url.clone()));
        top.extend(out.node(root, false)?);
        let mut rest: Vec<&NamedOrBlankNode> = graph
            .order
            .iter()
            .filter(|n| *n != root && !out.embeddable(n))
            .collect();
        // Named nodes by IRI, then blank nodes: the same data always compacts the same way.
        rest.sort_by_key(|n| match n {
            NamedOrBlankNode::NamedNode(x) => (0, x.as_str().to_owned()),
            NamedOrBlankNode::BlankNode(_) => (1, String::new()),
        });
        let mut included = Vec::new();
        for node in rest {
            included.push(Value::Object(out.node(node, false)?));
        }
        // Whatever is left is a cycle of nodes each referenced once (one of them starts it), or
        // the rest of a chain cut at `MAX_EMBEDDED`.
        for node in &graph.order {
            if node != root && !out.visited.contains(node) {
                included.push(Value::Object(out.node(node, false)?));
            }
        }
        if !included.is_empty() {
            top.insert("@included".into(), Value::Array(included));
        }
        Ok(Value::Object(top))
    }

    /// The string that expands back to `iri` (vocabulary-relative when `vocab`): a term (only
    /// when `vocab`), a compact IRI, or the IRI itself.
    fn iri_string(&self, iri: &str, vocab: bool, allow_terms: bool) -> Option<String> {
        let check = |s: &str| matches!(self.ctx.expand(s, vocab), Expanded::Iri(ref x) if x == iri);
        if vocab && allow_terms {
            if let Some(list) = self.terms.get(iri) {
                if let Some((name, _)) = list.iter().find(|(name, _)| check(name)) {
                    return Some(name.clone());
                }
            }
        }
        let not_term = |s: &str| !allow_terms && self.ctx.terms.contains_key(s);
        for (namespace, prefix) in &self.prefixes {
            if let Some(suffix) = iri.strip_prefix(namespace.as_str()) {
                if suffix.is_empty() || suffix.starts_with("//") {
                    continue;
                }
                let compact = format!("{prefix}:{suffix}");
                if !self.ctx.terms.contains_key(&compact) && check(&compact) {
                    return Some(compact);
                }
            }
        }
        if not_term(iri) || !check(iri) {
            return None;
        }
        Some(iri.to_owned())
    }

    /// A property key that is no term, so no coercion applies to its values.
    fn plain_key(&self, iri: &str) -> Result<String, String> {
        self.iri_string(iri, true, false)
            .ok_or_else(|| format!("no key expands to the property <{iri}>"))
    }
}

#[derive(Default)]
struct Graph<'t> {
    subjects: HashMap<NamedOrBlankNode, Vec<&'t Triple>>,
    order: Vec<NamedOrBlankNode>,
    refs: HashMap<NamedOrBlankNode, usize>,
}

struct Emitter<'a, 't, F> {
    c: &'a Compactor,
    graph: &'a Graph<'t>,
    root: &'a NamedOrBlankNode,
    apart: &'a F,
    visited: HashSet<NamedOrBlankNode>,
    labels: HashMap<BlankNode, String>,
    /// Node objects open around the one being written ([`MAX_EMBEDDED`]).
    depth: usize,
}

/// Node objects written inside one another at most. Each level is a recursion of the emitter
/// (and later of the serialiser): a stored chain of 3,000 nodes each naming the next, which the
/// inbox accepts, ran the thread out of stack and aborted the node on its linked-data read.
/// A node past the limit is referenced there and written among `@included`.
const MAX_EMBEDDED: usize = 64;

fn as_node(term: &Term) -> Option<NamedOrBlankNode> {
    match term {
        Term::NamedNode(n) => Some(n.clone().into()),
        Term::BlankNode(b) => Some(b.clone().into()),
        _ => None,
    }
}

impl<F: Fn(&NamedNode) -> bool> Emitter<'_, '_, F> {
    fn embeddable(&self, node: &NamedOrBlankNode) -> bool {
        node != self.root
            && self.graph.refs.get(node) == Some(&1)
            && self.graph.subjects.contains_key(node)
            && match node {
                NamedOrBlankNode::NamedNode(n) => !(self.apart)(n),
                NamedOrBlankNode::BlankNode(_) => true,
            }
    }

    fn label(&mut self, b: &BlankNode) -> String {
        let next = self.labels.len();
        self.labels
            .entry(b.clone())
            .or_insert_with(|| format!("_:b{next}"))
            .clone()
    }

    /// `{"id": …}` for a node that is not embedded here.
    fn reference(&mut self, node: &NamedOrBlankNode) -> Result<Value, String> {
        let id = match node {
            NamedOrBlankNode::NamedNode(n) => self.id_string(n)?,
            NamedOrBlankNode::BlankNode(b) => self.label(b),
        };
        let mut map = Map::new();
        map.insert(self.c.id_key.clone(), Value::String(id));
        Ok(Value::Object(map))
    }

    fn id_string(&self, n: &NamedNode) -> Result<String, String> {
        self.c
            .iri_string(n.as_str(), false, true)
            .ok_or_else(|| format!("no string expands to the IRI <{}>", n.as_str()))
    }

    /// The node object of `node`; `embedded` when written at its only reference (no label).
    fn node(
        &mut self,
        node: &NamedOrBlankNode,
        embedded: bool,
    ) -> Result<Map<String, Value>, String> {
        self.visited.insert(node.clone());
        let mut map = Map::new();
        match node {
            NamedOrBlankNode::NamedNode(n) => {
                map.insert(self.c.id_key.clone(), Value::String(self.id_string(n)?));
            }
            NamedOrBlankNode::BlankNode(b) => {
                if !embedded && self.graph.refs.contains_key(node) {
                    map.insert(self.c.id_key.clone(), Value::String(self.label(b)));
                }
            }
        }
        let triples = self.graph.subjects.get(node).cloned().unwrap_or_default();
        let mut types = Vec::new();
        let mut properties: Vec<(String, Vec<Value>)> = Vec::new();
        for t in triples {
            if t.predicate.as_ref() == rdf::TYPE {
                let as_type = match &t.object {
                    Term::NamedNode(n) => self.c.iri_string(n.as_str(), true, true),
                    Term::BlankNode(b) => Some(self.label(b)),
                    _ => None,
                };
                if let Some(s) = as_type {
                    types.push(Value::String(s));
                    continue;
                }
            }
            let (key, value) = self.property(&t.predicate, &t.object)?;
            match properties.iter_mut().find(|(k, _)| *k == key) {
                Some((_, values)) => values.push(value),
                None => properties.push((key, vec![value])),
            }
        }
        match types.len() {
            0 => {}
            1 => {
                map.insert(self.c.type_key.clone(), types.remove(0));
            }
            _ => {
                map.insert(self.c.type_key.clone(), Value::Array(types));
            }
        }
        // Terms first, then compact IRIs, then full IRIs; each alphabetically.
        properties
            .sort_by_cached_key(|(key, _)| (key.contains("://"), key.contains(':'), key.clone()));
        for (key, mut values) in properties {
            let value = if values.len() == 1 {
                values.remove(0)
            } else {
                Value::Array(values)
            };
            map.insert(key, value);
        }
        Ok(map)
    }

    /// The key and value of one triple's predicate and object.
    fn property(
        &mut self,
        predicate: &NamedNode,
        object: &Term,
    ) -> Result<(String, Value), String> {
        let c = self.c;
        let terms: &[(String, Coercion)] =
            c.terms.get(predicate.as_str()).map_or(&[], Vec::as_slice);
        // Any term takes a node or value object: coercion applies to strings only.
        let any_key = |this: &Self| -> Result<String, String> {
            match terms.first() {
                Some((name, _)) => Ok(name.clone()),
                None => this.c.plain_key(predicate.as_str()),
            }
        };
        let uncoerced_key = || -> Result<String, String> {
            match terms.iter().find(|(_, co)| *co == Coercion::None) {
                Some((name, _)) => Ok(name.clone()),
                None => c.plain_key(predicate.as_str()),
            }
        };
        match object {
            Term::NamedNode(_) | Term::BlankNode(_) => {
                let node = as_node(object).ok_or("not a node")?;
                if self.embeddable(&node)
                    && !self.visited.contains(&node)
                    && self.depth < MAX_EMBEDDED
                {
                    let key = match terms.iter().find(|(_, co)| *co == Coercion::Id) {
                        Some((name, _)) => name.clone(),
                        None => any_key(self)?,
                    };
                    self.depth += 1;
                    let embedded = self.node(&node, true);
                    self.depth -= 1;
                    return Ok((key, Value::Object(embedded?)));
                }
                if let NamedOrBlankNode::NamedNode(n) = &node {
                    for (name, coercion) in terms {
                        let vocab = match coercion {
                            Coercion::Id => false,
                            Coercion::Vocab => true,
                            _ => continue,
                        };
                        if let Some(s) = c.iri_string(n.as_str(), vocab, true) {
                            return Ok((name.clone(), Value::String(s)));
                        }
                    }
                }
                Ok((any_key(self)?, self.reference(&node)?))
            }
            Term::Literal(literal) => {
                if literal.language().is_none() {
                    let datatype = literal.datatype();
                    if let Some((name, _)) = terms.iter().find(
                        |(_, co)| matches!(co, Coercion::Datatype(d) if d.as_ref() == datatype),
                    ) {
                        return Ok((name.clone(), Value::String(literal.value().to_owned())));
                    }
                    if let Some(native) = native(literal) {
                        return Ok((uncoerced_key()?, native));
                    }
                }
                Ok((any_key(self)?, self.value_object(literal)?))
            }
            #[allow(unreachable_patterns)]
            _ => Err("RDF-star triples are not stored".into()),
        }
    }

    fn value_object(&self, literal: &Literal) -> Result<Value, String> {
        let mut map = Map::new();
        map.insert("@value".into(), Value::String(literal.value().to_owned()));
        if let Some(language) = literal.language() {
            map.insert("@language".into(), Value::String(language.to_owned()));
        } else if literal.datatype() != xsd::STRING {
            let dt = literal.datatype().as_str();
            let s = self
                .c
                .iri_string(dt, true, true)
                .ok_or_else(|| format!("no string expands to the datatype <{dt}>"))?;
            map.insert("@type".into(), Value::String(s));
        }
        Ok(Value::Object(map))
    }
}

/// The JSON string, boolean or integer that expands to exactly this literal with no coercion.
fn native(literal: &Literal) -> Option<Value> {
    let text = literal.value();
    let datatype = literal.datatype();
    if datatype == xsd::STRING {
        return Some(Value::String(text.to_owned()));
    }
    if datatype == xsd::BOOLEAN && matches!(text, "true" | "false") {
        return Some(Value::Bool(text == "true"));
    }
    if datatype == xsd::INTEGER {
        if let Ok(i) = text.parse::<i64>() {
            if i.to_string() == text {
                return Some(Value::from(i));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
