//! Federation: organisations on other nodes as partners. Data stays with its provider and is
//! pulled under the sharing rules when read.
//!
//! - [`did`]: this node's did:web documents and the resolution of other nodes'.
//! - [`token`]: the short-lived EdDSA JWTs every node-to-node call carries.
//! - [`outbox`]: notices to other nodes, persisted with the change that causes them and
//!   delivered with retries.
//! - [`notice`]: the notices' AS2 form — `Announce` (a consignment shared with a partner's
//!   organisation by a policy) and `Offer` (a partner's contribution to a consignment this
//!   node provides).
//! - [`rate`]: the notices each partner node may send in a minute.
//!
//! The flow: routing on the provider node matches a policy whose assignee is an organisation
//! on another node → the grant is recorded locally (the provider checks it on every pull) and
//! an `Announce` is queued → the receiving node records the consignment as held elsewhere,
//! puts it in the assignee's circle and notifies it → the assignee's `shared`/`all` reads pull
//! the dataset from the provider (in parallel, with a timeout). An `Add` by the assignee goes
//! into its own contribution graph on its own node and is offered back to the provider with an
//! `Offer`, so the provider's reads pull it in turn.

pub mod did;
pub mod notice;
pub mod outbox;
mod participant;
pub mod rate;
mod seen;
pub mod token;
mod vet;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::identity::NodeIdentity;
use did::Resolver;
use outbox::{Delivery, Notice, Outbox};
use token::{NodeCaller, Tokens};

/// The path of the federation endpoint under the node's base URL.
pub const ENDPOINT_PATH: &str = "/federation";
/// The largest dataset accepted from a partner node.
const MAX_DATASET_BYTES: usize = 16 * 1024 * 1024;
/// The most of a partner's refusal of a notice that is read, for the log.
const MAX_REFUSAL_BYTES: usize = 4096;

/// What one partner node may make this node do and keep.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Notices it may send in any minute.
    pub notices_per_minute: u32,
    /// Consignments it may share with one organisation of this node.
    pub remote_records: u64,
}

/// A dataset held by another node: who provides it and its id there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RemoteDataset {
    pub provider: String,
    pub dataset: String,
}

type Pulled = (Instant, Arc<Value>);

/// Pulled datasets kept at most: each may be megabytes, and a reader paging through a
/// partner's consignments pulls one per row — kept until they expire, they grew without
/// bound while the cache was on.
const CACHE_ENTRIES: usize = 1_024;

/// Caches `value` under `key`: expired entries go first when the cache is full, then the
/// oldest.
fn cache_insert<K: std::hash::Hash + Eq + Clone>(
    cache: &mut std::collections::HashMap<K, Pulled>,
    key: K,
    value: Arc<Value>,
    ttl: Duration,
) {
    if cache.len() >= CACHE_ENTRIES && !cache.contains_key(&key) {
        cache.retain(|_, (at, _)| at.elapsed() < ttl);
        if cache.len() >= CACHE_ENTRIES {
            let oldest = cache
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                cache.remove(&oldest);
            }
        }
    }
    cache.insert(key, (Instant::now(), value));
}

pub struct Federation {
    identity: Arc<NodeIdentity>,
    key: SigningKey,
    tokens: Tokens,
    resolver: Resolver,
    client: reqwest::Client,
    timeout: Duration,
    cache_ttl: Duration,
    /// Pulled datasets by (reader organisation, dataset), when a cache lifetime is set.
    cache: Mutex<HashMap<(String, RemoteDataset), Pulled>>,
    limits: Limits,
    notices: rate::NoticeRate,
    pub outbox: Arc<Outbox>,
}

