//! The Dataspace Protocol 2025-1, provider side: what connectors (Eclipse EDC, Tractus-X EDC,
//! TWIN) use to find what is shared with them. A participant is an organisation DID — the
//! DIDs the sharing policies name as assignees — proved by a DCP self-issued ID token
//! (`federation::participant`); what it is offered is what the policies share with it, one
//! dataset per consignment. The protocol adds no second permission system.
//!
//! Layout: `catalog` (the catalog and its datasets), `negotiation` (contract negotiation,
//! agreeing to the offers the node made), `process` (a negotiation's or transfer's stored
//! state and the message it still has to send), `deliver` (the task sending those messages to
//! consumers' callbacks, with retries), `transfer` (HTTP-pull transfers: the start with a
//! bearer token, the pull's check, suspension, completion, termination, revoked shares),
//! `provider` (the publisher's view of its consignments' transfers, and its own suspension,
//! resumption, completion and termination of one), `message` (checks of what connectors send, the
//! protocol's error bodies).

pub mod catalog;
pub mod deliver;
pub mod message;
pub mod negotiation;
pub mod process;
pub mod provider;
pub mod transfer;

use std::sync::Arc;

use serde_json::{json, Value};

use crate::federation::Federation;
use crate::identity::{NodeIdentity, DSP_PATH};
use crate::sharing::Sharing;
use crate::store::Store;

/// The version this node speaks.
pub const VERSION: &str = "2025-1";

/// The JSON-LD context every DSP 2025-1 message carries.
pub const CONTEXT: &str = "https://w3id.org/dspace/2025/1/context.jsonld";

/// The one distribution format offered: the participant pulls the consignment over HTTP.
pub const FORMAT: &str = "HttpData-PULL";

pub struct Dsp {
    identity: Arc<NodeIdentity>,
    store: Arc<Store>,
    sharing: Arc<Sharing>,
    federation: Arc<Federation>,
    /// Record versions (`consignment::rows`): a dataset is cached under its record's version.
    listing: Arc<crate::consignment::listing::Listing>,
    /// Datasets as offered, by record and participant, with the record version and policy
    /// epoch they were built at.
    datasets: catalog::Cache,
    /// Wakes the delivery task: a process queued a message, or a share was withdrawn.
    wake_tx: tokio::sync::mpsc::UnboundedSender<deliver::Wake>,
    wake_rx: std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<deliver::Wake>>>,
}

impl Dsp {
    pub fn new(
        identity: Arc<NodeIdentity>,
        store: Arc<Store>,
        sharing: Arc<Sharing>,
        federation: Arc<Federation>,
        listing: Arc<crate::consignment::listing::Listing>,
    ) -> Self {
        let (wake_tx, wake_rx) = tokio::sync::mpsc::unbounded_channel();
        Self {
            identity,
            store,
            sharing,
            federation,
            listing,
            datasets: catalog::Cache::default(),
            wake_tx,
            wake_rx: std::sync::Mutex::new(Some(wake_rx)),
        }
    }

    /// `GET /.well-known/dspace-version`: where this node speaks which version, and how a
    /// participant authenticates.
    pub fn versions(&self) -> Value {
        json!({"protocolVersions": [{
            "version": VERSION,
            "path": DSP_PATH,
            "binding": "HTTPS",
            "identifierType": "did:web",
            "serviceId": format!("{}#dsp", self.identity.node_did()),
            "auth": {"protocol": "DCP", "version": "1.0"},
        }]})
    }

    /// The participant an `Authorization` header's self-issued ID token proves.
    pub async fn participant(&self, authorization: Option<&str>) -> crate::error::Result<String> {
        let header = authorization.ok_or_else(|| {
            crate::error::Error::Unauthorized(
                "a DCP self-issued ID token is required as Authorization".into(),
            )
        })?;
        self.federation.participant(header).await
    }
}
