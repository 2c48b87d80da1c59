//! What an applied activity writes, inside the caller's write transaction.
//!
//! - the object's triples, in the organisation's contribution graph for the consignment;
//! - for a consignment, its derived summary facts (ports, dates, payload) on the summary node
//!   of the same graph, and its record (publisher, ids, graph) in the system index;
//! - a system event (CREATE, UPDATE, ADD) in the same contribution graph;
//! - the activity's own triples, the server-injected generator and trust credential, and the
//!   log entry, in the organisation's activity graph.

use std::collections::{HashMap, HashSet};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oxigraph::model::vocab::rdf;
use oxigraph::model::{GraphName, Literal, NamedNode, NamedOrBlankNode, Quad, Term, Triple};
use oxigraph::store::Transaction;
use serde_json::{json, Value};

use super::activity::{Activity, Kind};
use super::log::{Entry, TaskError};
use super::new_hex;
use crate::auth::Caller;
use crate::consignment::codes::CodeLists;
use crate::consignment::ports::{string_value, Port, Ports};
use crate::documents::attest::Attestor;
use crate::documents::{revision, Content, Revision};
use crate::error::{Error, Result};
use crate::jsonld::Expansion;
use crate::rdf::literal;
use crate::sharing::policy::Facts;
use crate::sharing::{readable, Routed, Sharing};
use crate::store::{graphs, Queries};
use crate::store::{Committed, Events};
use crate::vocab::{dsn, unece, xsd};

const AS: &str = "https://www.w3.org/ns/activitystreams#";
const RDF_JSON: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON";

/// Signs the trust credential: the node attests which actor published which activity.
pub struct Credentials {
    key: EncodingKey,
    issuer: String,
}

impl Credentials {
    pub fn new(secret: &[u8], issuer: String) -> Self {
        Self {
            key: EncodingKey::from_secret(secret),
            issuer,
        }
    }

    pub fn issue(&self, actor: &str, activity_hash: &str, entry_id: &str) -> Result<String> {
        let claims = json!({
            "iss": self.issuer,
            "sub": actor,
            "activityHash": activity_hash,
            "jti": entry_id,
            "iat": chrono::Utc::now().timestamp(),
        });
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.key)
            .map_err(|e| Error::internal(format!("credential: {e}")))
    }
}

/// A consignment record from the system index.
struct Record {
    consignment: NamedNode,
    publisher: String,
    aig_hex: String,
    graph: NamedNode,
    global_id: String,
    identifier: String,
}

pub struct Apply<'a> {
    pub caller: &'a Caller,
    pub activity: &'a Activity,
    pub expansion: &'a Expansion,
    pub object_root: &'a NamedOrBlankNode,
    pub object_id: &'a str,
    pub activity_root: &'a NamedNode,
    pub entry_id: &'a str,
    pub activity_hash: &'a str,
    pub ports: &'a Ports,
    pub credentials: &'a Credentials,
    pub queries: &'a Queries,
    pub codes: &'a CodeLists,
    pub sharing: &'a Sharing,
    /// A document's content, taken before the transaction (`None` for anything else, or when
    /// the target consignment was not found then).
    pub content: Option<&'a Content>,
    pub attestor: &'a Attestor,
    /// The time the record takes (created/updated/recorded), decided once per activity.
    pub now: &'a str,
}

/// Counts what it inserts: the task's `result`.
struct Writer<'t, 'tx> {
    tx: &'t mut Transaction<'tx>,
    written: i64,
}

impl Writer<'_, '_> {
    fn add(
        &mut self,
        s: impl Into<NamedOrBlankNode>,
        p: NamedNode,
        o: impl Into<Term>,
        g: &NamedNode,
    ) {
        self.tx
            .insert(&Quad::new(s, p, o, GraphName::NamedNode(g.clone())));
        self.written += 1;
    }

    fn triples(&mut self, triples: &[Triple], g: &NamedNode) {
        for t in triples {
            self.tx.insert(&Quad::new(
                t.subject.clone(),
                t.predicate.clone(),
                t.object.clone(),
                GraphName::NamedNode(g.clone()),
            ));
            self.written += 1;
        }
    }
}

