//! Expansion: a JSON-LD document under the compiled contexts → triples.
//!
//! The subset accepted is what the API's payloads use: remote contexts by URL (never inline,
//! never fetched), node objects with `@id`/`@type`, value objects (`@value`, `@type`,
//! `@language`), arrays, type coercion (`@id`, `@vocab`, datatypes), `@list` and `@language`
//! containers, and — only when asked for, for the node's own output — `@included`. Anything
//! else (inline contexts, `@graph`, `@reverse`, `@nest`, `@set`/`@list` objects, `@index`,
//! `@json`, ...) is refused with a message naming it, so a document is either expanded exactly
//! as a full processor would, or rejected. Tests compare the output with oxjsonld (Oxigraph's
//! full JSON-LD parser) on the examples and generated inputs.

use std::collections::HashMap;
use std::sync::Arc;

use oxigraph::model::vocab::{rdf, xsd};
use oxigraph::model::{BlankNode, Literal, NamedNode, NamedOrBlankNode, Term, Triple};
use serde_json::{Map, Value};

use super::{join, ActiveContext, Coercion, Container, Contexts, Expanded, JsonLdError, TermDef};

/// The triples of one document, plus the keys that expanded to nothing (a full processor drops
/// them silently; the node reports them to the shape checks).
#[derive(Debug, Default)]
pub struct Expansion {
    pub triples: Vec<Triple>,
    /// At most [`MAX_DROPPED`]; the rest only counted in `dropped_more`.
    pub dropped: Vec<String>,
    pub dropped_more: usize,
    /// Paths whose `@id` the fixed subject replaced (see [`Expander::fix_subject`]).
    pub replaced_ids: Vec<String>,
    /// The document's label of each blank node written `_:label` (e.g. a code that AS2's
    /// `@vocab: "_:"` turned into a blank node), so errors can show what was sent.
    pub labels: HashMap<BlankNode, String>,
    /// Where each node object was written (`object.arrivalEvent[0]`), the first place when
    /// several name one node: the shape checks report failures at the path as sent, array
    /// indexes included, which RDF alone cannot give.
    pub node_paths: HashMap<NamedOrBlankNode, String>,
}

/// Dropped keys listed at most: each is a failure of the inbox's checks, and a 300 KB body of
/// 10,000 unknown keys listed every one of them (with its path) in the log entry it answered.
pub const MAX_DROPPED: usize = 1_000;

impl Expansion {
    fn note_dropped(&mut self, path: String) {
        if self.dropped.len() < MAX_DROPPED {
            self.dropped.push(path);
        } else {
            self.dropped_more += 1;
        }
    }
}

/// Expands documents into triples. One per document: blank node labels (`_:x`) are scoped to it.
pub struct Expander<'a> {
    contexts: &'a Contexts,
    labels: HashMap<String, BlankNode>,
    out: Expansion,
    /// Subjects the caller fixes for the node at a path; `true`: they win over an `@id` there.
    fixed: HashMap<String, (NamedOrBlankNode, bool)>,
    /// Subjects of the nodes at top-level paths (`actor`, `target`, ...).
    subjects: HashMap<String, NamedOrBlankNode>,
    /// Whether `@included` blocks are accepted (the node's own linked-data output uses them;
    /// the inbox does not).
    included: bool,
}

impl<'a> Expander<'a> {
    pub fn new(contexts: &'a Contexts) -> Self {
        Self {
            contexts,
            labels: HashMap::new(),
            out: Expansion::default(),
            fixed: HashMap::new(),
            subjects: HashMap::new(),
            included: false,
        }
    }

    /// Also accepts `@included` blocks of node objects (JSON-LD 1.1), as the node's own
    /// compacted output has them.
    pub fn with_included(mut self) -> Self {
        self.included = true;
        self
    }

    /// Gives the node object at `path` (`""` for the document, `object`, ...) the subject
    /// `subject` instead of a blank node. With `over_id`, it wins over an `@id` there (a
    /// string; its path is noted in [`Expansion::replaced_ids`]); without, an `@id` wins.
    pub fn fix_subject(&mut self, path: &str, subject: NamedOrBlankNode, over_id: bool) {
        self.fixed.insert(path.to_owned(), (subject, over_id));
    }

    /// The subject of the node object at a top-level path, once expanded.
    pub fn subject_at(&self, path: &str) -> Option<NamedOrBlankNode> {
        self.subjects.get(path).cloned()
    }

