//! Read views: SPARQL queries from `queries/*.rq` → the spec's JSON shapes.
//!
//! Every read is limited to what the caller may read in the requested scope, decided per
//! consignment as a set of contribution graphs:
//! - `own`: the caller organisation's own contribution (its description when it published the
//!   consignment, the events and documents it added);
//! - `shared`: when the caller is in the consignment's circle (it published it, or a grant
//!   shared it with it), every other member's contribution — the publisher's description for a
//!   grantee, partners' events, documents and system events for everyone;
//! - `all`: both, merged; the caller's own copy wins on duplicates.
//!
//! A consignment whose scope gives no graph is "not found", with the same message as one that
//! does not exist.
//!
//! - `list`: the list pages (own, shared, merged) and their rows;
//! - `scope`: which consignment an id names for the caller, and which graphs it may read;
//! - `read`: one consignment's parts, rendered as the view and its events;
//! - `history`: its revisions, and the consignment as it stood at an instant (`?at=`);
//! - `documents`: DocumentAttachment and DocumentRecord, with download links signed for the
//!   reader; `document_ids`: a document found by its id across the caller's consignments (409
//!   when several publishers' answer); `downloads`: whether a link's organisation may still
//!   download the blob;
//! - `federated`: datasets served to partner nodes and joined from them;
//! - [`linked`]: a consignment as JSON-LD (compacted against D23B), Turtle, N-Quads, ...

mod at;
mod document_ids;
mod documents;
mod downloads;
mod federated;
mod history;
pub use documents::pick as pick_document;
pub use history::parse_at;
pub mod linked;
mod list;
mod read;
mod scope;

use list::Item;
pub use list::ListPlan;
pub use read::{Description, Read};
use read::{Part, Partner, Parts};
pub use scope::ambiguous;

use std::sync::Arc;

use oxigraph::model::{NamedNode, Term};
use serde_json::{json, Map, Value};

use crate::auth::Caller;
use crate::consignment::codes::CodeLists;
use crate::consignment::cursor::{Cursors, Position};
use crate::consignment::listing::{self, Listing};
use crate::consignment::rows::Row;
use crate::consignment::Scope;
use crate::documents::Documents;
use crate::error::{Error, Result};
use crate::federation::RemoteDataset;
use crate::jsonld::{Compactor, Contexts};
use crate::rdf::text;
use crate::sharing::Sharing;
use crate::store::{graphs, Queries, Query, Store};

/// A consignment the caller may read, as found in the index.
pub struct Visible {
    pub record: NamedNode,
    pub aig: String,
    /// The publisher's contribution graph (the description).
    pub graph: NamedNode,
    pub created: String,
    pub updated: String,
    /// The contribution graphs the scope lets the caller read.
    pub graphs: Vec<NamedNode>,
    /// The contributions the scope lets the caller read that partner nodes hold: pulled.
    pub remote: Vec<RemoteDataset>,
}

pub struct Views {
    store: Arc<Store>,
    queries: Arc<Queries>,
    codes: Arc<CodeLists>,
    cursors: Cursors,
    listing: Arc<Listing>,
    sharing: Arc<Sharing>,
    documents: Arc<Documents>,
    compactor: Compactor,
    /// The inbox's contexts: a point-in-time linked read expands a stored activity again.
    contexts: Arc<Contexts>,
    /// Threads list pages are reading rows on now ([`Views::prefetch`]): bounded node-wide.
    prefetching: std::sync::atomic::AtomicUsize,
}

/// A solution's literal or IRI as text.
fn org_term(caller: &Caller) -> Term {
    NamedNode::new_unchecked(caller.organization.as_str()).into()
}

fn parse_json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or(Value::Null)
}

const NOT_FOUND: &str = "no consignment with this id is available to you";

impl Views {
    // One argument per service the reads use; a struct of them would only rename this.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Arc<Store>,
        queries: Arc<Queries>,
        codes: Arc<CodeLists>,
        listing: Arc<Listing>,
        sharing: Arc<Sharing>,
        documents: Arc<Documents>,
        contexts: Arc<Contexts>,
        cursor_key: &[u8],
    ) -> Result<Self> {
        let compactor =
            Compactor::new(&contexts, crate::vocab::UNECE_CONTEXT).map_err(Error::internal)?;
        Ok(Self {
            store,
            queries,
            codes,
            cursors: Cursors::new(cursor_key),
            listing,
            sharing,
            documents,
            compactor,
            contexts,
            prefetching: Default::default(),
        })
    }
}

/// Orders date-times by the instant they name: stored `xsd:dateTime`s come back canonical
/// (`…:44Z`, `…:44.03Z`), so their text does not sort.
fn instant(at: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::parse_from_rfc3339(at).ok()
}
