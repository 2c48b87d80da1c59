//! An added document: whether it is a new revision, and the revision's facts (which
//! [`crate::documents::revision`] decides) written in the contribution graph.

use oxigraph::model::{NamedNode, NamedOrBlankNode};
use oxigraph::store::Transaction;
use serde_json::{Map, Value};

use super::lookup::Record;
use super::writer::Writer;
use super::Apply;
use crate::consignment::ports::string_value;
use crate::documents::{revision, Content, Revision};
use crate::error::Result;
use crate::intake::log::TaskError;

/// A new revision of the added document.
pub(super) struct Revising<'c> {
    pub content: &'c Content,
    /// The current revision, which the new one supersedes.
    pub previous: Option<(NamedNode, Revision)>,
}

impl<'a> Apply<'a> {
    /// Compares the document with its current revision in the caller's contribution graph:
    /// `None` when it is that revision again (same content and type), and nothing changes.
    pub(super) fn revising(
        &self,
        tx: &Transaction<'_>,
        graph: &NamedNode,
        record: &Record,
        target_key: &str,
    ) -> Result<Result<Option<Revising<'a>>, TaskError>> {
        let Some(content) = self.content else {
            // The consignment appeared after the check made before taking the content.
            return Ok(Err(TaskError::not_found(format!(
                "no consignment with globalId {target_key:?} was available to your organisation"
            ))));
        };
        let object = self.activity.object();
        // A document without an identifier is new: its id is the node this activity minted.
        let previous = match string_value(object.get("identifier")) {
            Some(id) => revision::current(self.queries, tx, graph, &record.node(), id)?,
            None => None,
        };
        if let Some((_, prev)) = &previous {
            let type_code = string_value(object.get("documentTypeCode")).unwrap_or_default();
            if prev.is_same(content, type_code) {
                return Ok(Ok(None));
            }
        }
        Ok(Ok(Some(Revising { content, previous })))
    }

    /// The document's id: its `identifier`, else its node's IRI (its `id`) — the spec's
    /// Document table requires neither, and every document needs an id to be read by. No
    /// caller may send an identifier in the node's namespace (`checks`), so no other document
    /// can take that id.
    pub(super) fn document_id(&self) -> &str {
        string_value(self.activity.object().get("identifier")).unwrap_or(match self.object_root {
            NamedOrBlankNode::NamedNode(node) => node.as_str(),
            // Never: an Add's object root is the node it mints.
            NamedOrBlankNode::BlankNode(node) => node.as_str(),
        })
    }

    /// Writes the revision's facts on the document's node.
    pub(super) fn revision(
        &self,
        w: &mut Writer<'_, '_>,
        node: &NamedNode,
        graph: &NamedNode,
        object: &Map<String, Value>,
        content: &Content,
        previous: Option<(NamedNode, Revision)>,
    ) {
        let new = revision::New {
            node,
            document_id: self.document_id(),
            document_type_code: string_value(object.get("documentTypeCode")).unwrap_or_default(),
            organization: self.org(),
            user: &self.caller.user,
            now: self.now,
        };
        w.triples(
            &revision::facts(&new, content, previous, self.attestor),
            graph,
        );
    }
}