    pub fn finish(self) -> Expansion {
        self.out
    }

    /// Expands a top-level node object; returns its subject.
    pub fn document(&mut self, doc: &Map<String, Value>) -> Result<NamedOrBlankNode, JsonLdError> {
        let empty = self.contexts.empty();
        self.node(doc, &empty, "")
    }

    /// The document's blank node for `_:label`; `None` when the label is not a valid blank
    /// node identifier (a full processor drops such values).
    fn blank(&mut self, label: &str) -> Option<BlankNode> {
        if let Some(b) = self.labels.get(label) {
            return Some(b.clone());
        }
        BlankNode::new(label).ok()?;
        let b = BlankNode::default();
        self.labels.insert(label.to_owned(), b.clone());
        self.out.labels.insert(b.clone(), label.to_owned());
        Some(b)
    }

    /// An expanded IRI-ish value as an RDF node; `None` (and a note) when it is relative or
    /// not a valid IRI or blank node identifier, which a full processor drops.
    fn node_term(&mut self, expanded: Expanded, path: &str) -> Option<Term> {
        let term = match expanded {
            Expanded::Iri(iri) => NamedNode::new(iri).ok().map(Term::from),
            Expanded::Blank(label) => self.blank(&label).map(Term::from),
            Expanded::Relative | Expanded::Keyword(_) => None,
        };
        if term.is_none() {
            self.out.note_dropped(path.to_owned());
        }
        term
    }

    fn error(path: &str, message: impl Into<String>) -> JsonLdError {
        JsonLdError {
            path: path.to_owned(),
            message: message.into(),
        }
    }

    /// Expands a node object under `active`; returns its subject.
    pub fn node(
        &mut self,
        obj: &Map<String, Value>,
        active: &Arc<ActiveContext>,
        path: &str,
    ) -> Result<NamedOrBlankNode, JsonLdError> {
        let ctx = match obj.get("@context") {
            Some(value) => self.contexts.extend(active, value, path)?,
            None => active.clone(),
        };
        let keys = self.keys(obj, &ctx, path)?;
        let subject = self.subject(keys.id, &ctx, path)?;
        if !path.contains(['.', '[']) {
            self.subjects.insert(path.to_owned(), subject.clone());
        }
        self.out
            .node_paths
            .entry(subject.clone())
            .or_insert_with(|| path.to_owned());
        if let Some((key, value)) = keys.types {
            self.types(&subject, value, &ctx, &join(path, key))?;
        }
        for (key, iri, value) in keys.properties {
            let predicate = match iri.map(NamedNode::new) {
                Some(Ok(p)) => Some(p),
                Some(Err(_)) => {
                    self.out.note_dropped(join(path, key));
                    None
                }
                None => None,
            };
            let def = ctx.term(key);
            let prop_path = join(path, key);
            self.property(&subject, predicate.as_ref(), def, value, &ctx, &prop_path)?;
        }
        if let Some((key, value)) = keys.included {
            for (i, item) in items(value).iter().enumerate() {
                let item_path = format!("{}[{i}]", join(path, key));
                match item {
                    Value::Object(obj) if !self.has_keyword(obj, &ctx, "@value") => {
                        self.node(obj, &ctx, &item_path)?;
                    }
                    _ => return Err(Self::error(&item_path, "@included holds node objects")),
                }
            }
        }
        Ok(subject)
    }