fn date_literal(s: &str) -> Term {
    Literal::new_typed_literal(s, xsd("dateTime")).into()
}

fn json_literal(v: &Value) -> Term {
    Literal::new_typed_literal(v.to_string(), NamedNode::new_unchecked(RDF_JSON)).into()
}

impl Apply<'_> {
    /// `Ok(Ok(statements))` when applied, `Ok(Err(task error))` when the activity cannot be
    /// applied (nothing written), `Err` for internal failures.
    /// What the write changes that in-memory models mirror goes to `events`.
    pub fn run(
        &self,
        tx: &mut Transaction<'_>,
        events: &mut Events,
    ) -> Result<Result<i64, TaskError>> {
        match self.activity.kind {
            Kind::Create => self.create(tx, events),
            Kind::Update => self.update(tx, events),
            Kind::Add => self.add(tx, events),
        }
    }

    fn org(&self) -> &str {
        &self.caller.organization
    }

    /// One of the caller organisation's own consignments, by globalId or identifier.
    fn lookup(&self, tx: &Transaction<'_>, key: &str) -> Result<Option<Record>> {
        Ok(self.find(tx, "consignment_by_key", key)?.into_iter().next())
    }

    /// The consignments other organisations shared with the caller's, by globalId, identifier
    /// or aig id (at most one per record).
    fn lookup_shared(&self, tx: &Transaction<'_>, key: &str) -> Result<Vec<Record>> {
        let mut found: Vec<Record> = Vec::new();
        for record in self.find(tx, "consignment_shared_by_key", key)? {
            if !found.iter().any(|r| r.consignment == record.consignment) {
                found.push(record);
            }
        }
        Ok(found)
    }

    fn find(&self, tx: &Transaction<'_>, query: &str, key: &str) -> Result<Vec<Record>> {
        let rows = self.queries.select_in(
            tx,
            query,
            &[
                ("org", NamedNode::new_unchecked(self.org()).into()),
                ("key", literal(key)),
            ],
        )?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let text = |v: &str| match row.get(v) {
                    Some(Term::Literal(l)) => Some(l.value().to_owned()),
                    _ => None,
                };
                let node = |v: &str| match row.get(v) {
                    Some(Term::NamedNode(n)) => Some(n.clone()),
                    _ => None,
                };
                let aig = text("aig")?;
                Some(Record {
                    consignment: node("record")?,
                    publisher: node("publisher")
                        .map(NamedNode::into_string)
                        .unwrap_or_else(|| self.org().to_owned()),
                    aig_hex: aig.strip_prefix("aig:").unwrap_or(&aig).to_owned(),
                    graph: node("graph")?,
                    global_id: text("globalId")?,
                    identifier: text("identifier")?,
                })
            })
            .collect())
    }

    fn ids(&self) -> (String, String) {
        let object = self.activity.object();
        (
            string_value(object.get("globalId"))
                .unwrap_or_default()
                .to_owned(),
            string_value(object.get("identifier"))
                .unwrap_or_default()
                .to_owned(),
        )
    }

    /// The expansion's triples, with the object's provisional root renamed to `root`, split
    /// into the object's subtree and the rest (activity, actor, target).
    fn split(&self, root: &NamedOrBlankNode) -> (Vec<Triple>, Vec<Triple>) {
        let rename = |n: &NamedOrBlankNode| {
            if n == self.object_root {
                root.clone()
            } else {
                n.clone()
            }
        };
        let renamed: Vec<Triple> = self
            .expansion
            .triples
            .iter()
            .map(|t| {
                let object = match &t.object {
                    Term::NamedNode(n) => rename(&n.clone().into()).into(),
                    Term::BlankNode(b) => rename(&b.clone().into()).into(),
                    other => other.clone(),
                };
                Triple::new(rename(&t.subject), t.predicate.clone(), object)
            })
            .collect();
        let mut by_subject: HashMap<&NamedOrBlankNode, Vec<usize>> = HashMap::new();
        for (i, t) in renamed.iter().enumerate() {
            by_subject.entry(&t.subject).or_default().push(i);
        }
        let activity: NamedOrBlankNode = self.activity_root.clone().into();
        let mut in_object = vec![false; renamed.len()];
        let mut seen = HashSet::new();
        let mut stack = vec![root.clone()];
        while let Some(node) = stack.pop() {
            if node == activity || !seen.insert(node.clone()) {
                continue;
            }
            for &i in by_subject.get(&node).map_or(&[][..], Vec::as_slice) {
                in_object[i] = true;
                match &renamed[i].object {
                    Term::NamedNode(n) => stack.push(n.clone().into()),
                    Term::BlankNode(b) => stack.push(b.clone().into()),
                    _ => {}
                }
            }
        }
        let mut object = Vec::new();
        let mut rest = Vec::new();
        for (t, inside) in renamed.into_iter().zip(in_object) {
            if inside {
                object.push(t);
            } else {
                rest.push(t);
            }
        }
        (object, rest)
    }

    fn create(
        &self,
        tx: &mut Transaction<'_>,
        events: &mut Events,
    ) -> Result<Result<i64, TaskError>> {
        let (global_id, identifier) = self.ids();
        if self.lookup(tx, &global_id)?.is_some() {
            return Ok(Err(TaskError::conflict(format!(
                "your organisation already has a consignment with globalId or identifier {global_id:?}"
            ))));
        }
        if self.lookup(tx, &identifier)?.is_some() {
            return Ok(Err(TaskError::conflict(format!(
                "your organisation already has a consignment with globalId or identifier {identifier:?}"
            ))));
        }
        let aig = self.object_id;
        let record = Record {
            consignment: graphs::consignment(aig),
            publisher: self.org().to_owned(),
            aig_hex: aig.to_owned(),
            graph: graphs::contribution(aig, self.org()),
            global_id,
            identifier,
        };
        let now = self.now.to_owned();
        let (object, rest) = self.split(&record.consignment.clone().into());
        let mut w = Writer { tx, written: 0 };
        w.triples(&object, &record.graph);
        self.summary(&mut w, &record, &now, &now);
        self.index(&mut w, &record, &now, &now);
        self.system_event(
            &mut w,
            &record,
            &record.graph,
            "Consignment",
            &format!("aig:{aig}"),
            &now,
        );
        self.activity_graph(&mut w, &rest, &record)?;
        let written = w.written;
        readable::contribution_added(tx, &record.consignment, aig, self.org())?;
        self.route(tx, &record, &now, &now, events)?;
        if let Some(created_ms) = crate::consignment::listing::millis(&now) {
            events.push(Committed::ConsignmentCreated {
                publisher: record.publisher.clone(),
                created_ms,
                aig: format!("aig:{aig}"),
            });
        }
        Ok(Ok(written))
    }

    /// Shares the consignment as the policies say for its (new) ports.
    fn route(
        &self,
        tx: &mut Transaction<'_>,
        record: &Record,
        created: &str,
        now: &str,
        events: &mut Events,
    ) -> Result<()> {
        let routed = self.routed(record, created);
        self.sharing
            .route(tx, &routed, &facts(self.ports), now, events)
    }

    fn routed<'r>(&'r self, record: &'r Record, created: &'r str) -> Routed<'r> {
        Routed {
            consignment: &record.consignment,
            aig_hex: &record.aig_hex,
            global_id: &record.global_id,
            identifier: &record.identifier,
            publisher: &record.publisher,
            created,
            graph: &record.graph,
            summary: Box::new(|| {
                Value::Object(crate::consignment::summary::build(
                    self.activity.object(),
                    self.ports,
                    self.codes,
                ))
            }),
        }
    }

    fn update(
        &self,
        tx: &mut Transaction<'_>,
        events: &mut Events,
    ) -> Result<Result<i64, TaskError>> {
        let (global_id, identifier) = self.ids();
        let found = match self.lookup(tx, &global_id)? {
            Some(r) => Some(r),
            None => self.lookup(tx, &identifier)?,
        };
        let Some(old) = found else {
            return Ok(Err(TaskError::not_found(format!(
                "your organisation has no consignment with globalId {global_id:?} or identifier {identifier:?}"
            ))));
        };
        for key in [&global_id, &identifier] {
            if let Some(other) = self.lookup(tx, key)? {
                if other.consignment != old.consignment {
                    return Ok(Err(TaskError::conflict(format!(
                        "another consignment of your organisation already uses {key:?}"
                    ))));
                }
            }
        }
        let created = self.created_of(tx, &old)?;
        let now = self.now.to_owned();
        let old_facts = stored_facts(tx, &old)?;
        remove_description(tx, &old)?;
        let record = Record {
            global_id,
            identifier,
            ..old
        };
        events.push(Committed::RowChanged {
            aig_hex: record.aig_hex.clone(),
        });
        let (object, rest) = self.split(&record.consignment.clone().into());
        let mut w = Writer { tx, written: 0 };
        w.triples(&object, &record.graph);
        self.summary(&mut w, &record, &created, &now);
        self.index(&mut w, &record, &created, &now);
        let aig_id = format!("aig:{}", record.aig_hex);
        self.system_event(&mut w, &record, &record.graph, "Consignment", &aig_id, &now);
        self.activity_graph(&mut w, &rest, &record)?;
        let written = w.written;
        // Only a change of ports routes again; grants already given stay (see `sharing`).
        if old_facts != facts(self.ports) {
            self.route(tx, &record, &created, &now, events)?;
        }
        Ok(Ok(written))
    }

    fn add(&self, tx: &mut Transaction<'_>, events: &mut Events) -> Result<Result<i64, TaskError>> {
        let target_key = self
            .activity
            .target()
            .and_then(|t| string_value(t.get("globalId")))
            .unwrap_or_default()
            .to_owned();
        // The caller's own consignment wins; among shared ones the key must name exactly one,
        // or another publisher's consignment could receive what was meant for this one.
        let found = match self.lookup(tx, &target_key)? {
            Some(own) => Some(own),
            None => {
                let mut shared = self.lookup_shared(tx, &target_key)?;
                if shared.len() > 1 {
                    let candidates = shared
                        .iter()
                        .map(|r| (r.aig_hex.as_str(), r.publisher.as_str()));
                    return Ok(Err(TaskError::ambiguous(&target_key, candidates)));
                }
                shared.pop()
            }
        };
        let Some(record) = found else {
            return Ok(Err(TaskError::not_found(format!(
                "no consignment with globalId {target_key:?} is available to your organisation"
            ))));
        };
        // Its update time (and maybe its status) moves.
        events.push(Committed::RowChanged {
            aig_hex: record.aig_hex.clone(),
        });
        let object = self.activity.object();
        let kind = match object.get("type").and_then(Value::as_str) {
            Some("Document") => "Document",
            _ => "SupplyChainEvent",
        };
        let node = match self.object_root {
            NamedOrBlankNode::NamedNode(n) => n.clone(),
            NamedOrBlankNode::BlankNode(_) => return Err(Error::internal("minted root is blank")),
        };
        let graph = graphs::contribution(&record.aig_hex, self.org());
        let now = self.now.to_owned();
        let document = if kind == "Document" {
            let Some(content) = self.content else {
                // The consignment appeared after the check made before taking the content.
                return Ok(Err(TaskError::not_found(format!(
                    "no consignment with globalId {target_key:?} was available to your organisation"
                ))));
            };
            let previous = self.current_revision(tx, &graph, &record, object)?;
            if let Some((_, prev)) = &previous {
                let type_code = string_value(object.get("documentTypeCode")).unwrap_or_default();
                if prev.is_same(content, type_code) {
                    // The same document again: nothing changes.
                    return Ok(Ok(0));
                }
            }
            Some((content, previous))
        } else {
            None
        };
        if record.publisher != self.org() {
            // A circle member's contribution: the views find its graph through this.
            let first = Sharing::add_contributor(tx, &record.consignment, self.org())?;
            if first {
                readable::contribution_added(tx, &record.consignment, &record.aig_hex, self.org())?;
            }
            if first && self.sharing.is_remote(&record.publisher) {
                let created = self.created_of(tx, &record)?;
                let routed = self.routed(&record, &created);
                self.sharing
                    .offer_contribution(tx, &routed, self.org(), &now, events)?;
            }
        }
        let (mut triples, rest) = self.split(self.object_root);
        let mut object = object.clone();
        if let Some(uri) = self.content.and_then(Content::stored_uri) {
            let uri_id = unece("uRIId");
            for t in triples.iter_mut().filter(|t| t.predicate == uri_id) {
                t.object = literal(&uri);
            }
            object.insert("uRIId".into(), json!(uri));
        }
        let mut w = Writer { tx, written: 0 };
        w.triples(&triples, &graph);
        w.add(
            node.clone(),
            dsn("consignment"),
            record.consignment.clone(),
            &graph,
        );
        w.add(
            node.clone(),
            dsn("contributor"),
            NamedNode::new_unchecked(self.org()),
            &graph,
        );
        w.add(node.clone(), dsn("recorded"), date_literal(&now), &graph);
        w.add(
            node.clone(),
            dsn("payload"),
            json_literal(&Value::Object(object.clone())),
            &graph,
        );
        if kind == "SupplyChainEvent" {
            if let Some(at) = string_value(object.get("occurrenceDateTime")) {
                w.add(node.clone(), dsn("occurredAt"), date_literal(at), &graph);
                let code = string_value(object.get("typeCode")).unwrap_or_default();
                latest_status(&mut w, &record, &graph, self.org(), code, at)?;
            }
        }
        if let Some((content, previous)) = document {
            self.revision(&mut w, &node, &graph, &object, content, previous, &now);
        }
        // The record's update time moves with every contribution.
        let index = graphs::consignment_index();
        remove_quads(w.tx, &record.consignment, Some(&dsn("updated")), &index)?;
        w.add(
            record.consignment.clone(),
            dsn("updated"),
            date_literal(&now),
            &index,
        );
        self.system_event(&mut w, &record, &graph, kind, node.as_str(), &now);
        self.activity_graph(&mut w, &rest, &record)?;
        Ok(Ok(w.written))
    }

    /// The current revision of the object's documentId in the caller's contribution graph.
    fn current_revision(
        &self,
        tx: &Transaction<'_>,
        graph: &NamedNode,
        record: &Record,
        object: &serde_json::Map<String, Value>,
    ) -> Result<Option<(NamedNode, Revision)>> {
        let document_id = string_value(object.get("identifier")).unwrap_or_default();
        revision::current(self.queries, tx, graph, &record.consignment, document_id)
    }

    /// Writes the revision's facts on the document's node.
    #[allow(clippy::too_many_arguments)]
    fn revision(
        &self,
        w: &mut Writer<'_, '_>,
        node: &NamedNode,
        graph: &NamedNode,
        object: &serde_json::Map<String, Value>,
        content: &Content,
        previous: Option<(NamedNode, Revision)>,
        now: &str,
    ) {
        let new = revision::New {
            node,
            document_id: string_value(object.get("identifier")).unwrap_or_default(),
            document_type_code: string_value(object.get("documentTypeCode")).unwrap_or_default(),
            organization: self.org(),
            user: &self.caller.user,
            now,
        };
        w.triples(
            &revision::facts(&new, content, previous, self.attestor),
            graph,
        );
    }

    fn created_of(&self, tx: &Transaction<'_>, record: &Record) -> Result<String> {
        let found = subject_quads(
            tx,
            &record.consignment,
            Some(&dsn("created")),
            &graphs::consignment_index(),
        )?
        .into_iter()
        .next();
        Ok(match found.map(|q| q.object) {
            Some(Term::Literal(l)) => l.value().to_owned(),
            _ => crate::consignment::now(),
        })
    }

    /// Derived facts the read views use, computed once here.
    fn summary(&self, w: &mut Writer<'_, '_>, record: &Record, created: &str, updated: &str) {
        let s = graphs::summary(&record.aig_hex);
        let g = &record.graph;
        w.add(
            s.clone(),
            rdf::TYPE.into_owned(),
            dsn("ConsignmentSummary"),
            g,
        );
        w.add(s.clone(), dsn("summarizes"), record.consignment.clone(), g);
        w.add(
            s.clone(),
            dsn("aigId"),
            literal(&format!("aig:{}", record.aig_hex)),
            g,
        );
        w.add(s.clone(), dsn("globalId"), literal(&record.global_id), g);
        w.add(s.clone(), dsn("identifier"), literal(&record.identifier), g);
        w.add(
            s.clone(),
            dsn("publisher"),
            NamedNode::new_unchecked(self.org()),
            g,
        );
        w.add(s.clone(), dsn("dateCreated"), date_literal(created), g);
        w.add(s.clone(), dsn("dateUpdated"), date_literal(updated), g);
        w.add(s.clone(), dsn("payloadVersion"), literal("D23B"), g);
        w.add(
            s.clone(),
            dsn("payload"),
            json_literal(&Value::Object(self.activity.object().clone())),
            g,
        );
        let columns =
            crate::consignment::summary::build(self.activity.object(), self.ports, self.codes);
        w.add(
            s.clone(),
            dsn("summaryJson"),
            json_literal(&Value::Object(columns)),
            g,
        );
        let mut port = |which: &str, port: &Option<Port>| {
            let Some(port) = port else { return };
            if let Some(name) = &port.name {
                w.add(s.clone(), dsn(&format!("{which}Name")), literal(name), g);
            }
            if let Some(code) = &port.code {
                w.add(s.clone(), dsn(&format!("{which}Code")), literal(code), g);
            }
            if let Some(country) = &port.country {
                w.add(
                    s.clone(),
                    dsn(&format!("{which}Country")),
                    literal(country),
                    g,
                );
            }
        };
        port("portOfExit", &self.ports.exit);
        port("portOfEntry", &self.ports.entry);
        if let Some(d) = &self.ports.arrival_date {
            w.add(s.clone(), dsn("dateOfEntry"), date_literal(d), g);
        }
        if let Some(d) = &self.ports.departure_date {
            w.add(s.clone(), dsn("dateOfDeparture"), date_literal(d), g);
        }
    }

    fn index(&self, w: &mut Writer<'_, '_>, record: &Record, created: &str, updated: &str) {
        let r = record.consignment.clone();
        let g = &graphs::consignment_index();
        w.add(
            r.clone(),
            dsn("publisher"),
            NamedNode::new_unchecked(self.org()),
            g,
        );
        w.add(
            r.clone(),
            dsn("aigId"),
            literal(&format!("aig:{}", record.aig_hex)),
            g,
        );
        w.add(r.clone(), dsn("globalId"), literal(&record.global_id), g);
        w.add(r.clone(), dsn("identifier"), literal(&record.identifier), g);
        w.add(r.clone(), dsn("graph"), record.graph.clone(), g);
        w.add(r.clone(), dsn("created"), date_literal(created), g);
        w.add(r, dsn("updated"), date_literal(updated), g);
    }

    fn system_event(
        &self,
        w: &mut Writer<'_, '_>,
        record: &Record,
        graph: &NamedNode,
        object_type: &str,
        object_id: &str,
        now: &str,
    ) {
        let id = graphs::minted("system-event", &new_hex());
        let type_code = self.activity.kind.system_event();
        let event = json!({
            "@context": "https://www.w3.org/ns/activitystreams",
            "id": id.as_str(),
            "type": "SystemEvent",
            "typeCode": type_code,
            "source": {"id": self.caller.user, "type": "Person",
                       "detail": {"organizationId": self.org()}},
            "object": {"id": object_id, "type": object_type,
                       "detail": {"activityLogId": self.entry_id}},
            "target": {"id": format!("aig:{}", record.aig_hex), "type": "Consignment",
                       "detail": {"globalId": record.global_id, "identifier": record.identifier}},
            "date": now,
        });
        w.add(
            id.clone(),
            rdf::TYPE.into_owned(),
            dsn("SystemEvent"),
            graph,
        );
        w.add(id.clone(), dsn("typeCode"), literal(type_code), graph);
        w.add(
            id.clone(),
            dsn("consignment"),
            record.consignment.clone(),
            graph,
        );
        w.add(
            id.clone(),
            dsn("source"),
            NamedNode::new_unchecked(&self.caller.user),
            graph,
        );
        w.add(id.clone(), dsn("date"), date_literal(now), graph);
        w.add(id, dsn("json"), json_literal(&event), graph);
    }

    fn activity_graph(
        &self,
        w: &mut Writer<'_, '_>,
        rest: &[Triple],
        record: &Record,
    ) -> Result<()> {
        let g = graphs::activities(self.org());
        let node_did = self.credentials.issuer.clone();
        let credential =
            self.credentials
                .issue(&self.activity.actor_did, self.activity_hash, self.entry_id)?;
        let mut stored = self.activity.document.clone();
        if let Some(uri) = self.content.and_then(Content::stored_uri) {
            if let Some(Value::Object(object)) = stored.get_mut("object") {
                object.insert("uRIId".into(), json!(uri));
            }
        }
        stored.insert("generator".into(), json!(node_did));
        stored.insert("trustCredential".into(), json!(credential));
        let act = activity_subject(rest, self.activity_root);
        w.triples(rest, &g);
        w.add(
            act.clone(),
            NamedNode::new_unchecked(format!("{AS}generator")),
            NamedNode::new_unchecked(&node_did),
            &g,
        );
        w.add(
            act.clone(),
            dsn("trustCredential"),
            literal(&credential),
            &g,
        );
        w.add(
            act.clone(),
            dsn("activityHash"),
            literal(self.activity_hash),
            &g,
        );
        w.add(
            act.clone(),
            dsn("consignment"),
            record.consignment.clone(),
            &g,
        );
        w.add(
            act.clone(),
            dsn("logEntry"),
            graphs::minted("activity-log", self.entry_id),
            &g,
        );
        w.add(
            act,
            dsn("payload"),
            json_literal(&Value::Object(stored)),
            &g,
        );
        Ok(())
    }
}

