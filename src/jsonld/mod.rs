//! Offline JSON-LD for the node's known contexts: expansion at intake, compaction for the
//! linked-data reads.
//!
//! A generic JSON-LD processor re-processes the 400 KB D23B context per document (~300 ms with
//! oxjsonld) or clones a processed copy (~5 ms with the json-ld crate). The contexts a caller may
//! name are fixed and shipped in `contexts/`, so each is compiled once at start-up into a term
//! table, and every chain of them a document uses (AS2, then D23B inside `object`) is merged once
//! and cached.
//!
//! - [`expand`]: `serde_json::Value` straight to triples.
//! - [`compact`]: triples back to one JSON-LD tree, checked term by term against the same
//!   tables so that expanding the output gives exactly the input triples.

pub mod compact;
pub mod expand;

pub use compact::Compactor;
pub use expand::{Expander, Expansion};

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use oxigraph::model::NamedNode;
use serde_json::{Map, Value};

/// Why a document cannot be expanded. Always the caller's fault (a 400).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonLdError {
    /// Where in the document, e.g. `object.atArrivalTransportMovement.arrivalEvent[0]`.
    pub path: String,
    pub message: String,
}

impl fmt::Display for JsonLdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Coercion {
    None,
    Id,
    Vocab,
    Datatype(NamedNode),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Container {
    None,
    List,
    Language,
}

#[derive(Debug, Clone)]
struct TermDef {
    /// An absolute IRI, a blank node id (`_:x`) or a keyword (`@id`, `@type`).
    iri: String,
    coercion: Coercion,
    container: Container,
    /// May be used as the prefix of a compact IRI (JSON-LD 1.1: a simple term definition
    /// whose IRI ends with a gen-delim character).
    prefix: bool,
}

/// What kind of value a context gives a property (for the shape checks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PropertyKind {
    /// `@type: @id` or `@vocab`: a nested object or an IRI.
    Node,
    /// A datatype coercion: a literal (of that datatype when it is a string).
    Literal(Option<NamedNode>),
    /// No coercion: anything.
    Any,
}

/// The terms in force at one point of a document.
#[derive(Debug, Default)]
pub struct ActiveContext {
    terms: HashMap<String, TermDef>,
    vocab: Option<String>,
    /// The chain of context documents that built it (indexes into `Contexts::docs`).
    chain: Vec<usize>,
}

struct ContextDoc {
    url: String,
    terms: HashMap<String, TermDef>,
    vocab: Option<String>,
}

/// Known context documents and the merged contexts built from them.
pub struct Contexts {
    urls: HashMap<String, usize>,
    docs: Vec<ContextDoc>,
    merged: RwLock<HashMap<Vec<usize>, Arc<ActiveContext>>>,
}

/// How many context documents one chain may stack; far beyond what a payload needs.
const MAX_CHAIN: usize = 6;
/// How many merged contexts are kept; other chains are rebuilt per use. Chains hold each
/// document once, so every order of the node's documents fits.
const MAX_CACHED: usize = 64;

const KEYWORDS: &[&str] = &[
    "@base",
    "@container",
    "@context",
    "@direction",
    "@graph",
    "@id",
    "@import",
    "@included",
    "@index",
    "@json",
    "@language",
    "@list",
    "@nest",
    "@none",
    "@prefix",
    "@propagate",
    "@protected",
    "@reverse",
    "@set",
    "@type",
    "@value",
    "@version",
    "@vocab",
];

impl Contexts {
    pub fn new() -> Self {
        Self {
            urls: HashMap::new(),
            docs: Vec::new(),
            merged: RwLock::new(HashMap::new()),
        }
    }

    /// Compiles a context document and serves it for `url` and each alias.
    pub fn add(&mut self, url: &str, aliases: &[&str], document: &str) -> Result<(), String> {
        let json: Value = serde_json::from_str(document.trim_start_matches('\u{feff}'))
            .map_err(|e| format!("{url}: {e}"))?;
        let Some(Value::Object(ctx)) = json.get("@context") else {
            return Err(format!("{url}: no @context object"));
        };
        let doc = compile(url, ctx)?;
        let index = self.docs.len();
        self.docs.push(doc);
        self.urls.insert(url.to_owned(), index);
        for alias in aliases {
            self.urls.insert((*alias).to_owned(), index);
        }
        Ok(())
    }

    /// The URLs callers may name, sorted (for error messages).
    pub fn supported_urls(&self) -> Vec<&str> {
        let mut urls: Vec<&str> = self.urls.keys().map(String::as_str).collect();
        urls.sort_unstable();
        urls
    }

    pub fn is_known(&self, url: &str) -> bool {
        self.urls.contains_key(url)
    }

    pub fn empty(&self) -> Arc<ActiveContext> {
        Arc::new(ActiveContext::default())
    }

