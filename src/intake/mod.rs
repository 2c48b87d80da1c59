//! The activity inbox: JSON → request checks → JSON-LD expansion → shape checks → port
//! derivation → one transaction in the store, answered with an activity log entry.
//!
//! - [`activity`]: request-level checks (400/403) and the canonical form used for idempotency.
//! - [`crate::jsonld`]: offline expansion with the contexts compiled at start-up.
//! - `prepare` and `checks`: everything checked before the write (shapes, keys, reserved
//!   IRIs); [`shapes`]: SHACL shapes from `shapes/*.ttl`, interpreted.
//! - [`crate::consignment::ports`]: port of exit / entry from index 0 of the movements' events.
//! - `validate`: `POST /inbox/validate`, the checks without the write.
//! - `process`: the write — content taken first, then one transaction that applies the
//!   activity (`apply`) and writes its log entry (`entries`).
//! - `credential`: the trust credential; [`log`]: the ActivityLogEntry.

pub mod activity;
mod apply;
mod batch;
mod checks;
#[cfg(test)]
mod conformance;
mod credential;
mod entries;
pub mod log;
mod prepare;
mod process;
pub mod shapes;
mod validate;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::consignment::codes::CodeLists;
use crate::documents::Documents;
use crate::error::{Error, Result};
use crate::fair::Fair;
use crate::identity::NodeIdentity;
use crate::jsonld::Contexts;
use crate::sharing::Sharing;
use crate::store::{Queries, Store};
pub use batch::Loaded;
use credential::Credentials;
use log::Entry;
use shapes::Shapes;
pub use validate::Validation;

/// How long each stage of one activity took (reported as `Server-Timing`).
#[derive(Debug, Default, Clone)]
pub struct Timings {
    pub parse: Duration,
    pub expand: Duration,
    pub shapes: Duration,
    pub store: Duration,
    /// Routing (policy look-up, grants, notifications), part of `store`.
    pub route: Duration,
    /// Taking a document's content (decoding or fetching, and the blob write).
    pub fetch: Duration,
}

pub struct Outcome {
    pub entry: Entry,
    /// `false` when the identical activity had been posted before and its entry is returned.
    pub created: bool,
    pub timings: Timings,
}

pub struct Intake {
    contexts: Arc<Contexts>,
    shapes: Shapes,
    countries: Arc<HashSet<String>>,
    store: Arc<Store>,
    queries: Arc<Queries>,
    identity: Arc<NodeIdentity>,
    credentials: Credentials,
    codes: Arc<CodeLists>,
    sharing: Arc<Sharing>,
    documents: Arc<Documents>,
    /// Turns at the writer lock, per organisation (`Intake::process`).
    writes: Fair,
}

/// ISO 3166 alpha-2 codes from the shipped D23B country list.
pub fn load_countries() -> Result<HashSet<String>> {
    let list: Value = serde_json::from_str(include_str!("../../contexts/codelists/countryid.json"))
        .map_err(Error::internal)?;
    Ok(list["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["value"].as_str())
        .filter(|code| code.len() == 2)
        .map(str::to_owned)
        .collect())
}

impl Intake {
    // One argument per service intake writes through; a struct of them would only rename this.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Arc<Store>,
        queries: Arc<Queries>,
        identity: Arc<NodeIdentity>,
        codes: Arc<CodeLists>,
        sharing: Arc<Sharing>,
        documents: Arc<Documents>,
    ) -> Result<Self> {
        let contexts = Arc::new(crate::jsonld::load_contexts()?);
        let vocabulary = contexts.property_kinds(activity::UNECE_CONTEXT);
        let shapes = Shapes::load(vocabulary).map_err(Error::internal)?;
        Ok(Self {
            contexts,
            shapes,
            countries: sharing.countries(),
            store,
            queries,
            credentials: Credentials::new(
                documents.attestor().signing_key().clone(),
                identity.node_did(),
            ),
            identity,
            codes,
            sharing,
            documents,
            writes: Fair::new(1),
        })
    }

    pub fn countries(&self) -> &HashSet<String> {
        &self.countries
    }

    pub fn contexts(&self) -> &Arc<Contexts> {
        &self.contexts
    }
}

pub fn new_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shipped_country_list_has_every_iso_country() {
        let countries = super::load_countries().unwrap();
        assert!(countries.len() >= 249, "{}", countries.len());
        for code in ["KE", "BR", "TZ", "NL", "DE"] {
            assert!(countries.contains(code), "{code}");
        }
        assert!(crate::consignment::ports::is_locode("KEMBA", &countries));
    }
}