/// The facts routing matches on, from freshly derived ports.
fn facts(ports: &Ports) -> Facts {
    let code = |p: &Option<Port>| p.as_ref().and_then(|p| p.code.clone());
    let country = |p: &Option<Port>| p.as_ref().and_then(|p| p.country.clone());
    Facts {
        entry_country: country(&ports.entry),
        exit_country: country(&ports.exit),
        entry: code(&ports.entry),
        exit: code(&ports.exit),
    }
}

/// The same facts as the stored summary has them (before an update replaces it).
fn stored_facts(tx: &Transaction<'_>, record: &Record) -> Result<Facts> {
    let mut facts = Facts::default();
    for q in subject_quads(tx, &graphs::summary(&record.aig_hex), None, &record.graph)? {
        let Term::Literal(value) = &q.object else {
            continue;
        };
        let slot = match q.predicate.as_str().strip_prefix(crate::vocab::DSN) {
            Some("portOfEntryCode") => &mut facts.entry,
            Some("portOfExitCode") => &mut facts.exit,
            Some("portOfEntryCountry") => &mut facts.entry_country,
            Some("portOfExitCountry") => &mut facts.exit_country,
            _ => continue,
        };
        *slot = Some(value.value().to_owned());
    }
    Ok(facts)
}

/// Keeps the latest event (by occurrence time) of one contributor per consignment on a status
/// node, so list reads take `latestStatus` without looking at events.
fn latest_status(
    w: &mut Writer<'_, '_>,
    record: &Record,
    graph: &NamedNode,
    org: &str,
    code: &str,
    at: &str,
) -> Result<()> {
    let status = graphs::minted(
        "status",
        &format!("{}:{}", record.aig_hex, graphs::org_key(org)),
    );
    let old = subject_quads(w.tx, &status, None, graph)?;
    let newer = old.iter().all(|q| {
        q.predicate != dsn("latestAt")
            || match &q.object {
                Term::Literal(l) => match (
                    chrono::DateTime::parse_from_rfc3339(l.value()),
                    chrono::DateTime::parse_from_rfc3339(at),
                ) {
                    (Ok(old), Ok(new)) => new >= old,
                    _ => l.value() <= at,
                },
                _ => true,
            }
    });
    if !newer {
        return Ok(());
    }
    for q in &old {
        w.tx.remove(q);
    }
    w.add(
        status.clone(),
        dsn("statusOf"),
        record.consignment.clone(),
        graph,
    );
    w.add(status.clone(), dsn("latestTypeCode"), literal(code), graph);
    w.add(status, dsn("latestAt"), date_literal(at), graph);
    Ok(())
}