    /// The active context after processing the `@context` value `value` on top of `active`.
    pub fn extend(
        &self,
        active: &Arc<ActiveContext>,
        value: &Value,
        path: &str,
    ) -> Result<Arc<ActiveContext>, JsonLdError> {
        let err = |message: String| JsonLdError {
            path: join(path, "@context"),
            message,
        };
        let mut chain = active.chain.clone();
        let mut push = |url: &Value| -> Result<(), JsonLdError> {
            match url {
                Value::String(url) => match self.urls.get(url.as_str()) {
                    Some(index) => {
                        chain.push(*index);
                        Ok(())
                    }
                    None => Err(err(format!(
                        "the context {url:?} is not one this node has; it never fetches contexts. Supported: {}",
                        self.supported_urls().join(", ")
                    ))),
                },
                Value::Object(_) => Err(err(
                    "inline context definitions are not accepted; name the supported context URLs".into(),
                )),
                Value::Null => Err(err("a null context is not accepted".into())),
                _ => Err(err("a context must be a URL string".into())),
            }
        };
        match value {
            Value::Array(items) => items.iter().try_for_each(&mut push)?,
            single => push(single)?,
        }
        if chain.len() > MAX_CHAIN {
            return Err(err(format!("more than {MAX_CHAIN} contexts stacked")));
        }
        // A document named again overrides every term it defined before, so only its last
        // place counts: the chain keeps that one. Chains then differ only in order, few
        // enough to all stay cached — repeats made up to 126 chains, past the cache, and
        // 40,000 nodes naming an uncached one cost 43 s of merging.
        let mut seen = Vec::with_capacity(chain.len());
        for index in chain.iter().rev() {
            if !seen.contains(index) {
                seen.push(*index);
            }
        }
        seen.reverse();
        let chain = seen;
        if chain == active.chain {
            return Ok(active.clone());
        }
        if let Some(found) = self
            .merged
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&chain)
        {
            return Ok(found.clone());
        }
        let mut merged = ActiveContext {
            chain: chain.clone(),
            ..ActiveContext::default()
        };
        for index in &chain {
            let doc = &self.docs[*index];
            for (term, def) in &doc.terms {
                merged.terms.insert(term.clone(), def.clone());
            }
            if doc.vocab.is_some() {
                merged.vocab = doc.vocab.clone();
            }
        }
        let merged = Arc::new(merged);
        let mut cache = self.merged.write().unwrap_or_else(|p| p.into_inner());
        if cache.len() < MAX_CACHED {
            cache.insert(chain, merged.clone());
        }
        Ok(merged)
    }

    /// Property IRI → kind of value, for every term of the context served at `url`.
    pub fn property_kinds(&self, url: &str) -> HashMap<String, PropertyKind> {
        let Some(index) = self.urls.get(url) else {
            return HashMap::new();
        };
        self.docs[*index]
            .terms
            .values()
            .filter(|d| !d.iri.starts_with('@') && !d.prefix)
            .map(|d| {
                let kind = match &d.coercion {
                    Coercion::Id | Coercion::Vocab => PropertyKind::Node,
                    Coercion::Datatype(dt) => PropertyKind::Literal(Some(dt.clone())),
                    Coercion::None => PropertyKind::Any,
                };
                (d.iri.clone(), kind)
            })
            .collect()
    }

    /// The URL a chain entry came from (for tests and diagnostics).
    pub fn url_of(&self, index: usize) -> &str {
        &self.docs[index].url
    }
}

impl Default for Contexts {
    fn default() -> Self {
        Self::new()
    }
}

/// A term definition as written: `@id`, `@type`, `@container`, and whether it was a plain
/// string (a simple term definition).
type RawTerm<'a> = (&'a str, Option<&'a str>, Option<&'a str>, bool);

/// A context's `@vocab` and its term definitions as written, before any IRI is made absolute
/// (compact IRIs may use prefixes defined anywhere in the document).
fn raw_terms<'c>(
    url: &str,
    ctx: &'c Map<String, Value>,
) -> Result<(Option<String>, HashMap<&'c str, RawTerm<'c>>), String> {
    let mut vocab = None;
    let mut raw: HashMap<&str, RawTerm<'_>> = HashMap::new();
    for (term, def) in ctx {
        match (term.as_str(), def) {
            ("@vocab", Value::String(v)) => vocab = Some(v.clone()),
            ("@version", _) => {}
            (t, _) if t.starts_with('@') => {
                return Err(format!("{url}: unsupported context keyword {t}"))
            }
            (t, Value::String(iri)) => {
                raw.insert(t, (iri.as_str(), None, None, true));
            }
            (t, Value::Object(o)) => {
                for k in o.keys() {
                    if !matches!(k.as_str(), "@id" | "@type" | "@container") {
                        return Err(format!("{url}: term {t} uses unsupported {k}"));
                    }
                }
                let id = o.get("@id").and_then(Value::as_str).unwrap_or(t);
                let ty = o.get("@type").and_then(Value::as_str);
                let container = o.get("@container").and_then(Value::as_str);
                raw.insert(t, (id, ty, container, false));
            }
            (t, _) => return Err(format!("{url}: unsupported definition of {t}")),
        }
    }
    Ok((vocab, raw))
}

