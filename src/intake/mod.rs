//! The activity inbox: JSON → request checks → JSON-LD expansion → shape checks → port
//! derivation → one transaction in the store, answered with an activity log entry.
//!
//! - [`activity`]: request-level checks (400/403) and the canonical form used for idempotency.
//! - [`crate::jsonld`]: offline expansion with the contexts compiled at start-up.
//! - [`shapes`]: SHACL shapes from `shapes/*.ttl`, interpreted.
//! - [`ports`]: port of exit / entry from index 0 of the movements' events.
//! - `apply`: what a successful activity writes; `credential`: the trust credential.
//! - [`log`]: the ActivityLogEntry.

pub mod activity;
mod apply;
#[cfg(test)]
mod conformance;
mod credential;
mod entries;
pub mod log;
pub mod shapes;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use oxigraph::model::{NamedNode, NamedOrBlankNode, Term, Triple};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::auth::Caller;
use crate::consignment::codes::CodeLists;
use crate::consignment::ports::{self, Ports};
use crate::documents::{Content, Documents};
use crate::error::{Error, Result};
use crate::identity::NodeIdentity;
use crate::jsonld::{Contexts, Expander, Expansion};
use crate::rdf::literal;
use crate::sharing::Sharing;
use crate::store::Events;
use crate::store::{graphs, Queries, Store};
use activity::{Activity, Kind};
use log::{Entry, TaskError};
use shapes::{Failure, Index, Shapes};

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
    credentials: credential::Credentials,
    codes: Arc<CodeLists>,
    sharing: Arc<Sharing>,
    documents: Arc<Documents>,
}