/// The activity node: the caller's `id` when it gave one, else the minted one.
fn activity_subject(rest: &[Triple], minted: &NamedNode) -> NamedOrBlankNode {
    let as_object = format!("{AS}object");
    rest.iter()
        .find(|t| t.predicate.as_str() == as_object)
        .map(|t| t.subject.clone())
        .unwrap_or_else(|| minted.clone().into())
}

/// Removes a consignment's description (everything reachable from the consignment node in its
/// graph, stopping at nodes the node minted) and its summary node.
fn remove_description(tx: &mut Transaction<'_>, record: &Record) -> Result<()> {
    let graph = GraphName::NamedNode(record.graph.clone());
    let mut doomed = Vec::new();
    let mut seen = HashSet::new();
    let summary: NamedOrBlankNode = graphs::summary(&record.aig_hex).into();
    let mut stack: Vec<NamedOrBlankNode> = vec![record.consignment.clone().into(), summary.clone()];
    while let Some(node) = stack.pop() {
        if !seen.insert(node.clone()) {
            continue;
        }
        for quad in tx.quads_for_pattern(Some(node.as_ref()), None, None, Some(graph.as_ref())) {
            let quad = quad?;
            if node != summary {
                match &quad.object {
                    Term::BlankNode(b) => stack.push(b.clone().into()),
                    Term::NamedNode(n) if !n.as_str().starts_with(graphs::MINTED_PREFIX) => {
                        stack.push(n.clone().into())
                    }
                    _ => {}
                }
            }
            doomed.push(quad);
        }
    }
    for quad in &doomed {
        tx.remove(quad);
    }
    remove_quads(tx, &record.consignment, None, &graphs::consignment_index())
}

