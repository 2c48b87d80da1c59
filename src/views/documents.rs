//! Document reads: recorded revisions → DocumentAttachment (document endpoints) and
//! DocumentRecord (inside the consignment view), with download links.
//!
//! Links: single-document reads carry a signed link valid for the configured link lifetime;
//! list reads and the view carry signed links with the (shorter) list lifetime. An external
//! reference's link is its URL.

use oxigraph::model::{NamedNode, Term};
use oxigraph::sparql::QuerySolution;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{instant, parse_json, Description, Part, Read, Views, Visible};
use crate::auth::Caller;
use crate::consignment::cursor::Position;
use crate::consignment::{summary, Page, Scope};
use crate::documents::{LinkUse, Revision};
use crate::error::{Error, Result};
use crate::rdf::literal;
use crate::rdf::text;
use crate::store::{graphs, Query};

impl Views {
    /// `GET /consignments/{id}/documents`: deduplicated by documentId, the latest wins.
    pub fn documents(
        &self,
        caller: &Caller,
        scope: Scope,
        id: &str,
        usage: LinkUse,
    ) -> Result<Vec<Value>> {
        let visible = self.resolve(caller, scope, id)?;
        let parts = self.parts(&visible, None, Description::Skip)?;
        Ok(self.dedupe(&parts.documents, &caller.organization, &visible, usage))
    }

    /// The DocumentAttachments of a read (with pulled partner datasets joined).
    pub fn render_documents(&self, read: &Read, org: &str, usage: LinkUse) -> Vec<Value> {
        self.dedupe(&read.parts.documents, org, &read.visible, usage)
    }

    /// `GET /consignments/{id}/documents/{documentId}`.
    pub fn document(
        &self,
        caller: &Caller,
        scope: Scope,
        id: &str,
        document_id: &str,
    ) -> Result<Value> {
        let documents = self.documents(caller, scope, id, LinkUse::Single)?;
        pick(documents, document_id)
    }
    /// `GET /documents`: the caller's documents across consignments (or of one), newest first.
    pub fn all_documents(
        &self,
        caller: &Caller,
        scope: Scope,
        limit: usize,
        cursor: Option<&str>,
        consignment: Option<&str>,
    ) -> Result<Page> {
        let org = &caller.organization;
        let list = match consignment {
            Some(id) => format!("documents:{id}"),
            None => "documents".to_owned(),
        };
        let after = cursor
            .map(|c| self.cursors.decode(c, &list, org, scope.as_str()))
            .transpose()?;
        if let Some(id) = consignment {
            return self.consignment_documents(caller, scope, id, limit, after, list);
        }
        let (at, id) = match &after {
            Some(p) => (p.at.as_str(), p.id.as_str()),
            None => ("9999-12-31T23:59:59Z", "~"),
        };
        let bindings = [
            ("org", Term::from(NamedNode::new_unchecked(org.as_str()))),
            (
                "after",
                oxigraph::model::Literal::new_typed_literal(at, crate::vocab::xsd("dateTime"))
                    .into(),
            ),
            ("afterNode", literal(id)),
        ];
        // Own and shared documents come from one query each, both newest first after the same
        // position; the page is the newest `limit` of their merge.
        let mut rows = Vec::with_capacity(2 * limit + 2);
        for (wanted, query) in [
            (scope.includes_own(), Query::DocumentsPage),
            (scope.includes_shared(), Query::SharedDocumentsPage),
        ] {
            if !wanted {
                continue;
            }
            let mut n = 0;
            self.queries.each(&self.store, query, &bindings, |row| {
                rows.push(row);
                n += 1;
                n <= limit
            })?;
        }
        let key = |row: &QuerySolution| {
            (
                instant(&text(row, "at").unwrap_or_default()),
                text(row, "node").unwrap_or_default(),
            )
        };
        rows.sort_by_key(|row| std::cmp::Reverse(key(row)));
        let more = rows.len() > limit;
        rows.truncate(limit);
        let cursor = match (more, rows.last()) {
            (true, Some(last)) => Some(self.cursors.encode(&Position {
                list,
                org: org.clone(),
                scope: scope.as_str().into(),
                at: text(last, "at").unwrap_or_default(),
                id: text(last, "node").unwrap_or_default(),
            })),
            _ => None,
        };
        let entities = rows
            .iter()
            .map(|row| {
                let part = document_part(row);
                self.attachment(&part, text(row, "aig"), LinkUse::List, org)
            })
            .collect();
        Ok(Page::new(entities, cursor))
    }

    /// One consignment's (deduplicated) documents, paged in memory: a consignment holds few.
    fn consignment_documents(
        &self,
        caller: &Caller,
        scope: Scope,
        id: &str,
        limit: usize,
        after: Option<Position>,
        list: String,
    ) -> Result<Page> {
        let docs = self.documents(caller, scope, id, LinkUse::List)?;
        let start = after
            .as_ref()
            .and_then(|p| {
                docs.iter()
                    .position(|d| d["id"] == p.id.as_str())
                    .map(|i| i + 1)
            })
            .unwrap_or(0);
        let rest = &docs[start.min(docs.len())..];
        let page: Vec<Value> = rest.iter().take(limit).cloned().collect();
        let cursor = (rest.len() > limit).then(|| {
            self.cursors.encode(&Position {
                list,
                org: caller.organization.clone(),
                scope: scope.as_str().into(),
                at: String::new(),
                id: page
                    .last()
                    .and_then(|d| d["id"].as_str())
                    .unwrap_or_default()
                    .into(),
            })
        });
        Ok(Page::new(page, cursor))
    }

