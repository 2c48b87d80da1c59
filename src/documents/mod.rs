//! Documents: where their bytes come from, where they are kept, how they are attested and
//! handed out.
//!
//! - [`source`]: `data:` URLs and allow-listed http(s) fetches (everything else stays an
//!   external reference, never contacted).
//! - [`blobs`]: the content-addressed blob store in the data dir (durable before the record).
//! - [`attest`]: the node's Ed25519 signature over `{documentId, documentRevision, integrity}`.
//! - [`links`]: pre-signed, expiring download links, each for the organisation it was handed to.
//! - [`media`]: media types and file extensions.
//! - [`revision`]: what a revision records in the contribution graph, and which is current.
//!
//! What a revision records is a [`Revision`], kept as JSON on the revision's node (and as
//! separate facts for SPARQL); the views render it as DocumentAttachment or DocumentRecord.

pub mod attest;
pub mod blobs;
pub mod links;
pub mod media;
pub mod revision;
pub mod source;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use oxigraph::model::{NamedNode, Term};
use serde_json::{json, Value};
use url::Url;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::store::Query;
use crate::store::{graphs, Queries, Store};
use attest::Attestor;
use blobs::{Blob, Blobs};
use links::Links;
pub use revision::{Earlier, Revision};
use source::{AllowList, Fetcher};

/// What the node holds of a document's content.
#[derive(Debug)]
pub enum Content {
    /// Bytes in the blob store (from a `data:` URL or an allowed fetch).
    Stored {
        blob: Blob,
        media_type: String,
        extension: String,
        /// The URL it was fetched from; `None` for a `data:` URL.
        fetched_from: Option<String>,
    },
    /// A URL the node may not fetch: kept as it is.
    External {
        url: String,
        media_type: Option<String>,
        extension: Option<String>,
    },
    /// No `uRIId`: the spec's Document table requires none of its fields, so a document may
    /// be its type code and id alone (a certificate's number, say, without the file).
    Absent,
}

impl Content {
    /// What makes two revisions' contents the same: the bytes' hash, or the URL.
    pub fn key(&self) -> String {
        match self {
            Content::Stored { blob, .. } => blob.storage_id(),
            Content::External { url, .. } => url.clone(),
            Content::Absent => String::new(),
        }
    }

    /// The `uRIId` the stored object carries: a `data:` URL's bytes are in the blob store, so
    /// the graph names the blob instead of holding the bytes (three times: object, payload,
    /// activity).
    pub fn stored_uri(&self) -> Option<String> {
        match self {
            Content::Stored {
                blob,
                fetched_from: None,
                ..
            } => Some(blob.storage_id()),
            _ => None,
        }
    }
}

/// How long the download links of a read are valid.
#[derive(Debug, Clone, Copy)]
pub enum LinkUse {
    /// Single-document reads.
    Single,
    /// List reads and the consignment view.
    List,
}

pub struct Documents {
    blobs: Blobs,
    fetcher: Fetcher,
    links: Links,
    attestor: Attestor,
    max_bytes: u64,
    link_ttl: Duration,
    list_link_ttl: Duration,
    store: Arc<Store>,
    queries: Arc<Queries>,
}

impl Documents {
    /// Blocking (creates directories, reads the key).
    pub fn open(
        config: &Config,
        secrets_dir: &Path,
        issuer: String,
        base_url: &str,
        link_key: &[u8],
        store: Arc<Store>,
        queries: Arc<Queries>,
    ) -> Result<Self> {
        let allow = AllowList::parse(&config.fetch_allow).map_err(Error::internal)?;
        if !allow.is_empty() {
            tracing::info!(hosts = ?config.fetch_allow, "documents may be fetched from these hosts");
        }
        Ok(Self {
            blobs: Blobs::open(&config.data_dir.join("blobs"))?,
            fetcher: Fetcher::new(allow, Duration::from_secs(config.fetch_timeout_secs))
                .map_err(Error::internal)?,
            links: Links::new(link_key, base_url),
            attestor: Attestor::load_or_create(secrets_dir, issuer)?,
            max_bytes: config.document_max_bytes,
            link_ttl: Duration::from_secs(config.link_ttl_secs),
            list_link_ttl: Duration::from_secs(config.list_link_ttl_secs),
            store,
            queries,
        })
    }

    pub fn blobs(&self) -> &Blobs {
        &self.blobs
    }

    pub fn links(&self) -> &Links {
        &self.links
    }

    pub fn attestor(&self) -> &Attestor {
        &self.attestor
    }

