//! A consignment's history: its revisions (the system events every applied Create, Update and
//! Add leaves in the contributor's graph), newest first, with the node's attestation of each;
//! and the consignment as it stood at an instant (`?at=`).
//!
//! Both read the contribution graphs the scope gives, like every read: a grantee reads the
//! publisher's revisions from the Create on, since a grant shares the consignment and not only
//! its changes from then. Partner nodes' contributions are not part of either (they are pulled
//! live, as they are now).

use std::cell::OnceCell;

use chrono::{DateTime, FixedOffset, SecondsFormat, Utc};
use oxigraph::model::{Literal, NamedNode, Term};

use super::*;
use crate::consignment::Page;
use crate::store::activities;
use crate::vocab::xsd;

/// One revision, as stored.
struct Revision {
    /// The hex of the system event's IRI.
    id: String,
    /// The stored `dsn:date`, as the view's `created` and `updated` write dates.
    date: String,
    at: Option<DateTime<FixedOffset>>,
    /// The system event's JSON (who, what, when, which log entry), parsed only for the
    /// revisions a page shows: a consignment may have thousands of revisions.
    raw: String,
    json: OnceCell<Value>,
    changed: Option<String>,
}

impl Revision {
    fn field(&self, path: &[&str]) -> Option<&str> {
        let json = self.json.get_or_init(|| parse_json(&self.raw));
        path.iter()
            .try_fold(json, |v, k| v.get(*k))
            .and_then(Value::as_str)
    }

    fn entry_id(&self) -> Option<&str> {
        self.field(&["object", "detail", "activityLogId"])
    }

    /// The contributing organisation's activity graph (where its activity is kept).
    fn activity_graph(&self) -> Option<NamedNode> {
        self.field(&["source", "detail", "organizationId"])
            .map(graphs::activities)
    }
}

const NO_REVISION: &str = "no revision with this id in this consignment's history";