/// The quads of `subject` (with `predicate`, when given) in `graph`, as the transaction sees them.
fn subject_quads(
    tx: &Transaction<'_>,
    subject: &NamedNode,
    predicate: Option<&NamedNode>,
    graph: &NamedNode,
) -> Result<Vec<Quad>> {
    let g = GraphName::NamedNode(graph.clone());
    Ok(tx
        .quads_for_pattern(
            Some(subject.as_ref().into()),
            predicate.map(NamedNode::as_ref),
            None,
            Some(g.as_ref()),
        )
        .collect::<Result<_, _>>()?)
}

/// Removes the quads of `subject` (with `predicate`, when given) from `graph`.
fn remove_quads(
    tx: &mut Transaction<'_>,
    subject: &NamedNode,
    predicate: Option<&NamedNode>,
    graph: &NamedNode,
) -> Result<()> {
    for quad in subject_quads(tx, subject, predicate, graph)? {
        tx.remove(&quad);
    }
    Ok(())
}

/// Removes a (failed) log entry before it is written anew.
pub fn remove_entry(tx: &mut Transaction<'_>, graph: &NamedNode, log: &NamedNode) -> Result<()> {
    remove_quads(tx, log, None, graph)
}

/// Writes a log entry in the organisation's activity graph.
pub fn write_entry(
    tx: &mut Transaction<'_>,
    graph: &NamedNode,
    log: &NamedNode,
    entry: &Entry,
) -> Result<()> {
    let g = GraphName::NamedNode(graph.clone());
    let json = serde_json::to_value(entry).map_err(Error::internal)?;
    let quads = [
        Quad::new(log.clone(), rdf::TYPE, dsn("ActivityLogEntry"), g.clone()),
        Quad::new(
            log.clone(),
            dsn("status"),
            literal(&entry.status),
            g.clone(),
        ),
        Quad::new(
            log.clone(),
            dsn("dateCreated"),
            date_literal(&entry.date_created),
            g.clone(),
        ),
        Quad::new(log.clone(), dsn("entryJson"), json_literal(&json), g),
    ];
    for q in &quads {
        tx.insert(q);
    }
    Ok(())
}
