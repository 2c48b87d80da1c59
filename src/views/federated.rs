//! Reads across nodes: the dataset this node serves a partner node, and how datasets pulled
//! from partners join the caller's reads.
//!
//! A dataset is one organisation's contribution to one consignment, as its own node holds it
//! (the publisher's also carries the contributions of circle members on its node):
//! `{datasetId, provider, consignment {aigId, globalId, identifier, created, updated},
//! summary?, payload?, events, documents, systemEvents}` — `summary` and `payload` only for
//! the publisher's dataset; documents carry the DocumentRecord rendered by the provider, whose
//! `href` is a pre-signed link on the provider's node.

use std::sync::Arc;

use oxigraph::model::NamedNode;
use serde_json::{json, Value};

use super::{instant, Description, Item, ListPlan, Part, Parts, Read, Views, Visible};
use crate::consignment::cursor::Position;
use crate::consignment::listing;
use crate::consignment::{Entity, Page};
use crate::error::{Error, Result};
use crate::federation::RemoteDataset;
use crate::store::graphs;

const NO_DATASET: &str = "no dataset with this id is available to your organisation";

impl ListPlan {
    /// The partner datasets this page still needs, in row order.
    pub fn remote(&self) -> Vec<RemoteDataset> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Remote(r, _) => Some(r.clone()),
                Item::Ready(_) | Item::Pulled(_) => None,
            })
            .collect()
    }
}

impl Read {
    pub fn remote(&self) -> &[RemoteDataset] {
        &self.visible.remote
    }
}

fn parts_of(v: &Value, key: &str) -> Vec<Part> {
    v.get(key)
        .cloned()
        .and_then(|list| serde_json::from_value(list).ok())
        .unwrap_or_default()
}

impl Views {
    /// Puts the datasets pulled for `plan`'s partner rows in place. A row whose dataset could
    /// not be pulled leaves the page, counted in its provider's one `discoveryFailed` warning,
    /// and its node is asked nothing more in this read: its other rows are counted as the walk
    /// passes them, so a partner that announced many consignments and stopped answering costs
    /// one wait per read and leaves the caller's own and reachable rows on the page.
    pub fn fill(&self, plan: &mut ListPlan, pulled: Vec<Option<Arc<Value>>>) {
        let mut pulled = pulled.into_iter();
        for item in std::mem::take(&mut plan.items) {
            match item {
                Item::Remote(remote, ids) => {
                    match pulled
                        .next()
                        .flatten()
                        .and_then(|d| d.get("summary").cloned())
                    {
                        Some(Value::Object(mut summary)) => {
                            summary.extend(ids);
                            plan.items.push(Item::Pulled(Value::Object(summary)));
                        }
                        _ => plan.unfilled.pull_failed(&remote),
                    }
                }
                other => plan.items.push(other),
            }
        }
    }

    /// The page of a filled plan: its rows, a cursor when a row follows, a warning per
    /// provider whose rows it left out.
    pub fn finish_list(&self, mut plan: ListPlan) -> Page {
        let mut entities = Vec::with_capacity(plan.items.len());
        for item in std::mem::take(&mut plan.items) {
            match item {
                Item::Ready(text) => entities.push(Entity::Text(text)),
                Item::Pulled(value) => entities.push(Entity::Value(value)),
                // Never pulled (not left by a read that pulls): left out as unfilled.
                Item::Remote(remote, _) => plan.unfilled.pull_failed(&remote),
            }
        }
        let warnings = plan
            .unfilled
            .providers
            .iter()
            .map(|(provider, dataset, rows)| {
                json!({"code": "discoveryFailed", "provider": provider, "datasetId": dataset,
                       "rows": rows})
            })
            .collect();
        let cursor = plan.consumed.filter(|_| plan.more).map(|(ms, bits)| {
            self.cursors.encode(&Position {
                list: "consignments".into(),
                org: plan.org.clone(),
                scope: plan.scope.as_str().into(),
                at: chrono::DateTime::from_timestamp_millis(ms)
                    .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                    .unwrap_or_default(),
                id: listing::aig(&(ms, bits)),
            })
        });
        Page {
            entities,
            cursor,
            warnings,
        }
    }

