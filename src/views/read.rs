//! One consignment as read from this node: its parts in the caller's graphs, rendered as the
//! ConsignmentView and its EventViews.

use oxigraph::sparql::QuerySolution;

use crate::store::parts::{Kind, PartRow};

use super::*;

impl Views {
    /// The parts of a consignment in the contribution graphs the caller may read: as they are
    /// now, or as they stood at `when` (an `xsd:dateTime`; the description excepted, which
    /// [`Views::read_at`] takes from its revision). The description's JSON (an activity's
    /// payload, read and parsed) only when `description` says it is rendered.
    pub(super) fn parts(
        &self,
        visible: &Visible,
        when: Option<&Term>,
        description: Description,
    ) -> Result<Parts> {
        let mut parts = Parts::default();
        match when {
            None => {
                for graph in &visible.graphs {
                    for row in crate::store::parts::parts(&self.store, graph, &visible.record)? {
                        parts.take(row, graph, visible);
                    }
                }
            }
            Some(when) => {
                let extra = Some(("when", when.clone()));
                self.in_each_graph(visible, Query::ConsignmentPartsAt, extra, |graph, row| {
                    parts.take(part_row(&row), graph, visible)
                })?;
            }
        }
        let wanted = parts
            .description
            .take()
            .filter(|_| description == Description::Read);
        if let Some((publisher, entry)) = wanted {
            let graph = graphs::activities(&publisher);
            parts.payload = crate::store::activities::of_entry(&self.store, &graph, &entry)?
                .and_then(|activity| activity.get("object").cloned());
        }
        parts.sort();
        Ok(parts)
    }

    /// Runs `query` in each contribution graph the caller reads, the graph and the consignment
    /// (and `extra`) bound.
    pub(super) fn in_each_graph(
        &self,
        visible: &Visible,
        query: Query,
        extra: Option<(&str, Term)>,
        mut each: impl FnMut(&NamedNode, QuerySolution),
    ) -> Result<()> {
        for graph in &visible.graphs {
            let mut bindings = vec![
                ("graph", graph.clone().into()),
                ("record", visible.record.clone().into()),
            ];
            bindings.extend(extra.clone());
            for row in self.queries.select(&self.store, query, &bindings)? {
                each(graph, row);
            }
        }
        Ok(())
    }

    /// `GET /consignments/{id}` (and its events and documents, which leave the description
    /// out): the consignment from what this node holds; the partner datasets the caller may
    /// read are pulled by [`Views::finish`]. Blocking.
    pub fn read(
        &self,
        caller: &Caller,
        scope: Scope,
        id: &str,
        description: Description,
    ) -> Result<Read> {
        let mut visible = self.resolve(caller, scope, id)?;
        let parts = match self.own_updated(&mut visible, description)? {
            Some(parts) => parts,
            None => self.parts(&visible, None, description)?,
        };
        Ok(Read { visible, parts })
    }

    /// Without the publisher's contribution (a contributor whose grant was revoked, or the
    /// `own` scope of one), the record's last change is not the caller's to see: its own last
    /// revision is `updated` — in the current read and as the bound of a point-in-time one.
    /// Returns the parts it read for that (`None` when the caller reads the publisher's).
    pub(super) fn own_updated(
        &self,
        visible: &mut Visible,
        description: Description,
    ) -> Result<Option<Parts>> {
        let publishers = visible.graphs.contains(&visible.graph)
            || visible
                .remote
                .iter()
                .any(|r| r.dataset == visible.graph.as_str());
        if publishers {
            return Ok(None);
        }
        let parts = self.parts(visible, None, description)?;
        visible.updated = last_revision(&parts).unwrap_or_else(|| visible.created.clone());
        Ok(Some(parts))
    }

    /// The ConsignmentView of a read, its download links signed for `org`.
    pub fn render_view(&self, read: &Read, org: &str) -> Value {
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
                        None => self.document_record(d, org),
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

/// Whether a read renders the consignment's description (the view) or only its events,
/// documents and system events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Description {
    Read,
    Skip,
}

/// One consignment as read from this node, before partner datasets join it.
pub struct Read {
    pub visible: Visible,
    pub(super) parts: Parts,
}

#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Parts {
    pub(super) payload: Option<Value>,
    /// Where the payload is yet to be read from: the publisher and the log entry of the
    /// activity whose payload keeps it.
    #[serde(skip)]
    description: Option<(String, String)>,
    pub(super) events: Vec<Part>,
    pub(super) documents: Vec<Part>,
    pub(super) system: Vec<Part>,
}

impl Parts {
    /// One part read from `graph`.
    pub(super) fn take(&mut self, row: PartRow, graph: &NamedNode, visible: &Visible) {
        let json = parse_json(row.json.as_deref().unwrap_or_default());
        let at = row.at.unwrap_or_default();
        let (id, contributor) = (row.node, row.contributor);
        match row.kind {
            Some(Kind::Payload) if *graph == visible.graph => {
                if let (Some(entry), Some(publisher)) = (row.entry, contributor) {
                    let entry = entry.rsplit(':').next().unwrap_or_default().to_owned();
                    self.description = Some((publisher, entry));
                }
            }
            Some(Kind::Event) => self.events.push(Part::new(id, at, json, contributor)),
            Some(Kind::Document) => self.documents.push(Part::new(id, at, json, contributor)),
            Some(Kind::System) => self.system.push(Part::new(id, at, json, contributor)),
            _ => {}
        }
    }

    /// Events, system events and documents in time order (ties by id).
    pub(super) fn sort(&mut self) {
        for list in [&mut self.events, &mut self.system, &mut self.documents] {
            list.sort_by(|a, b| instant(&a.at).cmp(&instant(&b.at)).then(a.id.cmp(&b.id)));
        }
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Part {
    pub(super) id: String,
    pub(super) at: String,
    /// The stored JSON: an event's payload, a document revision's facts, a system event.
    pub(super) json: Value,
    pub(super) contributor: Option<String>,
    /// A partner's document as its node rendered it (its links point there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) partner: Option<Partner>,
}

impl Part {
    /// A part read from this node's store (no partner rendering).
    fn new(id: String, at: String, json: Value, contributor: Option<String>) -> Self {
        Self {
            id,
            at,
            json,
            contributor,
            partner: None,
        }
    }
}

/// A document as the providing node renders it: DocumentRecord and DocumentAttachment.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Partner {
    pub(super) record: Value,
    pub(super) attachment: Value,
}

/// A row of `consignment_parts_at` as the part it names.
fn part_row(row: &QuerySolution) -> PartRow {
    PartRow {
        kind: match text(row, "kind").as_deref() {
            Some("event") => Some(Kind::Event),
            Some("document") => Some(Kind::Document),
            Some("system") => Some(Kind::System),
            _ => None,
        },
        node: text(row, "node").unwrap_or_default(),
        json: text(row, "json"),
        at: text(row, "at"),
        contributor: text(row, "contributor"),
        entry: None,
    }
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

/// When the last revision among `parts` was made, as the store gives times back (as the
/// history's entries and the other reads show them).
fn last_revision(parts: &Parts) -> Option<String> {
    let last = parts.system.iter().max_by_key(|p| instant(&p.at))?;
    Some(last.at.clone())
}