impl Federation {
    pub fn new(
        identity: Arc<NodeIdentity>,
        key: SigningKey,
        partners: &[String],
        allow_http: &[String],
        timeout: Duration,
        cache_ttl: Duration,
        limits: Limits,
    ) -> Result<Self> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout.max(Duration::from_secs(1)))
            .build()
            .map_err(Error::internal)?;
        let resolver = Resolver::new(client.clone(), partners, allow_http);
        if resolver.has_partners() {
            tracing::info!(partners = ?partners, plain_http = ?allow_http, "federation with partner nodes");
        }
        if !resolver.allow_http().is_empty() {
            tracing::warn!(hosts = ?resolver.allow_http(), "partner nodes on these hosts are reached over plain HTTP");
        }
        Ok(Self {
            tokens: Tokens::new(identity.node_did(), &key)?,
            resolver,
            identity,
            key,
            client,
            timeout,
            cache_ttl,
            cache: Mutex::new(HashMap::new()),
            notices: rate::NoticeRate::new(limits.notices_per_minute),
            limits,
            outbox: Arc::new(Outbox::default()),
        })
    }

    /// Keeps the node tokens seen in the file `path`, so that none is accepted twice across
    /// restarts. At start-up.
    pub fn remember_tokens_in(mut self, path: &std::path::Path) -> Result<Self> {
        self.tokens.persist_in(path)?;
        Ok(self)
    }

    /// This node's federation endpoint (the service entry of its DID documents).
    pub fn endpoint(&self) -> String {
        format!("{}{ENDPOINT_PATH}", self.identity.base_url())
    }

    /// The DID document of the node (`None`) or of one of its organisations.
    pub fn document(&self, organization: Option<&str>) -> Value {
        let node = self.identity.node_did();
        let did = match organization {
            Some(id) => self.identity.organization_did(id),
            None => node.clone(),
        };
        let mut doc = did::document(&did, &node, &self.key.verifying_key(), &self.endpoint());
        if organization.is_none() {
            // The node's Dataspace Protocol services (DSP 2025-1, "DID discovery").
            let dsp = self.identity.dsp_base();
            let base = self.identity.base_url();
            if let Some(services) = doc["service"].as_array_mut() {
                services.push(serde_json::json!({
                    "id": format!("{node}#dsp-catalog"),
                    "type": "CatalogService",
                    "serviceEndpoint": format!("{dsp}/catalog"),
                }));
                services.push(serde_json::json!({
                    "id": format!("{node}#dsp"),
                    "type": "DataService",
                    "serviceEndpoint": format!("{base}/.well-known/dspace-version"),
                }));
            }
        }
        doc
    }

    /// Is `org` an organisation of another node (a did:web organisation DID not of this one)?
    pub fn is_remote(&self, org: &str) -> bool {
        // Compared without building this node's DID: the id look-ups ask per candidate.
        did::node_of(org)
            .is_some_and(|node| node.strip_prefix("did:web:") != Some(self.identity.did_id()))
    }

    /// Is `org` an organisation of a partner node (one a policy may name)?
    pub fn is_partner_organization(&self, org: &str) -> bool {
        self.is_remote(org) && self.resolver.is_partner(org)
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Counts a notice from partner node `node` against its cap per minute: 429 with the
    /// seconds to wait beyond it.
    pub fn admit_notice(&self, node: &str) -> Result<()> {
        self.notices.admit(node).map_err(|retry_after_secs| {
            tracing::warn!(
                node,
                retry_after_secs,
                "a partner node's notice refused: over --federation-max-notices-per-minute"
            );
            Error::TooManyRequests { retry_after_secs }
        })
    }

    /// Checks a node token from a request's `Authorization: Bearer` value.
    pub async fn authenticate(&self, token: &str) -> Result<NodeCaller> {
        self.tokens.verify(token, &self.resolver).await
    }

    /// The federation endpoint of the node an organisation DID belongs to, from its DID
    /// document, and that node's DID.
    async fn partner(&self, org: &str) -> std::result::Result<(String, String), String> {
        let node =
            did::node_of(org).ok_or_else(|| format!("{org:?} is not an organisation DID"))?;
        let document = self.resolver.resolve(org).await?;
        let endpoint = did::endpoint_of(&document)
            .ok_or_else(|| format!("the DID document of {org} names no federation endpoint"))?;
        let url = url::Url::parse(&endpoint).map_err(|e| format!("{endpoint}: {e}"))?;
        let host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_owned(),
        }
        .to_ascii_lowercase();
        if !self.resolver.is_partner_host(&host) {
            return Err(format!("{endpoint}: not on a partner node"));
        }
        if url.scheme() != "https"
            && !(url.scheme() == "http" && self.resolver.allow_http().contains(&host))
        {
            return Err(format!(
                "{endpoint}: plain HTTP is not allowed for this host"
            ));
        }
        Ok((endpoint, node.to_owned()))
    }

    /// One delivery attempt of an outbox notice.
    pub async fn send(&self, notice: Notice) -> Delivery {
        let (endpoint, node) = match self.partner(&notice.to).await {
            Ok(p) => p,
            Err(e) => return Delivery::Retry(e),
        };
        let token = match self.tokens.issue(&notice.from, &node) {
            Ok(t) => t,
            Err(e) => return Delivery::Retry(e.to_string()),
        };
        let sent = self
            .client
            .post(format!("{endpoint}/inbox"))
            .bearer_auth(token)
            .json(&notice.body)
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => Delivery::Done,
            Ok(r)
                if r.status().is_client_error()
                    && !matches!(r.status().as_u16(), 401 | 408 | 429) =>
            {
                let status = r.status();
                let body = crate::capped::bytes(r, MAX_REFUSAL_BYTES)
                    .await
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                Delivery::Refused(format!("status {status}: {}", truncate(&body)))
            }
            Ok(r) => Delivery::Retry(format!("status {}", r.status())),
            Err(e) => Delivery::Retry(e.to_string()),
        }
    }

    /// Pulls one dataset from its provider's node, as `org` (a reader on this node).
    async fn pull_one(
        &self,
        org: &str,
        remote: &RemoteDataset,
    ) -> std::result::Result<Arc<Value>, String> {
        let key = (org.to_owned(), remote.clone());
        if !self.cache_ttl.is_zero() {
            if let Some((at, v)) = self
                .cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&key)
            {
                if at.elapsed() < self.cache_ttl {
                    return Ok(v.clone());
                }
            }
        }
        let (endpoint, node) = self.partner(&remote.provider).await?;
        let token = self.tokens.issue(org, &node).map_err(|e| e.to_string())?;
        let response = self
            .client
            .get(format!("{endpoint}/datasets"))
            .query(&[("id", remote.dataset.as_str())])
            .bearer_auth(token)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("status {}", response.status()));
        }
        let bytes = crate::capped::bytes(response, MAX_DATASET_BYTES)
            .await
            .map_err(|e| e.to_string())?;
        let value = serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string())?;
        let value = Arc::new(vet::dataset(remote, &node, value)?);
        if !self.cache_ttl.is_zero() {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            cache_insert(&mut cache, key, value.clone(), self.cache_ttl);
        }
        Ok(value)
    }

    /// Pulls datasets in parallel, each within the configured timeout; `None` for one that
    /// failed (logged).
    pub async fn pull(&self, org: &str, remotes: &[RemoteDataset]) -> Vec<Option<Arc<Value>>> {
        let pulls = remotes.iter().map(|r| async move {
            match tokio::time::timeout(self.timeout, self.pull_one(org, r)).await {
                Ok(Ok(v)) => Some(v),
                Ok(Err(e)) => {
                    tracing::warn!(
                        provider = r.provider,
                        dataset = r.dataset,
                        error = e,
                        "dataset not pulled"
                    );
                    None
                }
                Err(_) => {
                    tracing::warn!(
                        provider = r.provider,
                        dataset = r.dataset,
                        "dataset pull timed out"
                    );
                    None
                }
            }
        });
        futures_util::future::join_all(pulls).await
    }
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(200) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pulled_datasets_cache_is_bounded_expired_and_oldest_first() {
        let mut cache = std::collections::HashMap::new();
        let value = Arc::new(Value::Null);
        let ttl = Duration::from_secs(60);
        cache_insert(&mut cache, 0, value.clone(), ttl);
        // Strictly the oldest, whatever the clock's resolution.
        std::thread::sleep(Duration::from_millis(2));
        for i in 1..CACHE_ENTRIES {
            cache_insert(&mut cache, i, value.clone(), ttl);
        }
        // Full: the oldest goes.
        cache_insert(&mut cache, CACHE_ENTRIES, value.clone(), ttl);
        assert_eq!(cache.len(), CACHE_ENTRIES);
        assert!(!cache.contains_key(&0));
        assert!(cache.contains_key(&1) && cache.contains_key(&CACHE_ENTRIES));
        // Full of expired entries: they all go.
        cache_insert(&mut cache, CACHE_ENTRIES + 1, value, Duration::ZERO);
        assert_eq!(cache.len(), 1);
    }
}
