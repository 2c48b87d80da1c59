//! The catalog a participant sees: one dataset per consignment shared with its organisation
//! DID, newest first, in pages; each with an offer carrying the constraints of the policies
//! that share it and one distribution, an HTTP pull from this node.

use oxigraph::model::{NamedNode, Term};
use serde_json::{json, Value};

use super::{message, Dsp, CONTEXT, FORMAT};
use crate::consignment::listing::{self, Key};
use crate::error::{Error, Result};
use crate::sharing::offers;
use crate::store::graphs;
use crate::vocab::dsn;

/// Dataset ids: `urn:dataspace-node:dataset:<aig hex>`.
const DATASET: &str = "urn:dataspace-node:dataset:";

/// Datasets kept: a catalog page is mostly their building otherwise (two point reads, the
/// summary parsed, the offer's grounds found). Bounded: emptied when full.
const CACHED: usize = 20_000;

/// A dataset cached: the record version and policy epoch it was built at, and the dataset.
type Entry = (u64, u64, Value);

/// Datasets as offered, by (record bits, participant).
#[derive(Default)]
pub struct Cache(std::sync::Mutex<std::collections::HashMap<(u128, String), Entry>>);

/// A page of a catalog and where the next one starts.
pub struct CatalogPage {
    pub catalog: Value,
    pub next: Option<String>,
}

/// A position in a participant's list, as a page's `next` link carries it.
fn cursor(key: &Key) -> String {
    format!("{}.{:032x}", key.0, key.1)
}

fn parse_cursor(text: &str) -> Result<Key> {
    let bad = || Error::invalid_field("cursor", "not a position this catalog handed out");
    let (ms, bits) = text.split_once('.').ok_or_else(bad)?;
    Ok((
        ms.parse().map_err(|_| bad())?,
        u128::from_str_radix(bits, 16).map_err(|_| bad())?,
    ))
}

impl Dsp {
    fn data_service(&self) -> Value {
        json!({
            "@id": format!("{}#dsp", self.identity.node_did()),
            "@type": "DataService",
            "endpointURL": self.identity.dsp_base(),
        })
    }

    /// `POST catalog/request`: a page of `participant`'s catalog (at most `limit` datasets,
    /// from `after`). Only an empty or absent `filter` is understood. Blocking.
    pub fn catalog(
        &self,
        participant: &str,
        request: &Value,
        after: Option<&str>,
        limit: usize,
    ) -> Result<CatalogPage> {
        let message = message::check(request, "CatalogRequestMessage")?;
        match message.get("filter") {
            None | Some(Value::Null) => {}
            Some(Value::Array(f)) if f.is_empty() => {}
            Some(_) => {
                return Err(Error::invalid_field(
                    "filter",
                    "filters are not supported: ask without one",
                ))
            }
        }
        let after = after.map(parse_cursor).transpose()?;
        let keys = self
            .sharing
            .shared_page(participant, after.as_ref(), limit + 1);
        let mut datasets = Vec::new();
        for key in keys.iter().take(limit) {
            let hex = listing::aig(key);
            let hex = hex.strip_prefix("aig:").unwrap_or(&hex);
            if let Some(d) = self.cached_dataset(participant, hex)? {
                datasets.push(d);
            }
        }
        let next = (keys.len() > limit).then(|| cursor(&keys[limit - 1]));
        let mut catalog = json!({
            "@context": [CONTEXT],
            "@id": format!("urn:dataspace-node:catalog:{}", graphs::org_key(participant)),
            "@type": "Catalog",
            "participantId": self.identity.node_did(),
            "service": [self.data_service()],
        });
        // The schema wants at least one dataset when the member is there at all.
        if !datasets.is_empty() {
            catalog["dataset"] = Value::Array(datasets);
        }
        Ok(CatalogPage { catalog, next })
    }

    /// `GET catalog/datasets/{id}`: one dataset, 404 unless shared with `participant`.
    /// Blocking.
    pub fn dataset(&self, participant: &str, id: &str) -> Result<Value> {
        let not_found = || Error::NotFound(format!("no dataset {id} is offered to you"));
        let hex = dataset_hex(id).ok_or_else(not_found)?;
        let bits = listing::id_bits(hex).ok_or_else(not_found)?;
        if !self.sharing.shares_with(participant, bits) {
            return Err(not_found());
        }
        let mut dataset = self
            .dataset_of(participant, hex, true)?
            .ok_or_else(not_found)?;
        dataset["@context"] = json!([CONTEXT]);
        Ok(dataset)
    }

