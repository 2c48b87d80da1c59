//! The shapes mean to a standard SHACL engine what they mean to the node: every example, every
//! corpus payload and a set of broken variants is validated by the node (`POST /inbox/validate`,
//! its shape constraints only) and by pyshacl over pyld's expansion of the same activity
//! (`tests/shacl/verdict.py`); the two verdicts must be the same for each.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::{json, Value};

use crate::common::*;

/// The virtualenv `.ci/setup.sh` makes (`DATASPACE_NODE_SHACL_PYTHON`).
fn python() -> String {
    let path = std::env::var("DATASPACE_NODE_SHACL_PYTHON").unwrap_or_else(|_| {
        format!(
            "{}/.cache/dataspace-node/venv/bin/python",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    assert!(
        std::path::Path::new(&path).exists(),
        "{path} is missing: run the tests through .ci/test, which sets up pyshacl"
    );
    path
}

/// Broken variants: each must be refused by both engines.
fn broken(org: &str) -> Vec<(&'static str, Value)> {
    let create = as_org(example("create-consignment"), org);
    let event = as_org(example("add-event"), org);
    let document = as_org(example("add-document"), org);
    let mut cases = Vec::new();
    let mut set = |name, base: &Value, pointer: &str, value: Option<Value>| {
        let mut a = base.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let holder = a.pointer_mut(parent).unwrap().as_object_mut().unwrap();
        match value {
            Some(v) => holder.insert(key.to_owned(), v),
            None => holder.remove(key),
        };
        cases.push((name, a));
    };
    set("no-globalid", &create, "/object/globalId", None);
    set("no-identifier", &create, "/object/identifier", None);
    set(
        "object-type",
        &create,
        "/object/type",
        Some(json!("SupplyChainEvent")),
    );
    let when = "/object/atArrivalTransportMovement/arrivalEvent/0/scheduledOccurrenceDateTime";
    set(
        "bad-date",
        &create,
        when,
        Some(json!("2026-02-29T06:00:00Z")),
    );
    set(
        "one-digit-day",
        &create,
        when,
        Some(json!("2026-12-5T06:00:00Z")),
    );
    let mode = "/object/atDepartureTransportMovement/transportModeCode";
    set(
        "mode-code",
        &create,
        mode,
        Some(json!("unece:TransportModeCodeList#12")),
    );
    let means = "/object/atDepartureTransportMovement/usedTransportMeans/type";
    set("means-type", &create, means, Some(json!("TransportEvent")));
    let country =
        "/object/includedConsignment/0/consignorParty/postalAddress/tradeAddressCountryId";
    set(
        "country",
        &create,
        country,
        Some(json!("unece:CountryId#Brazil")),
    );
    set(
        "quantity-value",
        &create,
        "/object/packageQuantity/unece:QuantityTypeValue",
        None,
    );
    set("actor-did", &create, "/actor/registeredId/@type", None);
    set("event-code", &event, "/object/typeCode", None);
    set(
        "event-date",
        &event,
        "/object/occurrenceDateTime",
        Some(json!("yesterday")),
    );
    set("event-target", &event, "/target/globalId", None);
    set(
        "document-uri",
        &document,
        "/object/uRIId",
        Some(json!("file:///etc/passwd")),
    );
    set(
        "document-empty-id",
        &document,
        "/object/identifier",
        Some(json!("")),
    );
    set(
        "document-code",
        &document,
        "/object/documentTypeCode",
        Some(json!("unece:DocumentCodeList#ABCD")),
    );
    cases
}

#[tokio::test]
async fn an_independent_shacl_engine_agrees_with_the_node_on_every_payload() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let mut payloads: BTreeMap<String, Value> = BTreeMap::new();
    let examples = format!("{}/tests/fixtures/examples", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(&examples).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(stem) = name.strip_suffix(".json") {
            payloads.insert(
                format!("example-{name}"),
                as_org(example(stem), trader.org()),
            );
        }
    }
    let mut corpus = 0;
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if !(name.ends_with(".json") || name.ends_with(".jsonld")) {
            continue;
        }
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        payloads.insert(format!("corpus-{name}"), as_activity(&doc, trader.org()));
        corpus += 1;
    }
    assert!(corpus >= 12, "the corpus has {corpus} payloads");
    for (name, activity) in broken(trader.org()) {
        payloads.insert(format!("broken-{name}.json"), activity);
    }

    let dir = tempfile::tempdir().unwrap();
    let mut node_verdicts = BTreeMap::new();
    for (name, activity) in &payloads {
        let r = node
            .client
            .post(node.url(VALIDATE))
            .header("x-api-key", &trader.account.api_key)
            .bearer_auth(&trader.token)
            .json(activity)
            .send()
            .await
            .unwrap();
        if r.status().is_client_error() {
            // Refused before any shape is looked at (e.g. a context the node never fetches):
            // no SHACL verdict to compare.
            continue;
        }
        let v = json_body(r).await;
        let shape_failures: Vec<Value> = v["failures"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["constraint"].as_str().unwrap().starts_with("sh:"))
            .cloned()
            .collect();
        node_verdicts.insert(name.clone(), shape_failures);
        std::fs::write(dir.path().join(name), serde_json::to_vec(activity).unwrap()).unwrap();
    }
    let files: Vec<_> = node_verdicts.keys().map(|n| dir.path().join(n)).collect();
    let script = format!("{}/tests/shacl/verdict.py", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(python())
        .arg(script)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shacl: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut refused = 0;
    for (name, failures) in &node_verdicts {
        let theirs = &shacl[name];
        assert_eq!(
            theirs["conforms"].as_bool().unwrap(),
            failures.is_empty(),
            "{name}: node {failures:#?}, pyshacl {theirs:#}"
        );
        if name.starts_with("broken-") {
            assert!(!failures.is_empty(), "{name} must be refused");
            refused += 1;
        }
    }
    assert_eq!(
        refused,
        broken(trader.org()).len(),
        "every broken variant was compared"
    );
}
