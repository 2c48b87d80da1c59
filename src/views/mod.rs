//! Read views: SPARQL queries from `queries/*.rq` → the spec's JSON shapes.
//!
//! Every read is limited to what the caller may read in the requested scope: `own` is the
//! caller's organisation's records and contribution graphs; `shared` is what other
//! organisations shared with it (filled by the sharing rules; empty until then); `all` is the
//! union, with the caller's own copy winning on duplicates.
//!
//! - [`summary`]: ConsignmentSummary columns, built at intake.
//! - [`codes`]: code list labels.
//! - [`cursor`]: signed keyset cursors.

pub mod codes;
pub mod cursor;
pub mod listing;
pub mod summary;

use std::sync::Arc;

use oxigraph::model::{NamedNode, Term};
use oxigraph::sparql::QuerySolution;
use serde_json::{json, Map, Value};

use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::intake::literal;
use crate::store::{Queries, Store};
use codes::CodeLists;
use cursor::{Cursors, Position};
use listing::Listing;

pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Own,
    Shared,
    All,
}

impl Scope {
    pub fn parse(value: Option<&str>) -> Result<Self> {
        match value {
            None | Some("all") => Ok(Scope::All),
            Some("own") => Ok(Scope::Own),
            Some("shared") => Ok(Scope::Shared),
            Some(other) => Err(Error::invalid_field(
                "scope",
                format!("{other:?} is not one of own, shared, all"),
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Own => "own",
            Scope::Shared => "shared",
            Scope::All => "all",
        }
    }

    fn includes_own(self) -> bool {
        matches!(self, Scope::Own | Scope::All)
    }
}

/// `limit` as the spec has it: a string; default 20, 1 to 100.
pub fn parse_limit(value: Option<&str>) -> Result<usize> {
    let Some(text) = value else {
        return Ok(DEFAULT_LIMIT);
    };
    match text.trim().parse::<i64>() {
        Ok(n) if (1..=MAX_LIMIT as i64).contains(&n) => Ok(n as usize),
        Ok(_) => Err(Error::invalid_field(
            "limit",
            format!("must be between 1 and {MAX_LIMIT}"),
        )),
        Err(_) => Err(Error::invalid_field("limit", "must be a whole number")),
    }
}

pub struct Page {
    pub entities: Vec<Value>,
    pub cursor: Option<String>,
}

/// A consignment the caller may read, as found in the index.
pub struct Visible {
    pub record: NamedNode,
    pub aig: String,
    pub graph: NamedNode,
    pub created: String,
    pub updated: String,
}

pub struct Views {
    store: Arc<Store>,
    queries: Arc<Queries>,
    codes: Arc<CodeLists>,
    cursors: Cursors,
    listing: Arc<Listing>,
}

fn text(row: &QuerySolution, var: &str) -> Option<String> {
    match row.get(var) {
        Some(Term::Literal(l)) => Some(l.value().to_owned()),
        Some(Term::NamedNode(n)) => Some(n.as_str().to_owned()),
        _ => None,
    }
}

fn node(row: &QuerySolution, var: &str) -> Option<NamedNode> {
    match row.get(var) {
        Some(Term::NamedNode(n)) => Some(n.clone()),
        _ => None,
    }
}

fn org_term(caller: &Caller) -> Term {
    NamedNode::new_unchecked(caller.organization.as_str()).into()
}

fn parse_json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or(Value::Null)
}

const NOT_FOUND: &str = "no consignment with this id is available to you";

impl Views {
    pub fn new(
        store: Arc<Store>,
        queries: Arc<Queries>,
        codes: Arc<CodeLists>,
        listing: Arc<Listing>,
        cursor_key: &[u8],
    ) -> Self {
        Self {
            store,
            queries,
            codes,
            cursors: Cursors::new(cursor_key),
            listing,
        }
    }

