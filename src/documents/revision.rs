//! A document revision in a contribution graph: the facts it records, the attestation of bytes
//! the node holds, and which revision of a document is current. Intake writes the facts inside
//! its own transaction, so they are handed back as triples rather than inserted here.

use oxigraph::model::vocab::rdf;
use oxigraph::model::{Literal, NamedNode, NamedOrBlankNode, Term, Triple};
use oxigraph::store::Transaction;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::attest::{Attestor, Claims};
use super::blobs::Blob;
use super::Content;
use crate::error::{Error, Result};
use crate::rdf::literal;
use crate::store::{graphs, Queries, Query};
use crate::vocab::{dsn, json_literal, xsd};

/// One revision of a document, as recorded at intake.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub document_id: String,
    /// As sent (`unece:DocumentCodeList#380`).
    pub document_type_code: String,
    pub document_revision: i64,
    /// When revision 0 was recorded.
    pub date_created: String,
    pub date_modified: String,
    pub organization_identity: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user_identity: String,
    pub content_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob_storage_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attestation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_extension: Option<String>,
    /// An external reference's URL (no blob).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_href: Option<String>,
    /// The earlier revisions, oldest first.
    #[serde(default)]
    pub history: Vec<Earlier>,
}

/// An earlier revision, as `history` lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Earlier {
    pub id: String,
    pub document_revision: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob_storage_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_href: Option<String>,
}

impl Revision {
    /// The same document again: recording it would change nothing.
    pub fn is_same(&self, content: &Content, document_type_code: &str) -> bool {
        self.content_key == content.key() && self.document_type_code == document_type_code
    }
}

/// A revision about to be recorded: of which document, on which node, by whom, when.
pub struct New<'a> {
    pub node: &'a NamedNode,
    pub document_id: &'a str,
    /// As sent (`unece:DocumentCodeList#380`).
    pub document_type_code: &'a str,
    pub organization: &'a str,
    pub user: &'a str,
    pub now: &'a str,
}

/// The current revision of `document_id` of the consignment `record` in `graph`, as the
/// transaction sees it.
pub fn current(
    queries: &Queries,
    tx: &Transaction<'_>,
    graph: &NamedNode,
    record: &NamedNode,
    document_id: &str,
) -> Result<Option<(NamedNode, Revision)>> {
    let rows = queries.select_in(
        tx,
        Query::DocumentCurrent,
        &[
            ("graph", graph.clone().into()),
            ("record", record.clone().into()),
            ("documentId", literal(document_id)),
        ],
    )?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    match (row.get("node"), row.get("json")) {
        (Some(Term::NamedNode(node)), Some(Term::Literal(json))) => {
            let revision = serde_json::from_str(json.value()).map_err(Error::internal)?;
            Ok(Some((node.clone(), revision)))
        }
        _ => Ok(None),
    }
}

/// A document revision's facts: numbered after the current one (which it supersedes, and
/// whose history it extends), attested when the node holds its bytes.
pub fn facts(
    new: &New<'_>,
    content: &Content,
    previous: Option<(NamedNode, Revision)>,
    attestor: &Attestor,
) -> Vec<Triple> {
    let mut out = Facts(Vec::new());
    let mut revision = numbered(new, content, previous, &mut out);
    match content {
        Content::Stored {
            blob,
            media_type,
            extension,
            ..
        } => {
            revision.encoding_format = Some(media_type.clone());
            revision.file_extension = Some(extension.clone());
            stored(new, blob, attestor, &mut revision, &mut out);
        }
        Content::External {
            url,
            media_type,
            extension,
        } => {
            revision.external_href = Some(url.clone());
            revision.encoding_format = media_type.clone();
            revision.file_extension = extension.clone();
            out.add(new.node, dsn("externalHref"), literal(url));
        }
        Content::Absent => {}
    }
    described(new, &revision, &mut out);
    out.0
}

/// The triples of one revision's node and its attestation, in the order they are found.
struct Facts(Vec<Triple>);

impl Facts {
    fn add(&mut self, s: &NamedNode, p: NamedNode, o: impl Into<Term>) {
        self.0
            .push(Triple::new(NamedOrBlankNode::from(s.clone()), p, o));
    }
}

/// The revision's number, creation time and history, from the one it supersedes.
fn numbered(
    new: &New<'_>,
    content: &Content,
    previous: Option<(NamedNode, Revision)>,
    out: &mut Facts,
) -> Revision {
    let mut revision = Revision {
        document_id: new.document_id.to_owned(),
        document_type_code: new.document_type_code.to_owned(),
        document_revision: 0,
        date_created: new.now.to_owned(),
        date_modified: new.now.to_owned(),
        organization_identity: new.organization.to_owned(),
        user_identity: new.user.to_owned(),
        content_key: content.key(),
        ..Revision::default()
    };
    if let Some((prev_node, prev)) = previous {
        out.add(&prev_node, dsn("supersededBy"), new.node.clone());
        revision.document_revision = prev.document_revision + 1;
        revision.date_created = prev.date_created.clone();
        revision.history = prev.history.clone();
        revision.history.push(Earlier {
            id: prev_node.into_string(),
            document_revision: prev.document_revision,
            blob_storage_id: prev.blob_storage_id,
            encoding_format: prev.encoding_format,
            external_href: prev.external_href,
        });
    }
    revision
}

/// Bytes the node holds: the blob's facts, and the node's signed statement over them.
fn stored(
    new: &New<'_>,
    blob: &Blob,
    attestor: &Attestor,
    revision: &mut Revision,
    out: &mut Facts,
) {
    let attestation = uuid::Uuid::new_v4().simple().to_string();
    revision.blob_storage_id = Some(blob.storage_id());
    revision.integrity = Some(blob.integrity());
    revision.blob_size = Some(blob.size);
    revision.attestation_id = Some(attestation.clone());
    let jws = attestor.sign(&Claims {
        id: &attestation,
        document_id: new.document_id,
        revision: revision.document_revision,
        integrity: &blob.integrity(),
        issued: chrono::Utc::now().timestamp(),
    });
    let att = graphs::minted("attestation", &attestation);
    out.add(&att, rdf::TYPE.into_owned(), dsn("Attestation"));
    out.add(&att, dsn("attests"), new.node.clone());
    out.add(&att, dsn("jws"), literal(&jws));
    out.add(&att, dsn("issued"), date_literal(new.now));
    out.add(new.node, dsn("attestation"), att);
    out.add(new.node, dsn("blobStorageId"), literal(&blob.storage_id()));
    out.add(new.node, dsn("integrity"), literal(&blob.integrity()));
    out.add(new.node, dsn("blobSize"), Literal::from(blob.size as i64));
}

/// What every revision states, stored bytes or not; `dsn:documentJson` is what reads render.
fn described(new: &New<'_>, revision: &Revision, out: &mut Facts) {
    if let Some(format) = &revision.encoding_format {
        out.add(new.node, dsn("encodingFormat"), literal(format));
    }
    if let Some(ext) = &revision.file_extension {
        out.add(new.node, dsn("fileExtension"), literal(ext));
    }
    out.add(
        new.node,
        dsn("documentRevision"),
        Literal::from(revision.document_revision),
    );
    out.add(new.node, dsn("addedBy"), NamedNode::new_unchecked(new.user));
    let json = serde_json::to_value(revision).unwrap_or(Value::Null);
    let json = json_literal(json.to_string());
    out.add(new.node, dsn("documentJson"), json);
}

fn date_literal(s: &str) -> Literal {
    Literal::new_typed_literal(s, xsd("dateTime"))
}