    /// Joins pulled partner datasets to a read: their events, documents and system events
    /// join the caller's own; the publisher's payload comes from its dataset when the
    /// description is held elsewhere. A dataset that could not be pulled is left out. When
    /// nothing of the consignment could be read at all, "not found".
    pub fn join(&self, read: &mut Read, pulled: Vec<Option<Arc<Value>>>) -> Result<()> {
        let mut any = !read.visible.graphs.is_empty();
        let publisher_graph = read.visible.graph.as_str().to_owned();
        let remote = read.visible.remote.clone();
        for (remote, dataset) in remote.iter().zip(pulled) {
            let Some(dataset) = dataset else { continue };
            any = true;
            // The description is the publisher's: another member's dataset may not replace it.
            if read.parts.payload.is_none()
                && remote.dataset == publisher_graph
                && dataset.get("payload").is_some_and(Value::is_object)
            {
                read.parts.payload = dataset.get("payload").cloned();
            }
            read.parts.events.extend(parts_of(&dataset, "events"));
            read.parts.documents.extend(parts_of(&dataset, "documents"));
            read.parts.system.extend(parts_of(&dataset, "systemEvents"));
        }
        if !any {
            return Err(Error::NotFound(super::NOT_FOUND.into()));
        }
        let parts = &mut read.parts;
        for list in [&mut parts.events, &mut parts.system, &mut parts.documents] {
            list.sort_by(|a, b| instant(&a.at).cmp(&instant(&b.at)).then(a.id.cmp(&b.id)));
        }
        Ok(())
    }

    /// `GET /federation/datasets?id=`: one of this node's organisations' contributions, for a
    /// partner organisation `requester` in the consignment's circle (or its publisher, for a
    /// contribution this node offered it). Anything else is "not found". Blocking.
    pub fn dataset(&self, requester: &str, dataset: &str) -> Result<Value> {
        let not_found = || Error::NotFound(NO_DATASET.into());
        let (hex, key) = graphs::parse_contribution(dataset).ok_or_else(not_found)?;
        let row = crate::store::index::by_any_id(&self.store, &format!("aig:{hex}"))?
            .into_iter()
            .next()
            .ok_or_else(not_found)?;
        let (record, publisher_graph, publisher) = (row.record, row.graph, row.publisher);
        let owner = self
            .dataset_owner(&record, &publisher, key, requester)?
            .ok_or_else(not_found)?;
        // The publisher's dataset also carries what the circle's other members on this node
        // contributed: the partner would read it here as a member of the circle.
        let mut held = vec![graphs::contribution(hex, &owner)];
        if owner == publisher {
            held.extend(
                self.sharing
                    .contributors(&record)?
                    .iter()
                    .filter(|c| *c != requester && !self.sharing.is_remote(c))
                    .map(|c| graphs::contribution(hex, c)),
            );
        }
        let aig = row.aig.clone();
        let visible = Visible {
            record,
            aig: aig.clone(),
            graph: publisher_graph,
            created: row.created.clone(),
            updated: row.updated.clone(),
            graphs: held,
            remote: Vec::new(),
        };
        let mut parts: Parts = self.parts(&visible, None, Description::Read)?;
        for d in &mut parts.documents {
            d.partner = Some(super::Partner {
                record: self.document_record(d),
                attachment: self.attachment(d, None, crate::documents::LinkUse::Single),
            });
        }
        let mut out = json!({
            "datasetId": dataset,
            "provider": owner,
            "consignment": {
                "aigId": aig,
                "globalId": row.global_id,
                "identifier": row.identifier,
                "created": visible.created,
                "updated": visible.updated,
            },
            "events": parts.events,
            "documents": parts.documents,
            "systemEvents": parts.system,
        });
        if owner == publisher {
            if let Some(summary) = self.summary_row_of(&publisher, &aig)? {
                out["summary"] = super::parse_json(&summary);
            }
            out["payload"] = parts.payload.unwrap_or(Value::Null);
        }
        Ok(out)
    }

    /// Who wrote the dataset keyed `key` of consignment `record`, when `requester` may pull it:
    /// an organisation of this node (never a dataset pulled from elsewhere), in the circle
    /// with the requester, and not the requester itself.
    fn dataset_owner(
        &self,
        record: &NamedNode,
        publisher: &str,
        key: &str,
        requester: &str,
    ) -> Result<Option<String>> {
        let owner = if graphs::org_key(publisher) == key {
            Some(publisher.to_owned())
        } else {
            self.sharing
                .contributors(record)?
                .into_iter()
                .find(|c| graphs::org_key(c) == key)
        };
        let Some(owner) = owner.filter(|o| !self.sharing.is_remote(o)) else {
            return Ok(None);
        };
        let allowed = requester == publisher || self.sharing.is_shared_with(record, requester)?;
        Ok((allowed && requester != owner).then_some(owner))
    }
}