    /// One entry per documentId: the caller's own newest copy, else the publisher's newest,
    /// else the newest another member of the circle shared. The publisher's before the other
    /// members': any member may add a document under any documentId, and "newest wins" let
    /// one replace the publisher's invoice for everyone else in the circle.
    fn dedupe(&self, parts: &[Part], org: &str, visible: &Visible, usage: LinkUse) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        let publisher_key = graphs::parse_contribution(visible.graph.as_str()).map(|(_, key)| key);
        let rank = |p: &Part| match p.contributor.as_deref() {
            Some(c) if c == org => 0,
            Some(c) if Some(graphs::org_key(c).as_str()) == publisher_key => 1,
            _ => 2,
        };
        let ordered = (0..3).flat_map(|r| parts.iter().rev().filter(move |p| rank(p) == r));
        let mut seen = std::collections::HashSet::new();
        for part in ordered {
            let revision = revision_of(part);
            if seen.insert(revision.document_id.clone()) {
                out.push(match &part.partner {
                    Some(partner) => partner.attachment.clone(),
                    None => self.attachment_of(part, &revision, None, usage, org),
                });
            }
        }
        out
    }

    fn href(&self, r: &Revision, usage: LinkUse, reader: &str) -> Option<String> {
        self.documents.href(
            r.blob_storage_id.as_deref(),
            r.encoding_format.as_deref(),
            r.external_href.as_deref(),
            usage,
            reader,
        )
    }

    /// A DocumentAttachment, its links signed for `reader`.
    pub(super) fn attachment(
        &self,
        part: &Part,
        consignment: Option<String>,
        usage: LinkUse,
        reader: &str,
    ) -> Value {
        self.attachment_of(part, &revision_of(part), consignment, usage, reader)
    }

    fn attachment_of(
        &self,
        part: &Part,
        r: &Revision,
        consignment: Option<String>,
        usage: LinkUse,
        reader: &str,
    ) -> Value {
        let code = summary::code_of(&r.document_type_code);
        let mut metadata = Map::new();
        if let Some(f) = &r.encoding_format {
            metadata.insert("encodingFormat".into(), json!(f));
        }
        if let Some(n) = r.blob_size {
            metadata.insert("blobSize".into(), json!(n));
        }
        if let Some(e) = &r.file_extension {
            metadata.insert("fileExtension".into(), json!(e));
        }
        let history: Vec<Value> = r
            .history
            .iter()
            .map(|e| {
                let href = self.documents.href(
                    e.blob_storage_id.as_deref(),
                    e.encoding_format.as_deref(),
                    e.external_href.as_deref(),
                    usage,
                    reader,
                );
                let mut earlier = json!({"id": e.id, "documentRevision": e.document_revision});
                // A revision without content (no `uRIId`) has nothing to link to.
                if let Some(href) = href {
                    earlier["href"] = json!(href);
                }
                earlier
            })
            .collect();
        let mut v = json!({
            "id": part.id,
            "documentId": r.document_id,
            "documentCode": code,
            "documentRevision": r.document_revision,
            "metadata": metadata,
            "history": history,
        });
        if let Some(label) = self.codes.document(code) {
            v["documentType"] = json!(label);
        }
        if let Some(href) = self.href(r, usage, reader) {
            v["href"] = json!(href);
        }
        if let Some(i) = &r.integrity {
            v["integrity"] = json!(i);
        }
        if let Some(a) = &r.attestation_id {
            v["attestationId"] = json!(a);
        }
        if let Some(c) = consignment {
            v["consignmentId"] = json!(c);
        }
        v
    }

    /// A DocumentRecord (inside the ConsignmentView), its link signed for `reader`.
    pub(super) fn document_record(&self, part: &Part, reader: &str) -> Value {
        let r = revision_of(part);
        let mut v = json!({
            "@context": [
                "https://www.w3.org/ns/activitystreams",
                "https://vocabulary.uncefact.org/unece-context-D23B.jsonld",
                "https://w3id.org/dataspace-node/ns"
            ],
            "type": "Document",
            "id": r.document_id,
            "documentRevision": r.document_revision,
            "dateCreated": r.date_created,
            "dateModified": r.date_modified,
            "organizationIdentity": r.organization_identity,
        });
        let optional = [
            ("href", self.href(&r, LinkUse::List, reader)),
            ("blobStorageId", r.blob_storage_id.clone()),
            ("integrity", r.integrity.clone()),
            ("attestationId", r.attestation_id.clone()),
            (
                "userIdentity",
                Some(r.user_identity.clone()).filter(|u| !u.is_empty()),
            ),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                v[name] = json!(value);
            }
        }
        v
    }
}

/// A document part's revision: its recorded facts (`dsn:documentJson`).
pub(super) fn revision_of(part: &Part) -> Revision {
    Revision::deserialize(&part.json).unwrap_or_default()
}

/// The same answer whether or not the document exists for someone else.
pub(super) const NO_DOCUMENT: &str = "no document with this id is available to you";

/// The attachment of `document_id` among a consignment's documents.
pub fn pick(documents: Vec<Value>, document_id: &str) -> Result<Value> {
    documents
        .into_iter()
        .find(|d| d["documentId"] == document_id)
        .ok_or_else(|| Error::NotFound(NO_DOCUMENT.into()))
}

/// A row of the document queries as the part it names.
pub(super) fn document_part(row: &QuerySolution) -> Part {
    Part {
        id: text(row, "node").unwrap_or_default(),
        at: text(row, "at").unwrap_or_default(),
        json: parse_json(&text(row, "json").unwrap_or_default()),
        contributor: text(row, "contributor"),
        partner: None,
    }
}