    /// A node object's keys, each expanded once: keywords (and their aliases) apart from
    /// properties.
    fn keys<'o>(
        &mut self,
        obj: &'o Map<String, Value>,
        ctx: &ActiveContext,
        path: &str,
    ) -> Result<NodeKeys<'o>, JsonLdError> {
        let mut keys = NodeKeys {
            id: None,
            types: None,
            included: None,
            properties: Vec::with_capacity(obj.len()),
        };
        for (key, value) in obj {
            if key == "@context" {
                continue;
            }
            match ctx.expand(key, true) {
                Expanded::Keyword(k) => match k.as_str() {
                    "@id" => {
                        if keys.id.replace(value).is_some() {
                            return Err(Self::error(path, "more than one @id"));
                        }
                    }
                    "@type" => {
                        if keys.types.replace((key, value)).is_some() {
                            return Err(Self::error(path, "more than one @type"));
                        }
                    }
                    "@value" => {
                        return Err(Self::error(path, "a value object is not allowed here"))
                    }
                    "@included" if self.included => keys.included = Some((key, value)),
                    other => {
                        return Err(Self::error(
                            &join(path, key),
                            format!("the JSON-LD keyword {other} is not accepted"),
                        ))
                    }
                },
                Expanded::Iri(iri) => keys.properties.push((key, Some(iri), value)),
                Expanded::Blank(_) => {
                    // A blank node property (AS2's `@vocab: "_:"`) survives expansion, so its
                    // nested nodes still become triples; only the linking triple is dropped.
                    if !value.is_null() {
                        self.out.note_dropped(join(path, key));
                    }
                    keys.properties.push((key, None, value));
                }
                Expanded::Relative => {
                    // Expansion drops the key with everything below it.
                    if !value.is_null() {
                        self.out.note_dropped(join(path, key));
                    }
                }
            }
        }
        Ok(keys)
    }

    /// The node's subject: its `@id`, the one fixed for its path, or a fresh blank node.
    fn subject(
        &mut self,
        id: Option<&Value>,
        ctx: &ActiveContext,
        path: &str,
    ) -> Result<NamedOrBlankNode, JsonLdError> {
        let fixed = self.fixed.get(path).cloned();
        let id_path = || join(path, "@id");
        if let (Some((subject, true)), Some(id)) = (&fixed, id) {
            if !id.is_string() {
                return Err(Self::error(&id_path(), "must be a string"));
            }
            self.out.replaced_ids.push(id_path());
            return Ok(subject.clone());
        }
        Ok(match id {
            None => match fixed {
                Some((subject, _)) => subject,
                None => BlankNode::default().into(),
            },
            Some(Value::String(s)) => match ctx.expand(s, false) {
                Expanded::Iri(iri) => NamedNode::new(&iri)
                    .map_err(|e| Self::error(&id_path(), format!("invalid IRI {iri:?}: {e}")))?
                    .into(),
                Expanded::Blank(label) => self
                    .blank(&label)
                    .ok_or_else(|| Self::error(&id_path(), format!("invalid blank node id {s:?}")))?
                    .into(),
                _ => {
                    return Err(Self::error(
                        &id_path(),
                        format!("{s:?} is not an absolute IRI or blank node id"),
                    ))
                }
            },
            Some(_) => return Err(Self::error(&id_path(), "must be a string")),
        })
    }

    /// The `rdf:type` triples of a node's `@type` (one string or a list of them).
    fn types(
        &mut self,
        subject: &NamedOrBlankNode,
        value: &Value,
        ctx: &ActiveContext,
        type_path: &str,
    ) -> Result<(), JsonLdError> {
        for item in items(value) {
            let Value::String(t) = item else {
                return Err(Self::error(type_path, "a type must be a string"));
            };
            let expanded = ctx.expand(t, true);
            if let Expanded::Keyword(k) = &expanded {
                return Err(Self::error(type_path, format!("{k} is not a type")));
            }
            let Some(object) = self.node_term(expanded, type_path) else {
                continue;
            };
            self.out
                .triples
                .push(Triple::new(subject.clone(), rdf::TYPE, object));
        }
        Ok(())
    }

    /// Emits the triples of one property; with no `predicate` only the triples of nested
    /// nodes are emitted, not the link to them.
    fn property(
        &mut self,
        subject: &NamedOrBlankNode,
        predicate: Option<&NamedNode>,
        def: Option<&TermDef>,
        value: &Value,
        ctx: &Arc<ActiveContext>,
        path: &str,
    ) -> Result<(), JsonLdError> {
        let container = def.map_or(&Container::None, |d| &d.container);
        match container {
            Container::Language => {
                let Value::Object(map) = value else {
                    return Err(Self::error(path, "a language map must be an object"));
                };
                for (language, texts) in map {
                    let single = std::slice::from_ref(texts);
                    let items = match texts {
                        Value::Array(items) => items.as_slice(),
                        _ => single,
                    };
                    for text in items {
                        let literal = match text {
                            Value::Null => continue,
                            Value::String(s) if language == "@none" => {
                                Literal::new_simple_literal(s)
                            }
                            Value::String(s) => Literal::new_language_tagged_literal(s, language)
                                .map_err(|e| {
                                Self::error(path, format!("invalid language tag {language:?}: {e}"))
                            })?,
                            _ => {
                                return Err(Self::error(
                                    path,
                                    "language map values must be strings",
                                ))
                            }
                        };
                        self.link(subject, predicate, literal);
                    }
                }
                Ok(())
            }
            Container::List => {
                let single = std::slice::from_ref(value);
                let items = match value {
                    Value::Array(items) => items.as_slice(),
                    Value::Null => &[],
                    _ => single,
                };
                let mut objects = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let item_path = format!("{path}[{i}]");
                    if item.is_array() {
                        return Err(Self::error(&item_path, "lists of lists are not accepted"));
                    }
                    if let Some(object) = self.object(def, item, ctx, &item_path)? {
                        objects.push(object);
                    }
                }
                if predicate.is_some() {
                    let head = self.list(objects);
                    self.link(subject, predicate, head);
                }
                Ok(())
            }
            Container::None => {
                if let Value::Array(items) = value {
                    // Expansion flattens nested arrays outside lists.
                    for (i, item) in items.iter().enumerate() {
                        let item_path = format!("{path}[{i}]");
                        self.property(subject, predicate, def, item, ctx, &item_path)?;
                    }
                } else if let Some(object) = self.object(def, value, ctx, path)? {
                    self.link(subject, predicate, object);
                }
                Ok(())
            }
        }
    }

    fn link(
        &mut self,
        subject: &NamedOrBlankNode,
        predicate: Option<&NamedNode>,
        object: impl Into<Term>,
    ) {
        if let Some(p) = predicate {
            self.out
                .triples
                .push(Triple::new(subject.clone(), p.clone(), object));
        }
    }

    fn list(&mut self, items: Vec<Term>) -> Term {
        let mut head: Term = rdf::NIL.into_owned().into();
        for item in items.into_iter().rev() {
            let cell = BlankNode::default();
            self.out
                .triples
                .push(Triple::new(cell.clone(), rdf::FIRST, item));
            self.out
                .triples
                .push(Triple::new(cell.clone(), rdf::REST, head));
            head = cell.into();
        }
        head
    }

    /// The RDF object for one (non-array) value of a property; `None` when a full processor
    /// would produce no triple for it.
    fn object(
        &mut self,
        def: Option<&TermDef>,
        value: &Value,
        ctx: &Arc<ActiveContext>,
        path: &str,
    ) -> Result<Option<Term>, JsonLdError> {
        let coercion = def.map_or(&Coercion::None, |d| &d.coercion);
        Ok(match value {
            Value::Null => None,
            Value::String(s) => match coercion {
                Coercion::None => Some(Literal::new_simple_literal(s).into()),
                Coercion::Datatype(dt) => Some(Literal::new_typed_literal(s, dt.clone()).into()),
                Coercion::Id | Coercion::Vocab => {
                    let expanded = ctx.expand(s, matches!(coercion, Coercion::Vocab));
                    self.node_term(expanded, path)
                }
            },
            Value::Bool(_) | Value::Number(_) => {
                let datatype = match coercion {
                    Coercion::Datatype(dt) => Some(dt.clone()),
                    _ => None,
                };
                Some(native_literal(value, datatype, path)?.into())
            }
            Value::Object(obj) => {
                if obj.contains_key("@value") || self.has_keyword(obj, ctx, "@value") {
                    self.value_object(obj, ctx, path)?.map(Term::from)
                } else {
                    Some(self.node(obj, ctx, path)?.into())
                }
            }
            Value::Array(_) => return Err(Self::error(path, "nested arrays are not accepted")),
        })
    }

    fn has_keyword(&self, obj: &Map<String, Value>, ctx: &ActiveContext, keyword: &str) -> bool {
        obj.keys()
            .any(|k| matches!(ctx.expand(k, true), Expanded::Keyword(ref x) if x == keyword))
    }
}

/// A node object's keys, sorted: the keywords the node accepts, then its properties (key,
/// expanded IRI — none for a blank node property —, value).
struct NodeKeys<'o> {
    id: Option<&'o Value>,
    types: Option<(&'o String, &'o Value)>,
    included: Option<(&'o String, &'o Value)>,
    properties: Vec<(&'o String, Option<String>, &'o Value)>,
}

/// A value as a list: its items, or itself alone.
fn items(value: &Value) -> &[Value] {
    match value {
        Value::Array(items) => items.as_slice(),
        single => std::slice::from_ref(single),
    }
}

mod values;

use values::native_literal;

#[cfg(test)]
mod tests;