    /// `GET /consignments`. Blocking.
    pub fn list(
        &self,
        caller: &Caller,
        scope: Scope,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<Page> {
        let org = &caller.organization;
        let after = cursor
            .map(|c| self.cursors.decode(c, "consignments", org, scope.as_str()))
            .transpose()?;
        if !scope.includes_own() {
            // Nothing is shared with anyone until the sharing rules grant it.
            return Ok(Page {
                entities: Vec::new(),
                cursor: None,
            });
        }
        let after_key = match &after {
            Some(p) => Some((
                listing::millis(&p.at)
                    .ok_or_else(|| Error::invalid_field("cursor", "bad position"))?,
                p.id.clone(),
            )),
            None => None,
        };
        let keys = self.listing.page(org, after_key.as_ref(), limit + 1);
        let more = keys.len() > limit;
        let mut rows = Vec::with_capacity(limit);
        for (_, aig) in keys.iter().take(limit) {
            rows.extend(self.summary_row_of(org, aig)?);
        }
        let cursor = match (more, keys.get(limit - 1)) {
            (true, Some((ms, aig))) => Some(
                self.cursors.encode(&Position {
                    list: "consignments".into(),
                    org: org.clone(),
                    scope: scope.as_str().into(),
                    at: chrono::DateTime::from_timestamp_millis(*ms)
                        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                        .unwrap_or_default(),
                    id: aig.clone(),
                }),
            ),
            _ => None,
        };
        let entities = rows.iter().map(summary_row).collect();
        Ok(Page { entities, cursor })
    }

    /// The list row of one of `publisher`'s consignments.
    fn summary_row_of(&self, publisher: &str, aig: &str) -> Result<Option<QuerySolution>> {
        use crate::store::graphs;
        let hex = aig.strip_prefix("aig:").unwrap_or(aig);
        let status = format!("{hex}:{}", graphs::org_key(publisher));
        let rows = self.queries.select(
            &self.store,
            "consignment_summary",
            &[
                ("record", graphs::consignment(hex).into()),
                ("graph", graphs::contribution(hex, publisher).into()),
                ("summaryNode", graphs::summary(hex).into()),
                ("status", graphs::minted("status", &status).into()),
            ],
        )?;
        Ok(rows.into_iter().next())
    }

    /// Resolves a path id (globalId, identifier or `aig:` id) to a consignment the caller may
    /// read in `scope`; 404 otherwise, with the same message whether or not it exists.
    pub fn resolve(&self, caller: &Caller, scope: Scope, id: &str) -> Result<Visible> {
        if !scope.includes_own() {
            return Err(Error::NotFound(NOT_FOUND.into()));
        }
        let rows = self.queries.select(
            &self.store,
            "consignment_by_any_id",
            &[("org", org_term(caller)), ("key", literal(id))],
        )?;
        let row = rows
            .first()
            .ok_or_else(|| Error::NotFound(NOT_FOUND.into()))?;
        Ok(Visible {
            record: node(row, "record").ok_or_else(|| Error::internal("record without IRI"))?,
            aig: text(row, "aig").unwrap_or_default(),
            graph: node(row, "graph").ok_or_else(|| Error::internal("record without graph"))?,
            created: text(row, "created").unwrap_or_default(),
            updated: text(row, "updated").unwrap_or_default(),
        })
    }

    /// The parts of a consignment in the contribution graphs the caller may read in `scope`.
    fn parts(&self, visible: &Visible, scope: Scope) -> Result<Parts> {
        let mut parts = Parts::default();
        let graphs: Vec<&NamedNode> = if scope.includes_own() {
            vec![&visible.graph]
        } else {
            Vec::new()
        };
        for graph in graphs {
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
                    Some("payload") => parts.payload = Some(json),
                    Some("event") => parts.events.push(Part {
                        id,
                        at,
                        json,
                        contributor,
                    }),
                    Some("document") => parts.documents.push(Part {
                        id,
                        at,
                        json,
                        contributor,
                    }),
                    Some("system") => parts.system.push(Part {
                        id,
                        at,
                        json,
                        contributor,
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

    /// `GET /consignments/{id}`: the ConsignmentView. Blocking.
    pub fn view(&self, caller: &Caller, scope: Scope, id: &str) -> Result<Value> {
        let visible = self.resolve(caller, scope, id)?;
        let parts = self.parts(&visible, scope)?;
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
            Value::Array(parts.documents.iter().map(document_record).collect()),
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
            .filter_map(|e| crate::intake::ports::string_value(e.get("identifier")))
            .map(|identifier| {
                let types: Vec<Value> = means_type
                    .map(|raw| self.codes.resolve(raw, CodeLists::transport_means_type))
                    .into_iter()
                    .collect();
                json!({"identifier": identifier, "transportMeansTypes": types})
            })
            .collect();
        view.insert("resolvedTransportEquipment".into(), Value::Array(equipment));
        Ok(Value::Object(view))
    }

    /// `GET /consignments/{id}/events`. Blocking.
    pub fn events(&self, caller: &Caller, scope: Scope, id: &str) -> Result<Vec<Value>> {
        let visible = self.resolve(caller, scope, id)?;
        Ok(self
            .parts(&visible, scope)?
            .events
            .iter()
            .map(event_view)
            .collect())
    }

    /// `GET /consignments/{id}/documents`: deduplicated by documentId, the latest wins.
    pub fn documents(&self, caller: &Caller, scope: Scope, id: &str) -> Result<Vec<Value>> {
        let visible = self.resolve(caller, scope, id)?;
        let parts = self.parts(&visible, scope)?;
        Ok(dedupe_documents(&parts.documents, &self.codes))
    }

    /// `GET /consignments/{id}/documents/{documentId}`.
    pub fn document(
        &self,
        caller: &Caller,
        scope: Scope,
        id: &str,
        document_id: &str,
    ) -> Result<Value> {
        self.documents(caller, scope, id)?
            .into_iter()
            .find(|d| d["documentId"] == document_id)
            .ok_or_else(|| Error::NotFound("no document with this id is available to you".into()))
    }
}

impl Views {
    /// `GET /documents`: the caller's documents across consignments (or of one), newest first.
    pub fn all_documents(
        &self,
        caller: &Caller,
        scope: Scope,
        limit: usize,
        cursor: Option<&str>,
        consignment: Option<&str>,
    ) -> Result<Page> {
        let org = &caller.organization;
        let list = match consignment {
            Some(id) => format!("documents:{id}"),
            None => "documents".to_owned(),
        };
        let after = cursor
            .map(|c| self.cursors.decode(c, &list, org, scope.as_str()))
            .transpose()?;
        if let Some(id) = consignment {
            // One consignment: its (deduplicated) documents, paged in memory — a consignment
            // holds few documents.
            let docs = self.documents(caller, scope, id)?;
            let start = after
                .as_ref()
                .and_then(|p| {
                    docs.iter()
                        .position(|d| d["id"] == p.id.as_str())
                        .map(|i| i + 1)
                })
                .unwrap_or(0);
            let rest = &docs[start.min(docs.len())..];
            let page: Vec<Value> = rest.iter().take(limit).cloned().collect();
            let cursor = (rest.len() > limit).then(|| {
                self.cursors.encode(&Position {
                    list: list.clone(),
                    org: org.clone(),
                    scope: scope.as_str().into(),
                    at: String::new(),
                    id: page
                        .last()
                        .and_then(|d| d["id"].as_str())
                        .unwrap_or_default()
                        .into(),
                })
            });
            return Ok(Page {
                entities: page,
                cursor,
            });
        }
        if !scope.includes_own() {
            return Ok(Page {
                entities: Vec::new(),
                cursor: None,
            });
        }
        let (at, id) = match &after {
            Some(p) => (p.at.as_str(), p.id.as_str()),
            None => ("9999-12-31T23:59:59Z", "~"),
        };
        let bindings = [
            ("org", Term::from(NamedNode::new_unchecked(org.as_str()))),
            (
                "after",
                oxigraph::model::Literal::new_typed_literal(at, crate::vocab::xsd("dateTime"))
                    .into(),
            ),
            ("afterNode", literal(id)),
        ];
        let mut rows = Vec::with_capacity(limit + 1);
        self.queries
            .each(&self.store, "documents_page", &bindings, |row| {
                rows.push(row);
                rows.len() <= limit
            })?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let cursor = match (more, rows.last()) {
            (true, Some(last)) => Some(self.cursors.encode(&Position {
                list,
                org: org.clone(),
                scope: scope.as_str().into(),
                at: text(last, "at").unwrap_or_default(),
                id: text(last, "node").unwrap_or_default(),
            })),
            _ => None,
        };
        let entities = rows
            .iter()
            .map(|row| attachment(&document_part(row), &self.codes, text(row, "aig")))
            .collect();
        Ok(Page { entities, cursor })
    }

    /// `GET /documents/{documentId}`: on one consignment, or searched across the caller's.
    pub fn find_document(
        &self,
        caller: &Caller,
        scope: Scope,
        document_id: &str,
        consignment: Option<&str>,
    ) -> Result<Value> {
        if let Some(id) = consignment {
            return self.document(caller, scope, id, document_id);
        }
        let not_found = || Error::NotFound("no document with this id is available to you".into());
        if !scope.includes_own() {
            return Err(not_found());
        }
        let rows = self.queries.select(
            &self.store,
            "document_by_id",
            &[
                ("org", org_term(caller)),
                ("documentId", literal(document_id)),
            ],
        )?;
        let row = rows.first().ok_or_else(not_found)?;
        Ok(attachment(
            &document_part(row),
            &self.codes,
            text(row, "aig"),
        ))
    }
}

fn document_part(row: &QuerySolution) -> Part {
    Part {
        id: text(row, "node").unwrap_or_default(),
        at: text(row, "at").unwrap_or_default(),
        json: parse_json(&text(row, "json").unwrap_or_default()),
        contributor: text(row, "contributor"),
    }
}

#[derive(Default)]
struct Parts {
    payload: Option<Value>,
    events: Vec<Part>,
    documents: Vec<Part>,
    system: Vec<Part>,
}

struct Part {
    id: String,
    at: String,
    json: Value,
    contributor: Option<String>,
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

fn document_record(part: &Part) -> Value {
    json!({
        "@context": [
            "https://www.w3.org/ns/activitystreams",
            "https://vocabulary.uncefact.org/unece-context-D23B.jsonld",
            "https://w3id.org/dataspace-node/ns"
        ],
        "type": "Document",
        "id": part.json.get("identifier").cloned().unwrap_or(Value::Null),
        "documentRevision": 0,
        "dateCreated": part.at,
        "dateModified": part.at,
        "organizationIdentity": part.contributor,
    })
}

fn dedupe_documents(parts: &[Part], codes: &CodeLists) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for part in parts.iter().rev() {
        let document_id = part
            .json
            .get("identifier")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if out.iter().any(|d| d["documentId"] == document_id) {
            continue;
        }
        out.push(attachment(part, codes, None));
    }
    out
}

/// A DocumentAttachment. Blob metadata, `href` and revisions come with the document store.
fn attachment(part: &Part, codes: &CodeLists, consignment: Option<String>) -> Value {
    let document_id = part
        .json
        .get("identifier")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let raw = part
        .json
        .get("documentTypeCode")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let code = summary::code_of(raw);
    let mut v = json!({
        "id": part.id,
        "documentId": document_id,
        "documentCode": code,
        "documentRevision": 0,
        "history": [],
    });
    if let Some(label) = codes.document(code) {
        v["documentType"] = json!(label);
    }
    if let Some(c) = consignment {
        v["consignmentId"] = json!(c);
    }
    v
}

fn summary_row(row: &QuerySolution) -> Value {
    let mut s = match parse_json(&text(row, "summary").unwrap_or_default()) {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    let aig = text(row, "aig").unwrap_or_default();
    s.insert("id".into(), json!(aig));
    s.insert("aigId".into(), json!(aig));
    if let (Some(name), Some(at)) = (text(row, "statusName"), text(row, "statusAt")) {
        s.insert("latestStatus".into(), json!({"name": name, "date": at}));
    } else if let Some(Value::String(date)) = s.remove("scheduledDeparture") {
        s.insert(
            "latestStatus".into(),
            json!({"name": "scheduledDeparture", "date": date}),
        );
    }
    s.insert("dateCreated".into(), json!(text(row, "created")));
    s.insert("dateUpdated".into(), json!(text(row, "updated")));
    Value::Object(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_and_scope_parsing() {
        assert_eq!(parse_limit(None).unwrap(), DEFAULT_LIMIT);
        assert_eq!(parse_limit(Some("7")).unwrap(), 7);
        for bad in ["0", "-1", "101", "ten", "1.5", ""] {
            assert!(parse_limit(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(Scope::parse(None).unwrap(), Scope::All);
        assert_eq!(Scope::parse(Some("own")).unwrap(), Scope::Own);
        assert!(Scope::parse(Some("mine")).is_err());
    }
}
