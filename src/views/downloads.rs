//! Whom a download link still serves: the organisation it was signed for, while that
//! organisation may read a document holding the blob.

use oxigraph::model::NamedNode;

use super::Views;
use crate::documents::blobs;
use crate::error::Result;
use crate::rdf::literal;
use crate::store::Query;

impl Views {
    /// May `org` download blob `hex`: is the blob the content of a document revision `org`
    /// reads — one it added, or one on a consignment it publishes or a grant shares with it?
    /// Asked at every download rather than when the link is signed, so that revoking a grant
    /// ends the links the grant let `org` read (the organisation's own documents, and those
    /// of consignments it publishes, stay readable). The same bytes in another document `org`
    /// still reads keep the link working: it could download them through that document.
    /// Blocking.
    pub fn may_download(&self, org: &str, hex: &str) -> Result<bool> {
        self.queries.ask(
            &self.store,
            Query::BlobReadable,
            &[
                ("blob", literal(&blobs::storage_id_of(hex))),
                ("org", NamedNode::new_unchecked(org).into()),
            ],
        )
    }
}
