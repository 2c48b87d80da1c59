//! The activity as the organisation's activity graph keeps it: one quad, the payload as sent
//! with the generator and the trust credential the node injects, on the activity's log entry
//! (`urn:dataspace-node:activity-log:<id>`, whose type and JSON `entries` writes). Every
//! read finds an activity through its log entry — the summary and each revision name it — and
//! reads the payload or the credential in it. The activity's other triples (actor, object,
//! target), its type, the generator, the hash and the consignment are not kept: no read takes
//! them, and the credential in the payload names the actor, the hash and the consignment.

use serde_json::{json, Value};

use super::lookup::Record;
use super::writer::{json_literal, Writer};
use super::Apply;
use crate::documents::Content;
use crate::intake::credential::Attested;
use crate::store::graphs;
use crate::vocab::dsn;

impl Apply<'_> {
    pub(super) fn activity_graph(&self, w: &mut Writer<'_, '_>, record: &Record) {
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
        stored.insert("generator".into(), json!(self.credentials.issuer()));
        stored.insert("trustCredential".into(), json!(credential));
        *self.issued.borrow_mut() = Some(credential);
        w.add(
            graphs::minted("activity-log", self.entry_id),
            dsn("payload"),
            json_literal(&Value::Object(stored)),
            &graphs::activities(self.org()),
        );
    }
}
