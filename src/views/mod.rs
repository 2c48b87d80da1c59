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
//! - [`summary`]: ConsignmentSummary columns, built at intake.
//! - [`codes`]: code list labels.
//! - [`cursor`]: signed keyset cursors.
//! - `documents`: DocumentAttachment and DocumentRecord, with download links.
//! - [`linked`]: a consignment as JSON-LD (compacted against D23B), Turtle, N-Quads, ...

mod documents;
mod federated;
pub use documents::pick as pick_document;
pub mod linked;

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
use crate::rdf::literal;
use crate::rdf::{node, text};
use crate::sharing::Sharing;
use crate::store::{graphs, Queries, Store};

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
        contexts: &Contexts,
        cursor_key: &[u8],
    ) -> Result<Self> {
        let compactor =
            Compactor::new(contexts, crate::vocab::UNECE_CONTEXT).map_err(Error::internal)?;
        Ok(Self {
            store,
            queries,
            codes,
            cursors: Cursors::new(cursor_key),
            listing,
            sharing,
            documents,
            compactor,
        })
    }

    /// `GET /consignments`: the caller's consignments (`own`), those shared with it
    /// (`shared`) or both merged newest first, a shared row dropped when the caller has its own
    /// consignment with that identifier (`all`). Blocking.
    /// Rows of consignments held elsewhere come back as [`Item::Remote`], completed by
    /// [`Views::finish_list`] with what their providers send.
    pub fn list(
        &self,
        caller: &Caller,
        scope: Scope,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ListPlan> {
        let org = &caller.organization;
        let mut after = match cursor {
            Some(c) => {
                let p = self
                    .cursors
                    .decode(c, "consignments", org, scope.as_str())?;
                let ms = listing::millis(&p.at)
                    .ok_or_else(|| Error::invalid_field("cursor", "bad position"))?;
                Some((ms, p.id))
            }
            None => None,
        };
        let mut rows = Vec::with_capacity(limit);
        let mut last = None;
        let mut more = false;
        // Both sources are in list order, so the next `limit + 1` keys of the merge are among
        // the next `limit + 1` of each; dropped duplicates only mean another round.
        'scan: loop {
            let mut keys: Vec<(listing::Key, bool)> = Vec::new();
            if scope.includes_own() {
                let own = self.listing.page(org, after.as_ref(), limit + 1);
                keys.extend(own.into_iter().map(|k| (k, true)));
            }
            if scope.includes_shared() {
                let shared = self.sharing.shared_page(org, after.as_ref(), limit + 1);
                keys.extend(shared.into_iter().map(|k| (k, false)));
            }
            if keys.is_empty() {
                break;
            }
            keys.sort_by(|a, b| b.0.cmp(&a.0));
            keys.truncate(limit + 1);
            for (key, own) in keys {
                after = Some(key.clone());
                let row = if own {
                    self.summary_row_of(org, &key.1)?
                        .map(|r| Item::Ready(Arc::unwrap_or_clone(r)))
                } else {
                    self.shared_row(org, &key.1, scope == Scope::All)?
                };
                let Some(row) = row else { continue };
                if rows.len() == limit {
                    more = true;
                    break 'scan;
                }
                rows.push(row);
                last = Some(key);
            }
        }
        let cursor = match (more, last) {
            (true, Some((ms, aig))) => Some(
                self.cursors.encode(&Position {
                    list: "consignments".into(),
                    org: org.clone(),
                    scope: scope.as_str().into(),
                    at: chrono::DateTime::from_timestamp_millis(ms)
                        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                        .unwrap_or_default(),
                    id: aig,
                }),
            ),
            _ => None,
        };
        Ok(ListPlan {
            items: rows,
            cursor,
        })
    }

    /// The list row of a consignment shared with `org`; `None` when `dedupe` and `org` has
    /// its own consignment with the same identifier (its own copy wins).
    fn shared_row(&self, org: &str, aig: &str, dedupe: bool) -> Result<Option<Item>> {
        let hex = aig.strip_prefix("aig:").unwrap_or(aig);
        let record = graphs::consignment(hex);
        let publisher = self
            .store
            .db()
            .quads_for_pattern(
                Some(record.as_ref().into()),
                Some(crate::vocab::dsn("publisher").as_ref()),
                None,
                Some(graphs::consignment_index().as_ref().into()),
            )
            .next()
            .transpose()?
            .and_then(|q| match q.object {
                Term::NamedNode(n) => Some(n.into_string()),
                _ => None,
            });
        let Some(publisher) = publisher else {
            return Ok(None);
        };
        let index = graphs::consignment_index();
        if dedupe {
            if let Some(identifier) = self.fact(&record, "identifier", &index)? {
                let own = self.queries.select(
                    &self.store,
                    "consignment_by_key",
                    &[
                        ("org", NamedNode::new_unchecked(org).into()),
                        ("key", literal(&identifier)),
                    ],
                )?;
                if !own.is_empty() {
                    return Ok(None);
                }
            }
        }
        if self.sharing.is_remote(&publisher) {
            let dataset = self
                .store
                .db()
                .quads_for_pattern(
                    Some(record.as_ref().into()),
                    Some(crate::vocab::dsn("graph").as_ref()),
                    None,
                    Some(index.as_ref().into()),
                )
                .next()
                .transpose()?
                .map(|q| match q.object {
                    Term::NamedNode(n) => n.into_string(),
                    other => other.to_string(),
                });
            return Ok(dataset.map(|dataset| {
                Item::Remote(RemoteDataset {
                    provider: publisher,
                    dataset,
                })
            }));
        }
        Ok(self
            .summary_row_of(&publisher, aig)?
            .map(|r| Item::Ready(Arc::unwrap_or_clone(r))))
    }

    /// The literal value of `s p ?o` in graph `g`.
    fn fact(&self, s: &NamedNode, p: &str, g: &NamedNode) -> Result<Option<String>> {
        let p = crate::vocab::dsn(p);
        let found = self
            .store
            .db()
            .quads_for_pattern(
                Some(s.as_ref().into()),
                Some(p.as_ref()),
                None,
                Some(g.as_ref().into()),
            )
            .next()
            .transpose()?;
        Ok(found.and_then(|q| match q.object {
            Term::Literal(l) => Some(l.value().to_owned()),
            _ => None,
        }))
    }

    /// The list row of one of `publisher`'s consignments: point look-ups in the store's
    /// indexes, every IRI being known from the listing key (the same facts as
    /// `queries/consignment_summary.rq`, which the benchmark runs as the raw baseline; a query
    /// per row cost 0.3 ms of evaluation set-up, most of a 50-row page).
    /// The rendered row: cached ones are cloned, not parsed again (parsing the stored summary
    /// JSON was a fifth of a cached page's time).
    fn summary_row_of(&self, publisher: &str, aig: &str) -> Result<Option<Arc<Value>>> {
        let Some(bits) = listing::id_bits(aig) else {
            return Ok(None);
        };
        let version = match self.listing.rows.get(bits) {
            Ok(row) => return Ok(Some(row)),
            Err(version) => version,
        };
        Ok(self
            .read_summary_row(publisher, aig)?
            .map(|row| self.listing.rows.put(bits, version, summary_row(&row))))
    }

    fn read_summary_row(&self, publisher: &str, aig: &str) -> Result<Option<Row>> {
        let hex = aig.strip_prefix("aig:").unwrap_or(aig);
        let record = graphs::consignment(hex);
        let index = graphs::consignment_index();
        let graph = graphs::contribution(hex, publisher);
        let status = graphs::minted("status", &format!("{hex}:{}", graphs::org_key(publisher)));
        let one = |s: &NamedNode, p: &str, g: &NamedNode| self.fact(s, p, g);
        // The aig id is the listing key's; each look-up is a seek through every level of the
        // store, so none is made twice.
        let (Some(created), Some(updated), Some(summary)) = (
            one(&record, "created", &index)?,
            one(&record, "updated", &index)?,
            one(&graphs::summary(hex), "summaryJson", &graph)?,
        ) else {
            return Ok(None);
        };
        let aig = format!("aig:{hex}");
        // The status node's facts in one scan.
        let (mut name, mut at) = (None, None);
        for quad in self.store.db().quads_for_pattern(
            Some(status.as_ref().into()),
            None,
            None,
            Some(graph.as_ref().into()),
        ) {
            let quad = quad?;
            if let Term::Literal(l) = quad.object {
                match quad.predicate.as_str().strip_prefix(crate::vocab::DSN) {
                    Some("latestTypeCode") => name = Some(l.value().to_owned()),
                    Some("latestAt") => at = Some(l.value().to_owned()),
                    _ => {}
                }
            }
        }
        let status = name.zip(at);
        Ok(Some(Row {
            aig,
            created,
            updated,
            summary,
            status,
        }))
    }

    /// Resolves a path id (globalId, identifier or `aig:` id) to a consignment the caller may
    /// read in `scope`: its own first (the spec: "the caller's own copy wins"), else the one
    /// consignment shared with it under that id. When several publishers' consignments shared
    /// with it carry the id, choosing one would let any of them take over the id (an agency
    /// reading, or adding its report to, another publisher's consignment): 409 listing them,
    /// to be named by aig id. 404 otherwise, with the same message whether or not the
    /// consignment exists.
    pub fn resolve(&self, caller: &Caller, scope: Scope, id: &str) -> Result<Visible> {
        let org = caller.organization.as_str();
        let mut rows = self.queries.select(
            &self.store,
            "consignment_by_any_id",
            &[("key", literal(id))],
        )?;
        // Own records first; the query orders the rest newest first.
        rows.sort_by_key(|row| text(row, "org").as_deref() != Some(org));
        let mut visible: Vec<(Visible, String)> = Vec::new();
        for row in rows {
            let (Some(record), Some(graph), Some(publisher)) =
                (node(&row, "record"), node(&row, "graph"), text(&row, "org"))
            else {
                continue;
            };
            if visible.iter().any(|(v, _)| v.record == record) {
                continue;
            }
            let aig = text(&row, "aig").unwrap_or_default();
            let (graphs, remote) =
                self.scope_graphs(org, scope, &record, &aig, &publisher, &graph)?;
            if graphs.is_empty() && remote.is_empty() {
                continue;
            }
            let own = publisher == org;
            visible.push((
                Visible {
                    record,
                    aig,
                    graph,
                    created: text(&row, "created").unwrap_or_default(),
                    updated: text(&row, "updated").unwrap_or_default(),
                    graphs,
                    remote,
                },
                publisher,
            ));
            if own {
                break;
            }
        }
        let own = visible.first().is_some_and(|(_, p)| p == org);
        match visible.len() {
            0 => Err(Error::NotFound(NOT_FOUND.into())),
            1 => Ok(visible.remove(0).0),
            _ if own => Ok(visible.remove(0).0),
            _ => Err(ambiguous(
                id,
                visible.iter().map(|(v, p)| (v.aig.as_str(), p.as_str())),
            )),
        }
    }

    /// The contribution graphs of one consignment that `org` reads in `scope` (see the module
    /// docs), those held here and those partner nodes hold; both empty when it may read none.
    fn scope_graphs(
        &self,
        org: &str,
        scope: Scope,
        record: &NamedNode,
        aig: &str,
        publisher: &str,
        publisher_graph: &NamedNode,
    ) -> Result<(Vec<NamedNode>, Vec<RemoteDataset>)> {
        let hex = aig.strip_prefix("aig:").unwrap_or(aig);
        let is_publisher = publisher == org;
        let contributors = self.sharing.contributors(record)?;
        let mut out = Vec::new();
        let mut remote = Vec::new();
        if scope.includes_own() && (is_publisher || contributors.iter().any(|c| c == org)) {
            out.push(graphs::contribution(hex, org));
        }
        if scope.includes_shared() && (is_publisher || self.sharing.is_shared_with(record, org)?) {
            let others = (!is_publisher)
                .then(|| (publisher, publisher_graph.clone()))
                .into_iter()
                .chain(
                    contributors
                        .iter()
                        .filter(|c| *c != org)
                        .map(|c| (c.as_str(), graphs::contribution(hex, c))),
                );
            for (owner, graph) in others {
                if self.sharing.is_remote(owner) {
                    remote.push(RemoteDataset {
                        provider: owner.to_owned(),
                        dataset: graph.into_string(),
                    });
                } else {
                    out.push(graph);
                }
            }
        }
        Ok((out, remote))
    }

    /// The parts of a consignment in the contribution graphs the caller may read.
    fn parts(&self, visible: &Visible) -> Result<Parts> {
        let mut parts = Parts::default();
        for graph in &visible.graphs {
            let rows = self.queries.select(
                &self.store,
                "consignment_parts",
                &[
                    ("graph", graph.clone().into()),
                    ("record", visible.record.clone().into()),
                ],
            )?;
            for row in rows {
                let json = parse_json(&text(&row, "json").unwrap_or_default());
                let at = text(&row, "at").unwrap_or_default();
                let id = text(&row, "node").unwrap_or_default();
                let contributor = text(&row, "contributor");
                match text(&row, "kind").as_deref() {
                    Some("payload") if *graph == visible.graph => parts.payload = Some(json),
                    Some("event") => parts.events.push(Part {
                        id,
                        at,
                        json,
                        payload: None,
                        contributor,
                        partner: None,
                    }),
                    Some("document") => parts.documents.push(Part {
                        id,
                        at,
                        json,
                        payload: text(&row, "payload").map(|p| parse_json(&p)),
                        contributor,
                        partner: None,
                    }),
                    Some("system") => parts.system.push(Part {
                        id,
                        at,
                        json,
                        payload: None,
                        contributor,
                        partner: None,
                    }),
                    _ => {}
                }
            }
        }
        for list in [&mut parts.events, &mut parts.system, &mut parts.documents] {
            list.sort_by(|a, b| instant(&a.at).cmp(&instant(&b.at)).then(a.id.cmp(&b.id)));
        }
        Ok(parts)
    }

    /// `GET /consignments/{id}`: the ConsignmentView, from what this node holds; the
    /// partner datasets the caller may read are pulled by [`Views::finish`]. Blocking.
    pub fn read(&self, caller: &Caller, scope: Scope, id: &str) -> Result<Read> {
        let visible = self.resolve(caller, scope, id)?;
        let parts = self.parts(&visible)?;
        Ok(Read { visible, parts })
    }

    /// The ConsignmentView of a read.
    pub fn render_view(&self, read: &Read) -> Value {
        let (visible, parts) = (&read.visible, &read.parts);
        let payload = parts.payload.clone().unwrap_or(Value::Null);
        let departure = payload
            .get("atDepartureTransportMovement")
            .map(first_entry)
            .unwrap_or(&Value::Null);
        let mut view = Map::new();
        view.insert("id".into(), json!(visible.aig));
        view.insert("created".into(), json!(visible.created));
        view.insert("updated".into(), json!(visible.updated));
        view.insert(
            "includedConsignments".into(),
            match payload.get("includedConsignment") {
                Some(Value::Array(items)) => Value::Array(items.clone()),
                Some(single @ Value::Object(_)) => json!([single]),
                _ => json!([]),
            },
        );
        view.insert(
            "documents".into(),
            Value::Array(
                parts
                    .documents
                    .iter()
                    .map(|d| match &d.partner {
                        Some(partner) => partner.record.clone(),
                        None => self.document_record(d),
                    })
                    .collect(),
            ),
        );
        view.insert(
            "events".into(),
            Value::Array(parts.events.iter().map(event_view).collect()),
        );
        view.insert(
            "systemEvents".into(),
            Value::Array(parts.system.iter().map(|s| s.json.clone()).collect()),
        );
        if let Some(mode) = departure.get("transportModeCode").and_then(Value::as_str) {
            view.insert(
                "resolvedTransportMode".into(),
                self.codes.resolve(mode, CodeLists::transport_mode),
            );
        }
        let means_type = departure
            .get("usedTransportMeans")
            .map(first_entry)
            .and_then(|m| m.get("transportMeansTypeCode"))
            .and_then(Value::as_str);
        let equipment: Vec<Value> = entries(payload.get("utilizedTransportEquipment"))
            .filter_map(|e| crate::consignment::ports::string_value(e.get("identifier")))
            .map(|identifier| {
                let types: Vec<Value> = means_type
                    .map(|raw| self.codes.resolve(raw, CodeLists::transport_means_type))
                    .into_iter()
                    .collect();
                json!({"identifier": identifier, "transportMeansTypes": types})
            })
            .collect();
        view.insert("resolvedTransportEquipment".into(), Value::Array(equipment));
        Value::Object(view)
    }

    /// The EventViews of a read.
    pub fn render_events(&self, read: &Read) -> Vec<Value> {
        read.parts.events.iter().map(event_view).collect()
    }
}