const AS: &str = "https://www.w3.org/ns/activitystreams#";

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
        credential_key: &[u8],
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
            credentials: credential::Credentials::new(credential_key, identity.node_did()),
            identity,
            codes,
            sharing,
            documents,
        })
    }

    pub fn countries(&self) -> &HashSet<String> {
        &self.countries
    }

    pub fn contexts(&self) -> &Arc<Contexts> {
        &self.contexts
    }

    /// Everything the inbox checks before it writes: request checks (`Err`), expansion, shapes
    /// and port derivation. Blocking (CPU work).
    fn prepare(&self, caller: &Caller, body: &[u8], timings: &mut Timings) -> Result<Prepared> {
        let t = Instant::now();
        let activity = activity::parse(body, &caller.organization)?;
        let canonical = activity::canonical_object(&activity.document);
        let digest = Sha256::digest(format!("{}\n{canonical}", caller.organization).as_bytes());
        let entry_id = hex::encode(&digest[..16]);
        let activity_hash = hex::encode(Sha256::digest(canonical.as_bytes()));
        timings.parse = t.elapsed();

        let t = Instant::now();
        let object_id = new_hex();
        let object_root: NamedOrBlankNode = match activity.kind {
            Kind::Create | Kind::Update => graphs::consignment(&object_id).into(),
            Kind::Add => graphs::minted(add_kind(&activity), &object_id).into(),
        };
        let activity_root = graphs::minted("activity", &entry_id);
        let (expansion, roots) = self.expand(&activity, &object_root, &activity_root)?;
        timings.expand = t.elapsed();

        let t = Instant::now();
        let activity_node: NamedOrBlankNode = activity_root.clone().into();
        let failures = self.check(
            &activity,
            &expansion,
            &roots,
            &[&object_root, &activity_node],
        );
        let (ports, warnings) = match activity.kind {
            Kind::Create | Kind::Update => {
                let ports = ports::derive(activity.object(), &self.countries);
                let warnings = ports::warnings(activity.object(), &ports);
                (ports, warnings)
            }
            Kind::Add => (Ports::default(), Vec::new()),
        };
        timings.shapes = t.elapsed();
        Ok(Prepared {
            activity,
            entry_id,
            activity_hash,
            object_id,
            object_root,
            activity_root,
            expansion,
            failures,
            ports,
            warnings,
        })
    }

    /// `POST /inbox/validate`: every check of [`Intake::process`] — request checks, expansion,
    /// shapes, port derivation, and whether the consignment it names is there for the caller —
    /// with nothing stored. Blocking.
    pub fn validate(&self, caller: &Caller, body: &[u8]) -> Result<Validation> {
        let p = self.prepare(caller, body, &mut Timings::default())?;
        let mut failures = p.failures;
        if failures.is_empty() {
            failures.extend(self.reference_failure(caller, &p.activity)?);
        }
        let summary =
            match p.activity.kind {
                Kind::Create | Kind::Update => Some(Value::Object(
                    crate::consignment::summary::build(p.activity.object(), &p.ports, &self.codes),
                )),
                Kind::Add => None,
            };
        Ok(Validation {
            valid: failures.is_empty(),
            failures,
            warnings: p.warnings,
            summary,
        })
    }

    /// What the transaction would find wrong with the consignment the activity names: a Create
    /// of ids the caller uses already, an Update or Add of one it cannot reach.
    fn reference_failure(&self, caller: &Caller, activity: &Activity) -> Result<Option<Failure>> {
        let object = activity.object();
        let id = |holder: Option<&Map<String, Value>>, key: &str| {
            holder
                .and_then(|h| ports::string_value(h.get(key)))
                .unwrap_or_default()
                .to_owned()
        };
        let owned = |key: &str| self.owns(caller, key);
        let failure = |path: &str, constraint: &str, value: String, message: String| Failure {
            path: path.into(),
            constraint: constraint.into(),
            value: Some(value),
            message,
        };
        Ok(match activity.kind {
            Kind::Create => {
                let mut taken = None;
                for key in ["globalId", "identifier"] {
                    let value = id(Some(object), key);
                    if taken.is_none() && owned(&value)? {
                        taken = Some(failure(
                            &format!("object.{key}"),
                            "ConflictError",
                            value.clone(),
                            format!("your organisation already has a consignment with {value:?}"),
                        ));
                    }
                }
                taken
            }
            Kind::Update => {
                let (global_id, identifier) =
                    (id(Some(object), "globalId"), id(Some(object), "identifier"));
                (!owned(&global_id)? && !owned(&identifier)?).then(|| {
                    failure(
                        "object.globalId",
                        "NotFoundError",
                        global_id.clone(),
                        format!(
                            "your organisation has no consignment with globalId {global_id:?} or \
                             identifier {identifier:?}"
                        ),
                    )
                })
            }
            Kind::Add => {
                let key = id(activity.target(), "globalId");
                let shared = if owned(&key)? {
                    1
                } else {
                    self.shared_matches(caller, &key)?
                };
                match shared {
                    0 => Some(failure(
                        "target.globalId",
                        "NotFoundError",
                        key.clone(),
                        format!(
                            "no consignment with globalId {key:?} is available to your organisation"
                        ),
                    )),
                    1 => None,
                    _ => Some(failure(
                        "target.globalId",
                        "ConflictError",
                        key.clone(),
                        format!(
                            "{key:?} names consignments of more than one publisher shared with \
                             your organisation; name one by its aig id"
                        ),
                    )),
                }
            }
        })
    }

    /// How many consignments shared with the caller `key` names. Blocking.
    fn shared_matches(&self, caller: &Caller, key: &str) -> Result<usize> {
        let org = NamedNode::new_unchecked(caller.organization.as_str());
        let bindings = [("org", org.into()), ("key", literal(key))];
        let rows = self
            .queries
            .select(&self.store, "consignment_shared_by_key", &bindings)?;
        let records: HashSet<String> = rows
            .iter()
            .filter_map(|r| r.get("record").map(|t| t.to_string()))
            .collect();
        Ok(records.len())
    }

    /// Is a consignment with globalId, identifier or aig id `key` the caller's own? Blocking.
    fn owns(&self, caller: &Caller, key: &str) -> Result<bool> {
        let org = NamedNode::new_unchecked(caller.organization.as_str());
        let bindings = [("org", org.into()), ("key", literal(key))];
        let rows = self
            .queries
            .select(&self.store, "consignment_by_key", &bindings)?;
        Ok(!rows.is_empty())
    }

    /// Processes one inbox body for `caller`. Request errors are `Err`; everything else,
    /// task failures included, is an entry. Blocking (CPU and store work).
    pub fn process(&self, caller: &Caller, body: &[u8]) -> Result<Outcome> {
        let mut timings = Timings::default();
        let started_at = crate::consignment::now();
        let Prepared {
            activity,
            entry_id,
            activity_hash,
            object_id,
            object_root,
            activity_root,
            expansion,
            failures,
            ports,
            warnings,
        } = self.prepare(caller, body, &mut timings)?;

        // Replays of an applied activity are answered before any other work. A failed one is
        // processed again (nothing of it was applied), and its entry replaced.
        if let Some(entry) = self.entry(&caller.organization, &entry_id)? {
            if !entry.failed() {
                return Ok(Outcome {
                    entry,
                    created: false,
                    timings,
                });
            }
        }

        let t = Instant::now();
        let content = if failures.is_empty() {
            self.take_content(caller, &activity)?
        } else {
            None
        };
        timings.fetch = t.elapsed();

        let t = Instant::now();
        let log_node = graphs::minted("activity-log", &entry_id);
        let activities_graph = graphs::activities(&caller.organization);
        let generator = self.identity.node_did();
        let write = |tx: &mut oxigraph::store::Transaction<'_>, events: &mut Events| {
            // Taken under the writer lock: creation times increase strictly in commit order, so
            // the lists (newest first by creation time) keep commit order, even for Creates
            // within one millisecond, and across restarts (the time is stored).
            let now = self.store.stamp();
            // Checked again under the writer lock: two identical posts racing apply once.
            let previous = self.entry_in(tx, &activities_graph, &log_node)?;
            if let Some(existing) = previous.as_ref().filter(|e| !e.failed()) {
                return Ok((existing.clone(), false));
            }
            if previous.is_some() {
                entries::remove_entry(tx, &activities_graph, &log_node)?;
            }
            let now = crate::consignment::format_millis(now);
            let outcome = if !failures.is_empty() {
                Err(TaskError::validation(&failures))
            } else if let Some(Err(message)) = &content {
                Err(TaskError::document(message.clone()))
            } else {
                let apply = apply::Apply {
                    caller,
                    activity: &activity,
                    expansion: &expansion,
                    object_root: &object_root,
                    object_id: &object_id,
                    activity_root: &activity_root,
                    entry_id: &entry_id,
                    activity_hash: &activity_hash,
                    ports: &ports,
                    credentials: &self.credentials,
                    queries: &self.queries,
                    codes: &self.codes,
                    sharing: &self.sharing,
                    content: content.as_ref().and_then(|c| c.as_ref().ok()),
                    attestor: self.documents.attestor(),
                    now: &now,
                };
                apply.run(tx, events)?
            };
            if outcome.is_err() {
                // The task failed: its log entry is written, and nothing else counts.
                events.clear();
            }
            let entry = Entry::new(
                entry_id.clone(),
                generator.clone(),
                started_at.clone(),
                crate::consignment::now(),
                outcome,
                warnings.clone(),
            );
            entries::write_entry(tx, &activities_graph, &log_node, &entry)?;
            Ok((entry, true))
        };
        // Committed: the new consignment joins its organisation's list, routing's shares and
        // notifications their indexes — the models registered with the store apply the events.
        let ((entry, created), events) = self.store.commit(write)?;
        timings.store = t.elapsed();
        timings.route = events.routing;
        Ok(Outcome {
            entry,
            created,
            timings,
        })
    }

    /// A document's content, taken before the transaction so that its blob is durable before
    /// any record names it, and the writer lock is never held across a fetch. `None` when the
    /// activity adds no document, or adds one to a consignment the caller cannot reach (the
    /// transaction then fails the task without anything being fetched); `Some(Err)` is the
    /// task's error.
    fn take_content(
        &self,
        caller: &Caller,
        activity: &Activity,
    ) -> Result<Option<std::result::Result<Content, String>>> {
        let object = activity.object();
        if activity.kind != Kind::Add
            || object.get("type").and_then(Value::as_str) != Some("Document")
        {
            return Ok(None);
        }
        let target = activity
            .target()
            .and_then(|t| ports::string_value(t.get("globalId")))
            .unwrap_or_default();
        if !self.owns(caller, target)? && self.shared_matches(caller, target)? == 0 {
            return Ok(None);
        }
        let uri = ports::string_value(object.get("uRIId")).unwrap_or_default();
        // Intake runs on a blocking thread (see the inbox handler), which may wait on a future.
        let handle = tokio::runtime::Handle::current();
        Ok(Some(handle.block_on(self.documents.acquire(uri))))
    }

    /// Expands the activity, with the object's root forced to `object_root` and the activity's
    /// (when it has no `id`) to `activity_root`. Returns the roots of the activity and its object.
    fn expand(
        &self,
        activity: &Activity,
        object_root: &NamedOrBlankNode,
        activity_root: &oxigraph::model::NamedNode,
    ) -> Result<(Expansion, Roots)> {
        let mut expander = Expander::new(&self.contexts);
        expander.fix_subject("object", object_root.clone(), true);
        expander.fix_subject("", activity_root.clone().into(), false);
        let root = expander.document(&activity.document).map_err(|e| {
            Error::invalid_field(
                if e.path.is_empty() {
                    "@context"
                } else {
                    &e.path
                },
                e.message.clone(),
            )
        })?;
        let roots = Roots {
            activity: root,
            object: expander.subject_at("object"),
        };
        Ok((expander.finish(), roots))
    }

    fn check(
        &self,
        activity: &Activity,
        expansion: &Expansion,
        roots: &Roots,
        minted: &[&NamedOrBlankNode],
    ) -> Vec<Failure> {
        let index = Index::new(expansion);
        let mut failures = Vec::new();
        // The record is looked up by these: a JSON number passes the shapes (the context
        // coerces it to an xsd:string literal) but would key the record by nothing.
        let keys: &[(&str, Option<&Map<String, Value>>)] = match activity.kind {
            Kind::Create | Kind::Update => &[
                ("object.globalId", Some(activity.object())),
                ("object.identifier", Some(activity.object())),
            ],
            Kind::Add => &[("target.globalId", activity.target())],
        };
        for (path, holder) in keys {
            let name = path.rsplit('.').next().unwrap_or(path);
            if let Some(value) = holder.and_then(|h| h.get(name)) {
                if !activity::is_string_or_value_object(value) {
                    failures.push(Failure {
                        path: (*path).into(),
                        constraint: "string or value object".into(),
                        value: Some(value.to_string()),
                        message: format!(
                            "{path} must be a JSON string or a JSON-LD value object with a string \
                             @value"
                        ),
                    });
                }
            }
        }
        // The activity is validated by its type's shape (activity.ttl), which reaches the
        // actor, the object and the target through their properties.
        let class = NamedNode::new_unchecked(format!("{AS}{}", activity.kind.as_str()));
        match self.shapes.shape_for_class(class.as_ref()) {
            Some(shape) => self
                .shapes
                .validate(&index, shape, &roots.activity, "", &mut failures),
            None => failures.push(Failure {
                path: "type".into(),
                constraint: "sh:targetClass".into(),
                value: Some(activity.kind.as_str().into()),
                message: format!("no shape for {} activities", activity.kind.as_str()),
            }),
        }
        // Every D23B property under the object is a known one of the kind the context gives.
        let objects = objects_of(expansion, &roots.activity);
        let object_root = roots
            .object
            .clone()
            .filter(|o| objects.iter().any(|t| **t == Term::from(o.clone())));
        if let Some(root) = &object_root {
            let dropped: Vec<String> = expansion
                .dropped
                .iter()
                .filter(|p| p.starts_with("object."))
                .cloned()
                .collect();
            self.shapes
                .check_vocabulary(&index, root, "object", &dropped, &mut failures);
        }
        reserved_iris(expansion, minted, &mut failures);
        failures
    }

    /// The caller organisation's log entry `id`, if any. Blocking.
    pub fn entry(&self, org: &str, id: &str) -> Result<Option<Entry>> {
        if id.len() != 32 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let rows = self.queries.select(
            &self.store,
            "activity_log_entry",
            &[
                ("graph", graphs::activities(org).into()),
                ("log", graphs::minted("activity-log", id).into()),
            ],
        )?;
        rows.first().map(entry_of).transpose()
    }

    fn entry_in(
        &self,
        tx: &oxigraph::store::Transaction<'_>,
        graph: &oxigraph::model::NamedNode,
        log: &oxigraph::model::NamedNode,
    ) -> Result<Option<Entry>> {
        let rows = self.queries.select_in(
            tx,
            "activity_log_entry",
            &[("graph", graph.clone().into()), ("log", log.clone().into())],
        )?;
        rows.first().map(entry_of).transpose()
    }
}