impl Views {
    /// `GET /consignments/{id}/history`. Blocking.
    pub fn history(
        &self,
        caller: &Caller,
        scope: Scope,
        id: &str,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<Page> {
        let visible = self.resolve(caller, scope, id)?;
        let list = format!("history:{}", visible.aig);
        let org = caller.organization.as_str();
        let after = cursor
            .map(|c| self.cursors.decode(c, &list, org, scope.as_str()))
            .transpose()?
            .map(|p| (instant(&p.at), p.id));
        let mut rows: Vec<Revision> = self
            .revisions(&visible)?
            .into_iter()
            .filter(|r| match &after {
                Some((at, id)) => (r.at, &r.id) < (*at, id),
                None => true,
            })
            .collect();
        let more = rows.len() > limit;
        rows.truncate(limit);
        let cursor = match (more, rows.last()) {
            (true, Some(last)) => Some(self.cursors.encode(&Position {
                list,
                org: org.to_owned(),
                scope: scope.as_str().into(),
                at: last.date.clone(),
                id: last.id.clone(),
            })),
            _ => None,
        };
        let entities = rows
            .iter()
            .map(|r| self.history_entry(r))
            .collect::<Result<_>>()?;
        Ok(Page::new(entities, cursor))
    }

    /// `GET /consignments/{id}/history/{revision}`: one entry, with the description as that
    /// revision sent it (a Create or Update). Blocking.
    pub fn revision(
        &self,
        caller: &Caller,
        scope: Scope,
        id: &str,
        revision: &str,
    ) -> Result<Value> {
        let visible = self.resolve(caller, scope, id)?;
        let found = self
            .revisions(&visible)?
            .into_iter()
            .find(|r| r.id == revision)
            .ok_or_else(|| Error::NotFound(NO_REVISION.into()))?;
        let mut entry = self.history_entry(&found)?;
        let changes_description = found.field(&["object", "type"]) == Some("Consignment");
        if let (true, Some(log), Some(graph)) = (
            changes_description,
            found.entry_id(),
            found.activity_graph(),
        ) {
            if let Some(object) = activities::of_entry(&self.store, &graph, log)?
                .and_then(|activity| activity.get("object").cloned())
            {
                entry["description"] = object;
            }
        }
        Ok(entry)
    }

    /// Every revision in the graphs the caller reads, newest first.
    fn revisions(&self, visible: &Visible) -> Result<Vec<Revision>> {
        let mut out = Vec::new();
        self.in_each_graph(visible, Query::ConsignmentHistory, None, |_, row| {
            let iri = text(&row, "revision").unwrap_or_default();
            let date = text(&row, "date").unwrap_or_default();
            out.push(Revision {
                id: iri.rsplit(':').next().unwrap_or_default().to_owned(),
                at: instant(&date),
                date,
                raw: text(&row, "json").unwrap_or_default(),
                json: OnceCell::new(),
                changed: text(&row, "changed"),
            });
        })?;
        out.sort_by(|a, b| (b.at, &b.id).cmp(&(a.at, &a.id)));
        out.dedup_by(|a, b| a.id == b.id);
        Ok(out)
    }

    /// A history entry: who changed what, when, and the node's attestation of it.
    fn history_entry(&self, r: &Revision) -> Result<Value> {
        let mut entry = Map::new();
        entry.insert("revision".into(), json!(r.id));
        entry.insert("type".into(), json!(r.field(&["typeCode"])));
        entry.insert("date".into(), json!(r.date));
        entry.insert(
            "organizationIdentity".into(),
            json!(r.field(&["source", "detail", "organizationId"])),
        );
        entry.insert("userIdentity".into(), json!(r.field(&["source", "id"])));
        entry.insert("activityLogEntryId".into(), json!(r.entry_id()));
        let changed = r.changed.as_deref().map_or(Value::Null, parse_json);
        entry.insert("changed".into(), changed);
        entry.insert(
            "object".into(),
            json!({"type": r.field(&["object", "type"]), "id": r.field(&["object", "id"])}),
        );
        let credential = match (r.activity_graph(), r.entry_id()) {
            (Some(graph), Some(entry)) => activities::credential_of(&self.store, &graph, entry)?,
            _ => None,
        };
        if let Some(jws) = credential {
            entry.insert("attestation".into(), json!(jws));
        }
        Ok(Value::Object(entry))
    }

    /// The consignment as it stood at `at` (`?at=`): the description of the revision then
    /// current, the events and documents added by then, each document at its revision then
    /// current. Before the Create: not found. Always from the history, also at or after the
    /// last change: the reads of a request are not one snapshot, and a change committed
    /// between finding the record and reading its parts would otherwise pass as the state at
    /// `at`. Blocking.
    pub fn read_at(
        &self,
        caller: &Caller,
        scope: Scope,
        id: &str,
        at: DateTime<FixedOffset>,
    ) -> Result<Read> {
        let mut visible = self.resolve(caller, scope, id)?;
        // Partner nodes serve their contributions as they are now: none at an instant.
        visible.remote.clear();
        let when = self.instant_in_history(&visible, at)?;
        let mut parts = self.parts(&visible, Some(&when), Description::Read)?;
        // As in the current read: the description only when the scope reads the publisher's.
        if visible.graphs.contains(&visible.graph) {
            parts.payload = self
                .description_at(&visible, &when)?
                .and_then(|activity| activity.get("object").cloned());
        }
        // The last revision by then the caller reads (parts are in time order).
        visible.updated = match parts.system.last() {
            Some(last) => last.at.clone(),
            None => visible.created.clone(),
        };
        Ok(Read { visible, parts })
    }

    /// `at` as a bound `xsd:dateTime`; not found before the consignment's Create.
    pub(super) fn instant_in_history(
        &self,
        visible: &Visible,
        at: DateTime<FixedOffset>,
    ) -> Result<Term> {
        if instant(&visible.created).is_none_or(|created| at < created) {
            return Err(Error::NotFound(format!(
                "this consignment was not yet created at {}",
                at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
            )));
        }
        let utc = at.with_timezone(&Utc);
        Ok(Literal::new_typed_literal(
            utc.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            xsd("dateTime"),
        )
        .into())
    }

    /// The activity (as stored, with its object) of the revision current at `when`.
    pub(super) fn description_at(&self, visible: &Visible, when: &Term) -> Result<Option<Value>> {
        let rows = self.queries.select(
            &self.store,
            Query::RevisionAt,
            &[
                ("graph", visible.graph.clone().into()),
                ("record", visible.record.clone().into()),
                ("when", when.clone()),
            ],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let entry = text(row, "entry").unwrap_or_default();
        let entry_id = entry.rsplit(':').next().unwrap_or_default();
        let json = parse_json(&text(row, "json").unwrap_or_default());
        let Some(publisher) = json["source"]["detail"]["organizationId"].as_str() else {
            return Ok(None);
        };
        activities::of_entry(&self.store, &graphs::activities(publisher), entry_id)
    }
}

/// Parses `?at=`: an RFC 3339 date-time (ISO 8601 with a time zone), not before 1970.
pub fn parse_at(raw: &str) -> Result<DateTime<FixedOffset>> {
    let at = DateTime::parse_from_rfc3339(raw.trim()).map_err(|_| {
        Error::invalid_field(
            "at",
            "not an ISO 8601 date-time with a time zone (e.g. 2026-03-01T12:00:00Z or \
             2026-03-01T15:00:00%2B03:00: in a query string a `+` must be sent as %2B, a bare \
             `+` reads as a space)",
        )
    })?;
    // chrono takes `:60` (a leap second) as a second past 59; RDF's xsd:dateTime does not.
    if at.timestamp_subsec_nanos() >= 1_000_000_000 {
        return Err(Error::invalid_field("at", "seconds must be below 60"));
    }
    if at.timestamp() < 0 {
        return Err(Error::invalid_field(
            "at",
            "before 1970-01-01T00:00:00Z: the node holds nothing that old",
        ));
    }
    Ok(at)
}
