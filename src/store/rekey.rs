//! Graph and node names that carry an organisation key ([`graphs::org_key`]) once carried the
//! DID's id segment (`…:org:<id>` → `<id>`). Two organisations on different nodes may have the
//! same segment, so two of them could share one contribution graph; the key is now a hash of
//! the whole DID. This upgrade renames what a data dir from before holds — graph names, node
//! names and the same names inside stored JSON (notices, notifications) — once, at start-up,
//! and then leaves a marker so later starts cost one look-up.
//!
//! Which DID an old key stood for is read from the store itself: every DID it holds, narrowed
//! by the consignment a name belongs to (its publisher and contributors) or, for an
//! organisation's own graphs, by this node's accounts. A key that still names two DIDs there
//! (the collision the new names prevent) is left as it was and logged.

use std::collections::{HashMap, HashSet};

use oxigraph::model::{GraphName, Literal, NamedNode, NamedOrBlankNode, Quad, Term};

use super::{graphs, Store};
use crate::error::Result;

const MINTED: &str = graphs::MINTED_PREFIX;
/// Names with an organisation key: `<kind>:<aig hex>:<key>` or `<kind>:<key>`.
const KEYED: [(&str, bool); 4] = [
    ("contribution", true),
    ("status", true),
    ("activities", false),
    ("notifications", false),
];
const LAYOUT: &str = "did-sha256";
/// Renames are written this many at a time.
const BATCH: usize = 10_000;

const MARKER: graphs::LayoutMarker = graphs::LayoutMarker {
    property: "orgKeys",
    value: LAYOUT,
};

/// The key the node used before: the id segment when it was plain alphanumeric.
pub fn legacy_org_key(org_did: &str) -> String {
    match org_did.rsplit_once(":org:") {
        Some((_, id)) if !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric()) => {
            id.to_owned()
        }
        _ => graphs::org_key(org_did),
    }
}

/// Renames the store's old-keyed names; returns how many quads changed. Blocking.
pub fn run(store: &Store) -> Result<usize> {
    if store.upgraded(&MARKER)? {
        return Ok(0);
    }
    let known = Known::read(store)?;
    let mut changed = 0;
    let mut batch = Vec::new();
    // The iterator reads one snapshot; the renames written meanwhile are not seen again.
    for quad in store.db().iter() {
        let quad = quad?;
        if let Some(renamed) = known.rename_quad(&quad) {
            batch.push((quad, renamed));
            if batch.len() == BATCH {
                changed += apply(store, &mut batch)?;
            }
        }
    }
    changed += apply(store, &mut batch)?;
    store.write(|tx| {
        tx.insert(&MARKER.quad());
        Ok(())
    })?;
    if changed > 0 {
        tracing::info!(
            quads = changed,
            "graph names re-keyed by whole organisation DIDs"
        );
    }
    Ok(changed)
}

fn apply(store: &Store, batch: &mut Vec<(Quad, Quad)>) -> Result<usize> {
    let n = batch.len();
    store.write(|tx| {
        for (old, new) in batch.iter() {
            tx.remove(old);
            tx.insert(new);
        }
        Ok(())
    })?;
    batch.clear();
    Ok(n)
}

/// The DIDs the store holds, by the key they had before.
#[derive(Default)]
struct Known {
    by_legacy: HashMap<String, Vec<String>>,
    /// DIDs a consignment node points at (publisher, contributors, circle), by aig hex.
    linked: HashMap<String, HashSet<String>>,
    /// This node's organisations (subjects of the accounts graph).
    local: HashSet<String>,
}

impl Known {
    fn read(store: &Store) -> Result<Self> {
        let accounts = GraphName::NamedNode(graphs::accounts());
        let mut dids = HashSet::new();
        let mut known = Known::default();
        for quad in store.db().iter() {
            let quad = quad?;
            let subject = match &quad.subject {
                NamedOrBlankNode::NamedNode(n) => Some(n.as_str()),
                _ => None,
            };
            let object = match &quad.object {
                Term::NamedNode(n) if n.as_str().starts_with("did:") => Some(n.as_str()),
                _ => None,
            };
            if let Some(s) = subject.filter(|s| s.starts_with("did:")) {
                dids.insert(s.to_owned());
                if quad.graph_name == accounts {
                    known.local.insert(s.to_owned());
                }
            }
            if let Some(o) = object {
                dids.insert(o.to_owned());
                if let Some(hex) = subject.and_then(graphs::consignment_hex) {
                    known
                        .linked
                        .entry(hex.to_owned())
                        .or_default()
                        .insert(o.to_owned());
                }
            }
        }
        for did in dids {
            known
                .by_legacy
                .entry(legacy_org_key(&did))
                .or_default()
                .push(did);
        }
        Ok(known)
    }

    /// The DID an old key in a name of consignment `hex` (or of no consignment) stood for.
    fn owner(&self, key: &str, hex: Option<&str>) -> Option<&str> {
        let candidates = self.by_legacy.get(key)?;
        if let [only] = candidates.as_slice() {
            return Some(only);
        }
        let fits: Vec<&String> = candidates
            .iter()
            .filter(|did| match hex {
                Some(hex) => self.linked.get(hex).is_some_and(|l| l.contains(*did)),
                None => self.local.contains(*did),
            })
            .collect();
        match fits.as_slice() {
            [only] => Some(only),
            _ => {
                tracing::warn!(
                    key,
                    hex,
                    "an old graph key names several organisations; kept"
                );
                None
            }
        }
    }