/// One consignment as read from this node, before partner datasets join it.
pub struct Read {
    pub visible: Visible,
    parts: Parts,
}

#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Parts {
    payload: Option<Value>,
    events: Vec<Part>,
    documents: Vec<Part>,
    system: Vec<Part>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Part {
    id: String,
    at: String,
    /// The stored JSON: an event's payload, a document revision's facts, a system event.
    json: Value,
    /// A document's payload as sent (for documents recorded before revisions were kept).
    payload: Option<Value>,
    contributor: Option<String>,
    /// A partner's document as its node rendered it (its links point there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    partner: Option<Partner>,
}

/// A document as the providing node renders it: DocumentRecord and DocumentAttachment.
#[derive(serde::Serialize, serde::Deserialize)]
struct Partner {
    record: Value,
    attachment: Value,
}

/// Orders date-times by the instant they name: stored `xsd:dateTime`s come back canonical
/// (`…:44Z`, `…:44.03Z`), so their text does not sort.
fn instant(at: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::parse_from_rfc3339(at).ok()
}

fn first_entry(v: &Value) -> &Value {
    match v {
        Value::Array(items) => items.first().unwrap_or(&Value::Null),
        other => other,
    }
}

fn entries(v: Option<&Value>) -> impl Iterator<Item = &Map<String, Value>> {
    let items: Vec<&Map<String, Value>> = match v {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_object).collect(),
        Some(Value::Object(o)) => vec![o],
        _ => Vec::new(),
    };
    items.into_iter()
}

