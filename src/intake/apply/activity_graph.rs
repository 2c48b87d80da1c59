//! The activity as the organisation's activity graph keeps it: its type, the trust credential
//! the node issues, the link to its log entry (how every read finds it: the summary and each
//! revision name the entry), and the payload as sent with the generator and credential
//! injected. Only what a read needs: the activity's other triples (actor, object, target), the
//! generator, the activity's hash and a link to its consignment were written as quads too until
//! 2026-11-26, and nothing read them — the payload holds the activity whole, and the
//! credential's claims name the actor, the hash and the consignment.

use oxigraph::model::vocab::rdf;
use oxigraph::model::{NamedNode, NamedOrBlankNode, Triple};
use serde_json::{json, Value};

use super::lookup::Record;
use super::writer::{json_literal, Writer};
use super::Apply;
use crate::documents::Content;
use crate::error::Result;
use crate::intake::credential::Attested;
use crate::rdf::literal;
use crate::store::graphs;
use crate::vocab::dsn;

const AS: &str = "https://www.w3.org/ns/activitystreams#";

impl Apply<'_> {
    pub(super) fn activity_graph(
        &self,
        w: &mut Writer<'_, '_>,
        rest: &[Triple],
        record: &Record,
    ) -> Result<()> {
        let g = graphs::activities(self.org());
        let node_did = self.credentials.issuer().to_owned();
        let credential = self.credentials.issue(&Attested {
            actor: &self.activity.actor_did,
            activity_type: self.activity.kind.as_str(),
            activity_hash: self.activity_hash,
            entry_id: self.entry_id,
            consignment: &format!("aig:{}", record.aig_hex),
            applied: self.now,
        });
        let mut stored = self.activity.document.clone();
        if let Some(uri) = self.content.and_then(Content::stored_uri) {
            if let Some(Value::Object(object)) = stored.get_mut("object") {
                object.insert("uRIId".into(), json!(uri));
            }
        }
        stored.insert("generator".into(), json!(node_did));
        stored.insert("trustCredential".into(), json!(credential));
        *self.issued.borrow_mut() = Some(credential.clone());
        let act = activity_subject(rest, self.activity_root);
        w.add(
            act.clone(),
            rdf::TYPE.into_owned(),
            NamedNode::new_unchecked(format!("{AS}{}", self.activity.kind.as_str())),
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

/// The activity node: the caller's `id` when it gave one, else the minted one.
fn activity_subject(rest: &[Triple], minted: &NamedNode) -> NamedOrBlankNode {
    let as_object = format!("{AS}object");
    rest.iter()
        .find(|t| t.predicate.as_str() == as_object)
        .map(|t| t.subject.clone())
        .unwrap_or_else(|| minted.clone().into())
}