    /// `iri` with its old organisation key replaced, when it has one.
    fn rename(&self, iri: &str) -> Option<String> {
        let rest = iri.strip_prefix(MINTED)?;
        let (kind, rest) = rest.split_once(':')?;
        let (_, with_hex) = KEYED.iter().find(|(k, _)| *k == kind)?;
        let (hex, key) = if *with_hex {
            let (hex, key) = rest.split_once(':')?;
            (Some(hex), key)
        } else {
            (None, rest)
        };
        let did = self.owner(key, hex)?;
        let new_key = graphs::org_key(did);
        if new_key == key {
            return None;
        }
        Some(match hex {
            Some(hex) => format!("{MINTED}{kind}:{hex}:{new_key}"),
            None => format!("{MINTED}{kind}:{new_key}"),
        })
    }

    fn rename_node(&self, n: &NamedNode) -> Option<NamedNode> {
        self.rename(n.as_str()).map(NamedNode::new_unchecked)
    }

    /// A literal's text with every keyed name in it renamed (stored JSON carries names).
    fn rename_text(&self, text: &str) -> Option<String> {
        if !text.contains(MINTED) {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        let mut changed = false;
        while let Some(at) = rest.find(MINTED) {
            out.push_str(&rest[..at]);
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || ":%._-".contains(c)))
                .unwrap_or(tail.len());
            match self.rename(&tail[..end]) {
                Some(renamed) => {
                    out.push_str(&renamed);
                    changed = true;
                }
                None => out.push_str(&tail[..end]),
            }
            rest = &tail[end..];
        }
        out.push_str(rest);
        changed.then_some(out)
    }

    fn rename_term(&self, t: &Term) -> Option<Term> {
        match t {
            Term::NamedNode(n) => self.rename_node(n).map(Term::from),
            Term::Literal(l) => {
                let text = self.rename_text(l.value())?;
                Some(Term::from(match l.language() {
                    Some(lang) => Literal::new_language_tagged_literal_unchecked(text, lang),
                    None => Literal::new_typed_literal(text, l.datatype().into_owned()),
                }))
            }
            _ => None,
        }
    }

    fn rename_quad(&self, q: &Quad) -> Option<Quad> {
        let subject = match &q.subject {
            NamedOrBlankNode::NamedNode(n) => self.rename_node(n).map(NamedOrBlankNode::from),
            _ => None,
        };
        let object = self.rename_term(&q.object);
        let graph = match &q.graph_name {
            GraphName::NamedNode(n) => self.rename_node(n).map(GraphName::from),
            _ => None,
        };
        if subject.is_none() && object.is_none() && graph.is_none() {
            return None;
        }
        Some(Quad::new(
            subject.unwrap_or_else(|| q.subject.clone()),
            q.predicate.clone(),
            object.unwrap_or_else(|| q.object.clone()),
            graph.unwrap_or_else(|| q.graph_name.clone()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(dids: &[&str]) -> Known {
        let mut k = Known::default();
        for did in dids {
            k.by_legacy
                .entry(legacy_org_key(did))
                .or_default()
                .push((*did).to_owned());
        }
        k
    }

    #[test]
    fn old_keys_become_hashes_of_the_whole_did() {
        let a = "did:web:a.example:org:abc123";
        let k = known(&[a]);
        let old = format!("{MINTED}contribution:ff00:abc123");
        assert_eq!(
            k.rename(&old),
            Some(format!("{MINTED}contribution:ff00:{}", graphs::org_key(a)))
        );
        assert_eq!(
            k.rename(&format!("{MINTED}notifications:abc123")),
            Some(format!("{MINTED}notifications:{}", graphs::org_key(a)))
        );
        // Already new, or not keyed: left alone.
        assert_eq!(
            k.rename(&graphs::contribution("ff00", a).into_string()),
            None
        );
        assert_eq!(k.rename(&format!("{MINTED}consignment:ff00")), None);
        let json = format!(r#"{{"datasetId":"{old}","x":"{MINTED}event:1"}}"#);
        let renamed = k.rename_text(&json).unwrap();
        assert!(renamed.contains(&graphs::contribution("ff00", a).into_string()));
        assert!(renamed.contains(&format!("{MINTED}event:1\"")));
    }

    #[test]
    fn a_key_two_organisations_shared_is_settled_by_the_consignment_or_kept() {
        let a = "did:web:a.example:org:abc123";
        let b = "did:web:b.example:org:abc123";
        assert_ne!(graphs::org_key(a), graphs::org_key(b));
        let mut k = known(&[a, b]);
        k.linked
            .insert("ff00".into(), [b.to_owned()].into_iter().collect());
        assert_eq!(
            k.rename(&format!("{MINTED}contribution:ff00:abc123")),
            Some(graphs::contribution("ff00", b).into_string())
        );
        assert_eq!(k.rename(&format!("{MINTED}contribution:ee00:abc123")), None);
        k.local.insert(a.to_owned());
        assert_eq!(
            k.rename(&format!("{MINTED}activities:abc123")),
            Some(graphs::activities(a).into_string())
        );
    }
}
