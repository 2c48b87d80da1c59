//! The corpus of real-world payloads (tests/corpus) and how a test organisation posts them.

use serde_json::{json, Value};

const AS_CONTEXT: &str = "https://www.w3.org/ns/activitystreams";
const UNECE_CONTEXT: &str = "https://vocabulary.uncefact.org/unece-context-D23B.jsonld";

pub fn corpus_dir() -> String {
    format!("{}/tests/corpus", env!("CARGO_MANIFEST_DIR"))
}

fn actor(org: &str) -> Value {
    json!({
        "@context": UNECE_CONTEXT,
        "type": "TradeParty",
        "registeredId": {"@type": "https://ref.gs1.org/voc/OrganizationID_Type-DID", "@value": org}
    })
}

/// A corpus payload as `org` would post it: an activity keeps everything but its actor (the
/// poster is the test's organisation); a bare consignment is the object of a Create.
pub fn as_activity(doc: &Value, org: &str) -> Value {
    match doc["type"].as_str() {
        Some("Create" | "Update" | "Add") => {
            let mut activity = doc.clone();
            activity["actor"] = actor(org);
            activity
        }
        _ => {
            json!({"@context": [AS_CONTEXT], "type": "Create", "actor": actor(org), "object": doc})
        }
    }
}