    /// Takes the content `uri` names: decodes a `data:` URL or fetches an allowed URL into
    /// the blob store (durably, before any record names it); any other URL becomes an
    /// external reference; no `uri` is no content. `Err` is the task error's message. Runs on a
    /// blocking thread.
    pub async fn acquire(&self, uri: Option<&str>) -> std::result::Result<Content, String> {
        let Some(uri) = uri else {
            return Ok(Content::Absent);
        };
        if uri
            .get(..5)
            .is_some_and(|s| s.eq_ignore_ascii_case("data:"))
        {
            let data = source::decode_data_url(uri, self.max_bytes)?;
            let blob = self.blobs.put(&data.bytes).map_err(|e| {
                tracing::error!(error = %e, "blob store write failed");
                "the node could not store the document".to_owned()
            })?;
            let extension = media::extension_of(&data.media_type).unwrap_or("bin");
            return Ok(Content::Stored {
                blob,
                extension: extension.to_owned(),
                media_type: data.media_type,
                fetched_from: None,
            });
        }
        let url = Url::parse(uri).map_err(|e| format!("uRIId {uri:?} is not a URL: {e}"))?;
        // Readers are handed an external reference as its `href`: only a web link, as sent
        // (the URL parser trims what the shape's pattern let through, e.g. a leading space
        // before `data:` or `javascript:`), may be one.
        if !matches!(url.scheme(), "http" | "https")
            || uri.trim() != uri
            || uri.chars().any(char::is_control)
        {
            return Err(format!(
                "uRIId {uri:?} must be a data: URL or an http(s) URL without surrounding spaces"
            ));
        }
        let from_path = media::extension_in_path(url.path());
        if !self.fetcher.allows(&url) {
            return Ok(Content::External {
                media_type: from_path
                    .as_deref()
                    .and_then(media::media_type_of)
                    .map(str::to_owned),
                extension: from_path,
                url: uri.to_owned(),
            });
        }
        let fetched = self
            .fetcher
            .fetch(&url, &self.blobs, self.max_bytes)
            .await?;
        let media_type = fetched
            .media_type
            .filter(|m| m != media::OCTET_STREAM)
            .or_else(|| {
                from_path
                    .as_deref()
                    .and_then(media::media_type_of)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| media::OCTET_STREAM.to_owned());
        let extension = media::extension_of(&media_type)
            .filter(|e| *e != "bin")
            .map(str::to_owned)
            .or(from_path)
            .unwrap_or_else(|| "bin".to_owned());
        Ok(Content::Stored {
            blob: fetched.blob,
            media_type,
            extension,
            fetched_from: Some(uri.to_owned()),
        })
    }

    /// The download link of a revision (or earlier revision): for a stored blob signed for
    /// `reader`, the organisation the read answers; the URL itself for an external reference.
    pub fn href(
        &self,
        blob_storage_id: Option<&str>,
        encoding_format: Option<&str>,
        external: Option<&str>,
        usage: LinkUse,
        reader: &str,
    ) -> Option<String> {
        if let Some(hex) = blob_storage_id.and_then(blobs::hex_of) {
            let ttl = match usage {
                LinkUse::Single => self.link_ttl,
                LinkUse::List => self.list_link_ttl,
            };
            return Some(self.links.sign(
                hex,
                encoding_format.unwrap_or(media::OCTET_STREAM),
                reader,
                ttl,
            ));
        }
        external.map(str::to_owned)
    }

    /// `GET /attestations/{id}`: the signed statement and what verifies it. Blocking.
    pub fn attestation(&self, id: &str) -> Result<Value> {
        let missing = || Error::NotFound("no attestation with this id".into());
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(missing());
        }
        let rows = self.queries.select(
            &self.store,
            Query::Attestation,
            &[("attestation", graphs::minted("attestation", id).into())],
        )?;
        let Some(Term::Literal(jws)) = rows.first().and_then(|r| r.get("jws")) else {
            return Err(missing());
        };
        let claims = attest::payload(jws.value())
            .ok_or_else(|| Error::internal("stored attestation is not a JWS"))?;
        let issued = claims["iat"]
            .as_i64()
            .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
            .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        Ok(json!({
            "id": id,
            "type": "DocumentAttestation",
            "issuer": claims["iss"],
            "issued": issued,
            "documentId": claims["documentId"],
            "documentRevision": claims["documentRevision"],
            "integrity": claims["integrity"],
            "jws": jws.value(),
            "verificationMethod": {
                "id": self.attestor.key_id(),
                "type": "JsonWebKey2020",
                "controller": self.attestor.issuer(),
                "publicKeyJwk": self.attestor.public_jwk(),
            },
        }))
    }

    /// The node of attestation `id` (32 hex digits).
    pub fn attestation_node(id: &str) -> NamedNode {
        graphs::minted("attestation", id)
    }
}
