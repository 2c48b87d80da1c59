//! Activities to publish: the fixture examples, made an organisation's own, and events.

use serde_json::{json, Value};

use super::{Session, GLOBAL_ID};

/// A fixture example (tests/fixtures/examples/<name>.json).
pub fn example(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/examples/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// An example with the actor set to `org`.
pub fn as_org(mut activity: Value, org: &str) -> Value {
    activity["actor"]["registeredId"]["@value"] = json!(org);
    activity
}

/// The example consignment as `org`'s, with ids of its own (`FWD-2026-<n>`), arriving at
/// `locode` at `arrival` (scheduled).
pub fn consignment_at(org: &str, n: u32, locode: &str, arrival: &str) -> Value {
    let mut a = as_org(example("create-consignment"), org);
    a["object"]["globalId"] = json!(format!("urn:uuid:00000000-0000-4000-8000-{n:012}"));
    a["object"]["identifier"] = json!(format!("FWD-2026-{n:06}"));
    let arrival_event = &mut a["object"]["atArrivalTransportMovement"]["arrivalEvent"][0];
    arrival_event["occurrenceLogisticsLocation"]["identifier"]["@value"] = json!(locode);
    arrival_event["scheduledOccurrenceDateTime"] = json!(arrival);
    a
}

/// The `add-event` example as `who`'s, with its type code and occurrence time replaced.
pub fn example_event(who: &Session, type_code: &str, at: &str) -> Value {
    let mut e = as_org(example("add-event"), who.org());
    e["object"]["typeCode"] = json!(type_code);
    e["object"]["occurrenceDateTime"] = json!(at);
    e
}

/// An event `code` by `org` on the example consignment (by its [`GLOBAL_ID`]), written out
/// in full with a fixed occurrence time.
pub fn event_on_example(org: &str, code: &str) -> Value {
    json!({
        "@context": "https://www.w3.org/ns/activitystreams",
        "type": "Add",
        "actor": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld", "type": "TradeParty",
                  "registeredId": {"@type": "https://ref.gs1.org/voc/OrganizationID_Type-DID", "@value": org}},
        "object": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld", "type": "SupplyChainEvent",
                   "typeCode": code, "occurrenceDateTime": "2026-12-24T10:00:00Z"},
        "target": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld", "type": "Consignment",
                   "globalId": GLOBAL_ID}
    })
}

/// A border agency's inspection of the example consignment.
pub fn inspection(org: &str) -> Value {
    event_on_example(org, "kra:inspection-completed")
}

/// Asserts an activity-log entry whose task succeeded.
pub fn assert_completed(entry: &Value) {
    assert_eq!(entry["status"], "completed", "{entry:#}");
    assert_eq!(entry["tasks"][0]["status"], "success", "{entry:#}");
}

/// Asserts an activity-log entry whose task failed; returns the task's error.
pub fn task_error(entry: &Value) -> &Value {
    assert_eq!(entry["status"], "error", "{entry:#}");
    assert_eq!(entry["tasks"][0]["status"], "failed", "{entry:#}");
    &entry["tasks"][0]["error"]
}