    /// What this node offers `participant` of its consignment `hex`: the publisher, the
    /// summary columns and the offer's permission. `None` for a consignment this node does
    /// not publish (a partner's, which its own node offers). Blocking.
    pub(super) fn offered(&self, participant: &str, hex: &str) -> Result<Option<Offered>> {
        let record = graphs::consignment(hex);
        let publisher =
            match self
                .store
                .value(&record, &dsn("publisher"), &graphs::consignment_index())?
            {
                Some(Term::NamedNode(p)) if !self.federation.is_remote(p.as_str()) => p,
                _ => return Ok(None),
            };
        let summary = match self.store.value(
            &graphs::summary(hex),
            &dsn("summaryJson"),
            &graphs::contribution(hex, publisher.as_str()),
        )? {
            Some(Term::Literal(l)) => serde_json::from_str::<Value>(l.value()).unwrap_or_default(),
            _ => return Ok(None),
        };
        let grounds =
            self.sharing
                .grounds(&record, &offers::facts_of_summary(&summary), participant)?;
        let permission: Vec<Value> = if grounds.is_empty() {
            vec![json!({"action": "use"})]
        } else {
            grounds
                .into_iter()
                .map(|c| json!({"action": "use", "constraint": c}))
                .collect()
        };
        Ok(Some(Offered {
            publisher,
            summary,
            permission,
        }))
    }

    /// [`Dsp::dataset_of`] (not inline), from the cache while neither the record nor the
    /// policies changed since it was built.
    fn cached_dataset(&self, participant: &str, hex: &str) -> Result<Option<Value>> {
        let Some(bits) = listing::id_bits(hex) else {
            return Ok(None);
        };
        let key = (bits, participant.to_owned());
        // Read before building: a change meanwhile leaves the entry under the old numbers.
        let (version, epoch) = (self.listing.rows.version(bits), self.sharing.policy_epoch());
        let cache = || self.datasets.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((v, e, d)) = cache().get(&key) {
            if (*v, *e) == (version, epoch) {
                return Ok(Some(d.clone()));
            }
        }
        let built = self.dataset_of(participant, hex, false)?;
        if let Some(d) = &built {
            let mut c = cache();
            if c.len() >= CACHED {
                c.clear();
            }
            c.insert(key, (version, epoch, d.clone()));
        }
        Ok(built)
    }

    /// The dataset of this node's consignment `hex` as offered to `participant`.
    fn dataset_of(&self, participant: &str, hex: &str, inline: bool) -> Result<Option<Value>> {
        let Some(offered) = self.offered(participant, hex)? else {
            return Ok(None);
        };
        let service = if inline {
            self.data_service()
        } else {
            json!(format!("{}#dsp", self.identity.node_did()))
        };
        Ok(Some(json!({
            "@id": dataset_id(hex),
            "@type": "Dataset",
            "title": title(&offered.summary, hex),
            "description": description(&offered.summary, &offered.publisher),
            "hasPolicy": [{
                "@id": offer_id(hex, participant),
                "@type": "Offer",
                "permission": offered.permission,
            }],
            "distribution": [{"@type": "Distribution", "format": FORMAT, "accessService": service}],
        })))
    }
}

/// What is offered of one consignment.
pub(super) struct Offered {
    pub publisher: NamedNode,
    pub summary: Value,
    pub permission: Vec<Value>,
}

pub fn dataset_id(hex: &str) -> String {
    format!("{DATASET}{hex}")
}

/// The consignment (aig hex) a dataset id names.
pub fn dataset_hex(id: &str) -> Option<&str> {
    let hex = id.strip_prefix(DATASET)?;
    listing::id_bits(hex).map(|_| hex)
}

/// The consignment (aig hex) and participant key an offer id names.
pub fn offer_parts(id: &str) -> Option<(&str, &str)> {
    let rest = id.strip_prefix("urn:dataspace-node:offer:")?;
    let (hex, key) = rest.split_once(':')?;
    listing::id_bits(hex).map(|_| (hex, key))
}

/// The offer of dataset `hex` to `participant`: stable, one per pair.
pub fn offer_id(hex: &str, participant: &str) -> String {
    format!(
        "urn:dataspace-node:offer:{hex}:{}",
        graphs::org_key(participant)
    )
}

fn text<'a>(summary: &'a Value, key: &str) -> Option<&'a str> {
    summary.get(key).and_then(Value::as_str)
}

fn title(summary: &Value, hex: &str) -> String {
    let id = text(summary, "identifier")
        .or_else(|| text(summary, "globalId"))
        .map_or_else(|| format!("aig:{hex}"), str::to_owned);
    format!("Consignment {id}")
}

fn description(summary: &Value, publisher: &NamedNode) -> String {
    let port = |which: &str| {
        text(summary, &format!("portOf{which}"))
            .or_else(|| text(summary, &format!("portOf{which}Code")))
            .unwrap_or("unknown")
            .to_owned()
    };
    let global = text(summary, "globalId").unwrap_or("-");
    format!(
        "Consignment {global} from {} to {}, published by {}",
        port("Exit"),
        port("Entry"),
        publisher.as_str()
    )
}