/// Compiles one context document's term definitions. Every IRI is made absolute against the
/// document's own prefixes.
fn compile(url: &str, ctx: &Map<String, Value>) -> Result<ContextDoc, String> {
    let (vocab, raw) = raw_terms(url, ctx)?;
    let absolute = |value: &str| -> Result<String, String> {
        if value.starts_with('@') || value.starts_with("_:") {
            return Ok(value.to_owned());
        }
        if let Some((prefix, suffix)) = value.split_once(':') {
            if !suffix.starts_with("//") {
                if let Some((iri, None, None, true)) = raw.get(prefix) {
                    return Ok(format!("{iri}{suffix}"));
                }
            }
            return Ok(value.to_owned());
        }
        if let Some((iri, _, _, _)) = raw.get(value) {
            return Ok((*iri).to_owned());
        }
        match &vocab {
            Some(v) => Ok(format!("{v}{value}")),
            None => Err(format!("{url}: cannot make {value:?} absolute")),
        }
    };
    let mut terms = HashMap::new();
    for (term, (id, ty, container, simple)) in &raw {
        let iri = absolute(id)?;
        let coercion = match *ty {
            None => Coercion::None,
            Some("@id") => Coercion::Id,
            Some("@vocab") => Coercion::Vocab,
            Some(dt) => Coercion::Datatype(
                NamedNode::new(absolute(dt)?).map_err(|e| format!("{url}: term {term}: {e}"))?,
            ),
        };
        let container = match *container {
            None => Container::None,
            Some("@list") => Container::List,
            Some("@language") => Container::Language,
            Some(other) => {
                return Err(format!("{url}: term {term}: unsupported container {other}"))
            }
        };
        let prefix = *simple
            && (iri.ends_with([':', '/', '?', '#', '[', ']', '@']) || iri.starts_with("_:"));
        terms.insert(
            (*term).to_owned(),
            TermDef {
                iri,
                coercion,
                container,
                prefix,
            },
        );
    }
    Ok(ContextDoc {
        url: url.to_owned(),
        terms,
        vocab,
    })
}

/// The result of expanding one IRI-ish string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expanded {
    Keyword(String),
    Iri(String),
    Blank(String),
    /// Neither absolute nor a blank node: a full processor drops it when producing RDF.
    Relative,
}

impl ActiveContext {
    fn expand(&self, value: &str, vocab: bool) -> Expanded {
        if KEYWORDS.contains(&value) {
            return Expanded::Keyword(value.to_owned());
        }
        if let Some(def) = self.terms.get(value) {
            if def.iri.starts_with('@') {
                return Expanded::Keyword(def.iri.clone());
            }
            if vocab {
                return classify(&def.iri);
            }
        }
        if let Some((prefix, suffix)) = value.split_once(':') {
            if prefix == "_" {
                return Expanded::Blank(suffix.to_owned());
            }
            if !suffix.starts_with("//") {
                if let Some(def) = self.terms.get(prefix).filter(|d| d.prefix) {
                    return classify(&format!("{}{suffix}", def.iri));
                }
            }
            if has_scheme(value) {
                return Expanded::Iri(value.to_owned());
            }
        }
        if vocab {
            if let Some(v) = &self.vocab {
                return classify(&format!("{v}{value}"));
            }
        }
        Expanded::Relative
    }

    fn term(&self, key: &str) -> Option<&TermDef> {
        self.terms.get(key)
    }
}

fn classify(iri: &str) -> Expanded {
    if let Some(label) = iri.strip_prefix("_:") {
        Expanded::Blank(label.to_owned())
    } else if iri.starts_with('@') {
        Expanded::Keyword(iri.to_owned())
    } else if has_scheme(iri) {
        Expanded::Iri(iri.to_owned())
    } else {
        Expanded::Relative
    }
}

fn has_scheme(value: &str) -> bool {
    let Some((scheme, _)) = value.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn join(path: &str, key: &str) -> String {
    // A key is as long as the body allows, and every item below it carries its path: a
    // 200 KB key over 10,000 items was 2 GB of paths. Its start names it well enough.
    const SHOWN: usize = 64;
    let key = match key.char_indices().nth(SHOWN) {
        Some((end, _)) => std::borrow::Cow::Owned(format!("{}…", &key[..end])),
        None => std::borrow::Cow::Borrowed(key),
    };
    if path.is_empty() {
        key.into_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The node's offline contexts, each compiled once.
pub fn load_contexts() -> crate::error::Result<Contexts> {
    let mut contexts = Contexts::new();
    let add = |c: &mut Contexts, url: &str, aliases: &[&str], text: &str| {
        c.add(url, aliases, text)
            .map_err(crate::error::Error::internal)
    };
    add(
        &mut contexts,
        crate::vocab::AS_CONTEXT,
        crate::vocab::AS_CONTEXT_ALIASES,
        include_str!("../../contexts/activitystreams.jsonld"),
    )?;
    add(
        &mut contexts,
        crate::vocab::UNECE_CONTEXT,
        crate::vocab::UNECE_CONTEXT_ALIASES,
        include_str!("../../contexts/unece-context-D23B.jsonld"),
    )?;
    Ok(contexts)
}
