//! An inbox body made ready to apply: parsed, given its ids, expanded, checked, its ports
//! derived — everything the inbox decides before it writes.

use std::time::Instant;

use oxigraph::model::{NamedNode, NamedOrBlankNode};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::activity::{self, Activity, Kind};
use super::shapes::Failure;
use super::{new_hex, Intake, Timings};
use crate::auth::Caller;
use crate::consignment::ports::{self, Ports};
use crate::error::{Error, Result};
use crate::jsonld::{Expander, Expansion};
use crate::store::graphs;

/// An activity that passed the request checks, expanded and checked, not yet applied.
pub(super) struct Prepared {
    pub activity: Activity,
    /// The log entry's id: a digest of the caller and the canonical activity (idempotency).
    pub entry_id: String,
    pub activity_hash: String,
    pub object_id: String,
    pub object_root: NamedOrBlankNode,
    pub activity_root: NamedNode,
    pub expansion: Expansion,
    pub failures: Vec<Failure>,
    pub ports: Ports,
    pub warnings: Vec<ports::Warning>,
}

pub(super) struct Roots {
    pub activity: NamedOrBlankNode,
    /// The node at `object` (the one the record stores).
    pub object: Option<NamedOrBlankNode>,
}

impl Intake {
    /// Everything the inbox checks before it writes: request checks (`Err`), expansion, shapes
    /// and port derivation. Blocking (CPU work).
    pub(super) fn prepare(
        &self,
        caller: &Caller,
        body: &[u8],
        timings: &mut Timings,
    ) -> Result<Prepared> {
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
        let (ports, mut warnings) = match activity.kind {
            Kind::Create | Kind::Update => {
                let ports = ports::derive(activity.object(), &self.countries);
                let warnings = ports::warnings(activity.object(), &ports);
                (ports, warnings)
            }
            Kind::Add => (Ports::default(), Vec::new()),
        };
        // The node names what it stores; an id sent with it stays in the JSON as sent.
        warnings.extend(expansion.replaced_ids.iter().map(|path| ports::Warning {
            path: path.clone(),
            message: format!(
                "{path}: the node names this resource itself; the id sent is kept only in the \
                 description as sent"
            ),
        }));
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
}

fn add_kind(activity: &Activity) -> &'static str {
    match activity.object().get("type").and_then(Value::as_str) {
        Some("Document") => "document",
        _ => "event",
    }
}