/// An activity that passed the request checks, expanded and checked, not yet applied.
struct Prepared {
    activity: Activity,
    /// The log entry's id: a digest of the caller and the canonical activity (idempotency).
    entry_id: String,
    activity_hash: String,
    object_id: String,
    object_root: NamedOrBlankNode,
    activity_root: NamedNode,
    expansion: Expansion,
    failures: Vec<Failure>,
    ports: Ports,
    warnings: Vec<ports::Warning>,
}

/// The answer of `POST /inbox/validate`.
#[derive(Debug, serde::Serialize)]
pub struct Validation {
    pub valid: bool,
    pub failures: Vec<Failure>,
    pub warnings: Vec<ports::Warning>,
    /// The ConsignmentSummary columns the node would derive (Create and Update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Value>,
}

struct Roots {
    activity: NamedOrBlankNode,
    /// The node at `object` (the one the record stores).
    object: Option<NamedOrBlankNode>,
}

fn entry_of(row: &oxigraph::sparql::QuerySolution) -> Result<Entry> {
    match row.get("entry") {
        Some(Term::Literal(l)) => serde_json::from_str(l.value()).map_err(Error::internal),
        _ => Err(Error::internal("log entry without JSON")),
    }
}

/// The node's own namespaces are its bookkeeping: the reads trust `dsn:contributor`,
/// `dsn:consignment` and the minted `urn:dataspace-node:` nodes to be written by the node only.
/// A caller who could send them could make its data pose as another organisation's, so any
/// IRI in them, other than the roots the node minted for this activity, fails the activity.
fn reserved_iris(expansion: &Expansion, minted: &[&NamedOrBlankNode], out: &mut Vec<Failure>) {
    let allowed = |iri: &oxigraph::model::NamedNode| {
        let node = NamedOrBlankNode::from(iri.clone());
        let reserved = iri.as_str().starts_with(graphs::MINTED_PREFIX)
            || iri.as_str().starts_with("https://w3id.org/dataspace-node/");
        !reserved || minted.contains(&&node)
    };
    let mut seen = HashSet::new();
    for t in &expansion.triples {
        let subject = match &t.subject {
            NamedOrBlankNode::NamedNode(s) => Some(s),
            NamedOrBlankNode::BlankNode(_) => None,
        };
        let object = match &t.object {
            Term::NamedNode(o) => Some(o),
            _ => None,
        };
        for iri in [subject, Some(&t.predicate), object].into_iter().flatten() {
            if !allowed(iri) && seen.insert(iri.as_str().to_owned()) {
                out.push(Failure {
                    path: "object".into(),
                    constraint: "reserved IRI".into(),
                    value: Some(iri.as_str().to_owned()),
                    message: format!(
                        "{} is in the node's own namespace; activities cannot use it",
                        iri.as_str()
                    ),
                });
            }
        }
    }
}

/// The objects of the activity node (`as:object`).
fn objects_of<'e>(expansion: &'e Expansion, activity: &NamedOrBlankNode) -> Vec<&'e Term> {
    let as_object = format!("{AS}object");
    expansion
        .triples
        .iter()
        .filter(|t: &&Triple| t.subject == *activity && t.predicate.as_str() == as_object)
        .map(|t| &t.object)
        .collect()
}

fn add_kind(activity: &Activity) -> &'static str {
    match activity.object().get("type").and_then(Value::as_str) {
        Some("Document") => "document",
        _ => "event",
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
        assert!(super::ports::is_locode("KEMBA", &countries));
    }
}