/// An EventView: the event as sent, with the node's id and who contributed it.
fn event_view(part: &Part) -> Value {
    let mut v = match &part.json {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    v.insert("id".into(), json!(part.id));
    if let Some(c) = &part.contributor {
        v.insert("contributor".into(), json!(c));
    }
    Value::Object(v)
}

/// A list page before partner datasets are pulled.
pub struct ListPlan {
    items: Vec<Item>,
    cursor: Option<String>,
}

/// One row of a list page: ready, or to be pulled from a partner node.
enum Item {
    Ready(Value),
    Remote(RemoteDataset),
}

/// The stored facts of one list row.
fn summary_row(row: &Row) -> Value {
    let mut s = match parse_json(&row.summary) {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    let aig = row.aig.clone();
    s.insert("id".into(), json!(aig));
    s.insert("aigId".into(), json!(aig));
    // The scheduled departure is only the fallback status, never a column of its own.
    let scheduled = s.remove("scheduledDeparture");
    if let Some((name, at)) = &row.status {
        s.insert("latestStatus".into(), json!({"name": name, "date": at}));
    } else if let Some(Value::String(date)) = scheduled {
        s.insert(
            "latestStatus".into(),
            json!({"name": "scheduledDeparture", "date": date}),
        );
    }
    s.insert("dateCreated".into(), json!(row.created));
    s.insert("dateUpdated".into(), json!(row.updated));
    Value::Object(s)
}

/// The 409 for an id that names several publishers' consignments the caller may read.
pub fn ambiguous<'a>(id: &str, candidates: impl Iterator<Item = (&'a str, &'a str)>) -> Error {
    Error::Ambiguous {
        message: format!(
            "{id:?} names consignments of more than one publisher shared with your organisation; \
             name one by its aig id"
        ),
        candidates: candidates
            .map(|(aig, publisher)| serde_json::json!({"aigId": aig, "publisher": publisher}))
            .collect(),
    }
}
