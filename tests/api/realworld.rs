//! The world's payloads: what the spec allows is accepted, whatever our own examples do. Value
//! objects as ids, locations without a UN/LOCODE, `POST /inbox/validate`, the served shapes, and
//! every payload of `tests/corpus/` (public D23B consignments and AS2 activities, see its
//! SOURCES.md) through the inbox and back out of the reads.

use std::collections::HashSet;

use reqwest::StatusCode;
use serde_json::{json, Map, Value};

use crate::common::*;

const UN_LOCODE_TYPE: &str = "https://ref.gs1.org/voc/LocationID_Type-UN_LOCODE";

async fn list(session: &Session, node: &TestNode) -> Vec<Value> {
    let r = session.get(node, &format!("{LIST}?limit=100")).await;
    assert_eq!(r.status(), StatusCode::OK);
    json_body(r).await["entities"].as_array().unwrap().clone()
}

async fn validate(session: &Session, node: &TestNode, activity: &Value) -> reqwest::Response {
    node.client
        .post(node.url(VALIDATE))
        .header("x-api-key", &session.account.api_key)
        .bearer_auth(&session.token)
        .json(activity)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn value_objects_key_records_like_strings() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let global_id = "urn:uuid:5a0c7e52-63f4-4f55-8f0e-1d2b3c4d5e6f";
    let mut create = as_org(example("create-consignment"), trader.org());
    create["object"]["globalId"] = json!({"@value": global_id});
    create["object"]["identifier"] = json!({
        "@value": "VO-2026-1",
        "@type": "http://www.w3.org/2001/XMLSchema#string"
    });
    assert_completed(&trader.publish(&node, &create).await);

    let rows = list(&trader, &node).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["globalId"], global_id, "reads return strings");
    assert_eq!(rows[0]["identifier"], "VO-2026-1");
    for id in [global_id, "VO-2026-1"] {
        let r = trader
            .get(&node, &format!("{LIST}/{}", form_encoded(id)))
            .await;
        assert_eq!(r.status(), StatusCode::OK, "{id}");
    }

    // The string forms name the same record: a second Create of them conflicts, an Update of
    // them applies, an Add whose target is a value object finds it.
    let mut again = as_org(example("create-consignment"), trader.org());
    again["object"]["globalId"] = json!(global_id);
    again["object"]["identifier"] = json!("VO-2026-1");
    assert_eq!(
        task_error(&trader.publish(&node, &again).await)["name"],
        "ConflictError"
    );
    let mut update = as_org(example("update-consignment"), trader.org());
    update["object"]["globalId"] = json!(global_id);
    update["object"]["identifier"] = json!({"@value": "VO-2026-1"});
    update["object"]["summaryDescription"] = json!("updated through value objects");
    assert_completed(&trader.publish(&node, &update).await);
    let mut event = as_org(example("add-event"), trader.org());
    event["target"]["globalId"] = json!({"@value": global_id});
    assert_completed(&trader.publish(&node, &event).await);
    let events = json_body(
        trader
            .get(&node, &format!("{LIST}/{}/events", form_encoded(global_id)))
            .await,
    )
    .await;
    assert_eq!(events["entities"].as_array().unwrap().len(), 1);
    assert_eq!(list(&trader, &node).await.len(), 1);
}

/// A location identified by an IATA code (or anything but a UN/LOCODE): stored, listed,
/// viewable, shown by its name or code, never routed, and the publisher is told.
#[tokio::test]
async fn locations_without_a_locode_are_kept_shown_and_warned_but_not_routed() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    let mut air = as_org(example("create-consignment"), trader.org());
    air["object"]["globalId"] = json!("urn:uuid:0b6f1c8e-2f0a-4d43-9d59-3a1f6b7c8d90");
    air["object"]["identifier"] = json!("AIR-NBO-AMS-1");
    air["object"]["atDepartureTransportMovement"]["departureEvent"][0]
        ["occurrenceLogisticsLocation"] = json!({
        "type": "LogisticsLocation",
        "identifier": {"@type": "https://ref.gs1.org/voc/LocationID_Type-IATA_CODE", "@value": "NBO"}
    });
    air["object"]["atArrivalTransportMovement"]["arrivalEvent"][0]["occurrenceLogisticsLocation"] = json!({
        "type": "LogisticsLocation",
        "name": "Mombasa (as a name only)",
        "identifier": "KE MBA"
    });
    let entry = trader.publish(&node, &air).await;
    assert_completed(&entry);
    let warnings = entry["tasks"][0]["warnings"].as_array().unwrap();
    let paths: Vec<&str> = warnings
        .iter()
        .map(|w| w["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(
            &"object.atArrivalTransportMovement.arrivalEvent[0].occurrenceLogisticsLocation.identifier"
        ),
        "{warnings:#?}"
    );
    assert!(
        paths.contains(
            &"object.atDepartureTransportMovement.departureEvent[0].occurrenceLogisticsLocation.identifier"
        ),
        "{warnings:#?}"
    );
    assert!(warnings
        .iter()
        .all(|w| w["message"].as_str().unwrap().contains("not routed")));

    let rows = list(&trader, &node).await;
    let row = &rows[0];
    assert_eq!(row["portOfExit"], "NBO", "no name: the identifier's value");
    assert_eq!(row["portOfEntry"], "Mombasa (as a name only)");
    for absent in [
        "portOfExitCode",
        "portOfExitCountryId",
        "portOfEntryCode",
        "portOfEntryCountryId",
    ] {
        assert!(row.get(absent).is_none(), "{absent}: {row:#}");
    }
    let view = trader.get(&node, &format!("{LIST}/AIR-NBO-AMS-1")).await;
    assert_eq!(view.status(), StatusCode::OK);
    // The Kenyan agency's rule cannot match a port without a country.
    assert!(list(&agency, &node).await.is_empty());
    let r = agency.get(&node, &format!("{LIST}/AIR-NBO-AMS-1")).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // Without movements: stored, one warning; a well-formed consignment: no warnings at all.
    let entry = trader
        .publish(&node, &as_org(example("no-movements"), trader.org()))
        .await;
    assert_completed(&entry);
    let warnings = entry["tasks"][0]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert_eq!(warnings[0]["path"], "object");
    let entry = trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    assert_completed(&entry);
    assert!(entry["tasks"][0].get("warnings").is_none(), "{entry:#}");
    assert_eq!(
        list(&agency, &node).await.len(),
        1,
        "the KEMBA one is routed"
    );
}

#[tokio::test]
async fn validate_runs_every_check_and_stores_nothing() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let create = as_org(example("create-consignment"), trader.org());

    let r = validate(&trader, &node, &create).await;
    assert_eq!(r.status(), StatusCode::OK);
    let v = json_body(r).await;
    assert_eq!(v["valid"], true, "{v:#}");
    assert_eq!(v["failures"], json!([]));
    assert_eq!(v["warnings"], json!([]));
    let summary = &v["summary"];
    assert_eq!(summary["identifier"], "FWD-2026-000417");
    assert_eq!(summary["portOfEntryCode"], "KEMBA");
    assert_eq!(summary["portOfEntryCountryId"], "KE");
    assert_eq!(summary["portOfExitCode"], "BRSSZ");
    assert_eq!(summary["dateOfEntry"], "2026-12-24T06:00:00Z");
    assert!(list(&trader, &node).await.is_empty(), "nothing stored");

    // Shape failures, with the same detail a failed task carries.
    let invalid = as_org(example("invalid-missing-globalid"), trader.org());
    let v = json_body(validate(&trader, &node, &invalid).await).await;
    assert_eq!(v["valid"], false);
    let paths: Vec<&str> = v["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"object.globalId"), "{v:#}");

    // Warnings for what is stored but not routed.
    let v = json_body(
        validate(
            &trader,
            &node,
            &as_org(example("no-movements"), trader.org()),
        )
        .await,
    )
    .await;
    assert_eq!(
        (v["valid"].clone(), v["warnings"].as_array().unwrap().len()),
        (json!(true), 1)
    );

    // What the transaction would find: an Update or Add of nothing, a Create of ids in use.
    let update = as_org(example("update-consignment"), trader.org());
    let v = json_body(validate(&trader, &node, &update).await).await;
    assert_eq!(v["valid"], false);
    assert_eq!(v["failures"][0]["constraint"], "NotFoundError", "{v:#}");
    let event = as_org(example("add-event"), trader.org());
    let v = json_body(validate(&trader, &node, &event).await).await;
    assert_eq!(v["failures"][0]["path"], "target.globalId", "{v:#}");
    assert!(v.get("summary").is_none());
    assert_completed(&trader.publish(&node, &create).await);
    let v = json_body(validate(&trader, &node, &create).await).await;
    assert_eq!(v["failures"][0]["constraint"], "ConflictError", "{v:#}");
    let v = json_body(validate(&trader, &node, &update).await).await;
    assert_eq!(v["valid"], true, "{v:#}");
    let v = json_body(validate(&trader, &node, &event).await).await;
    assert_eq!(v["valid"], true, "{v:#}");
    assert_eq!(list(&trader, &node).await.len(), 1);

    // Request-level problems and credentials answer as the inbox does.
    let r = validate(&trader, &node, &json!({"type": "Create"})).await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    let other = as_org(
        example("create-consignment"),
        "did:web:someone.else.example",
    );
    let r = validate(&trader, &node, &other).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = node
        .client
        .post(node.url(VALIDATE))
        .json(&create)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
}

#[tokio::test]
async fn the_shapes_are_served_as_the_node_uses_them() {
    let node = TestNode::start().await;
    for name in ["consignment.ttl", "activity.ttl"] {
        let r = node
            .client
            .get(node.url(&format!("/shapes/{name}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/turtle"));
        let on_disk =
            std::fs::read_to_string(format!("{}/shapes/{name}", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        assert_eq!(r.text().await.unwrap(), on_disk);
    }
    let r = node
        .client
        .get(node.url("/shapes/..%2Fsecrets"))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}

/// Each bad form still gets a ValidationError naming the path and the value.
#[tokio::test]
async fn bad_forms_are_still_refused_naming_path_and_value() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let base = as_org(example("create-consignment"), trader.org());
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        ("/object/globalId", json!(7), "object.globalId", "7"),
        (
            "/object/identifier",
            json!(["a", "b"]),
            "object.identifier",
            "a",
        ),
        (
            "/object/globalId",
            json!({"@value": 7}),
            "object.globalId",
            "7",
        ),
        (
            "/object/identifier",
            json!({"@value": null}),
            "object.identifier",
            "null",
        ),
        (
            "/object/atArrivalTransportMovement/arrivalEvent/0/scheduledOccurrenceDateTime",
            json!("2026-13-01T00:00:00Z"),
            "object.atArrivalTransportMovement.arrivalEvent[0].scheduledOccurrenceDateTime",
            "2026-13-01",
        ),
        (
            "/object/undeclaredProperty",
            json!("x"),
            "object.undeclaredProperty",
            "",
        ),
        (
            "/object/atDepartureTransportMovement/transportModeCode",
            json!("unece:TransportModeCodeList#X"),
            "object.atDepartureTransportMovement.transportModeCode",
            "TransportModeCodeList#X",
        ),
    ];
    for (i, (pointer, value, path, shown)) in cases.into_iter().enumerate() {
        let mut activity = base.clone();
        activity["object"]["globalId"] = json!(format!("urn:uuid:00000000-0000-4000-9000-{i:012}"));
        activity["object"]["identifier"] = json!(format!("BAD-{i}"));
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        activity
            .pointer_mut(parent)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .insert(key.to_string(), value.clone());
        let r = trader.post(&node, &activity).await;
        assert!(
            r.status().is_success() || r.status().is_client_error(),
            "{pointer}: {}",
            r.status()
        );
        let entry = json_body(r).await;
        let error = task_error(&entry);
        assert_eq!(
            error["cause"]["name"], "ValidationError",
            "{pointer}: {error:#}"
        );
        let failures = error["cause"]["properties"]["failures"].as_array().unwrap();
        let failure = failures
            .iter()
            .find(|f| f["path"].as_str().unwrap().starts_with(path))
            .unwrap_or_else(|| panic!("{pointer}: {error:#}"));
        if !shown.is_empty() {
            assert!(
                failure["value"].as_str().unwrap_or("").contains(shown),
                "{pointer}: {failure}"
            );
        }
    }
    assert!(list(&trader, &node).await.is_empty());
}

// ---------------------------------------------------------------------------------------------
#[tokio::test]
async fn an_id_sent_on_the_object_is_kept_as_sent_and_the_node_names_the_consignment() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let other = Session::new(&node, "other@elsewhere.example").await;
    other.publish_example(&node, "create-consignment").await;
    let theirs = ok_json(other.get(&node, &format!("{LIST}/{GLOBAL_ID}")).await).await;
    let their_node = format!(
        "urn:dataspace-node:consignment:{}",
        theirs["id"].as_str().unwrap().trim_start_matches("aig:")
    );
    // Sent as the object's id: another organisation's consignment node, and a TWIN-style UCR.
    for (n, sent) in [
        (1, their_node.as_str()),
        (2, "urn:ucr:KE-KRA-2026-CUSTOMS-0001"),
    ] {
        let mut create = as_org(example("create-consignment"), trader.org());
        create["object"]["id"] = json!(sent);
        create["object"]["globalId"] =
            json!(format!("urn:uuid:00000000-0000-4000-9000-00000000000{n}"));
        create["object"]["identifier"] = json!(format!("WITH-ID-{n}"));
        let entry = trader.publish(&node, &create).await;
        assert_completed(&entry);
        assert!(
            entry["tasks"][0]["warnings"]
                .to_string()
                .contains("object.@id"),
            "{entry:#}"
        );
        let path = format!("{LIST}/urn:uuid:00000000-0000-4000-9000-00000000000{n}");
        let view = ok_json(trader.get(&node, &path).await).await;
        let aig = view["id"]
            .as_str()
            .unwrap()
            .trim_start_matches("aig:")
            .to_owned();
        assert_ne!(format!("urn:dataspace-node:consignment:{aig}"), their_node);
        let quads = node
            .client
            .get(node.url(&path))
            .header("x-api-key", &trader.account.api_key)
            .bearer_auth(&trader.token)
            .header("accept", "application/n-quads")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!quads.contains(sent), "{sent} stored as a node:\n{quads}");
    }
    // The other organisation's consignment is as it was.
    let again = ok_json(other.get(&node, &format!("{LIST}/{GLOBAL_ID}")).await).await;
    assert_eq!(again, theirs);
}

// The corpus

/// What the node must do with a corpus file.
pub enum Expect {
    Accepted,
    /// Refused, only for rules the spec (or D23B, which the spec says present properties are
    /// validated against) states: `(part of a failure path, the rule)`. Every failure's path must
    /// contain one of the parts, and the first must be among them. A request-level refusal is
    /// named by its status (`"400"`).
    Refused(&'static [(&'static str, &'static str)]),
}

fn countries() -> HashSet<String> {
    let path = format!(
        "{}/contexts/codelists/countryid.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let list: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    list["values"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["value"].as_str())
        .filter(|c| c.len() == 2)
        .map(str::to_owned)
        .collect()
}

fn first(v: &Value) -> Option<&Value> {
    match v {
        Value::Array(items) => items.first(),
        Value::Null => None,
        other => Some(other),
    }
}

fn text(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        Value::Object(o) => o.get("@value").and_then(Value::as_str),
        _ => None,
    }
}

/// The spec's five rules, written again from the spec for the test: (display, code, country).
fn expected_port(
    consignment: &Map<String, Value>,
    movement: &str,
    events: &str,
    countries: &HashSet<String>,
) -> Option<(Option<String>, Option<String>, Option<String>)> {
    let movement = first(consignment.get(movement)?)?;
    let event = first(movement.get(events)?)?;
    let location = first(event.get("occurrenceLogisticsLocation")?)?;
    let identifier = location.get("identifier").and_then(first);
    let locode = identifier.and_then(|id| match id {
        Value::String(s) => Some(s.as_str()),
        Value::Object(o) if o.get("@type").is_none_or(|t| t == UN_LOCODE_TYPE) => {
            o.get("@value").and_then(Value::as_str)
        }
        _ => None,
    });
    let code = locode.filter(|c| {
        c.len() == 5
            && c.is_ascii()
            && countries.contains(&c[..2])
            && c[2..]
                .chars()
                .all(|ch| ch.is_ascii_uppercase() || ('2'..='9').contains(&ch))
    });
    let display = location
        .get("name")
        .and_then(first)
        .and_then(text)
        .or_else(|| identifier.and_then(text));
    Some((
        display.map(str::to_owned),
        code.map(str::to_owned),
        code.map(|c| c[..2].to_owned()),
    ))
}

fn assert_port(
    row: &Value,
    which: &str,
    expected: Option<(Option<String>, Option<String>, Option<String>)>,
    file: &str,
) {
    let (display, code, country) = expected.unwrap_or_default();
    let field = |suffix: &str| {
        row.get(format!("portOf{which}{suffix}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    assert_eq!(field(""), display, "{file}: portOf{which}: {row:#}");
    assert_eq!(field("Code"), code, "{file}: portOf{which}Code: {row:#}");
    assert_eq!(
        field("CountryId"),
        country,
        "{file}: portOf{which}CountryId: {row:#}"
    );
}

/// The consignment a corpus Add is about, created first so the Add has its target.
fn target_for(add: &Value, org: &str) -> Value {
    let global_id = text(&add["target"]["globalId"]).unwrap_or("urn:uuid:corpus-target");
    let mut create = as_org(example("no-movements"), org);
    create["object"]["globalId"] = json!(global_id);
    create["object"]["identifier"] = json!(format!("corpus-target-{global_id}"));
    create
}

/// Posts one corpus file and checks what the node did with it through the reads.
pub async fn check_corpus_file(file: &str, expect: Expect) {
    let path = format!("{}/{file}", corpus_dir());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // A file of several payloads (an array) is checked one payload at a time.
    let docs = match doc {
        Value::Array(items) => items,
        one => vec![one],
    };
    for doc in docs {
        check_corpus_doc(file, doc, &expect).await;
    }
}

async fn check_corpus_doc(file: &str, doc: Value, expect: &Expect) {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@corpus.example").await;
    let activity = as_activity(&doc, trader.org());
    if let Expect::Refused(rules) = expect {
        let r = trader.post(&node, &activity).await;
        if r.status().is_client_error() {
            let status = r.status();
            assert_eq!(
                status.as_str(),
                rules[0].0,
                "{file}: refused for {}",
                rules[0].1
            );
            let body = json_body(r).await;
            assert!(body["message"].is_string(), "{file}: {body}");
            return;
        }
        let entry = json_body(r).await;
        let error = task_error(&entry);
        let failures = error["cause"]["properties"]["failures"].as_array().unwrap();
        let rule_of = |path: &str| rules.iter().find(|(part, _)| path.contains(part));
        for f in failures {
            let path = f["path"].as_str().unwrap();
            assert!(
                rule_of(path).is_some(),
                "{file}: refused for no rule the spec states: {f:#}"
            );
        }
        assert!(
            failures
                .iter()
                .any(|f| f["path"].as_str().unwrap().contains(rules[0].0)),
            "{file}: must be refused for {}: {error:#}",
            rules[0].1
        );
        let v = json_body(validate(&trader, &node, &activity).await).await;
        assert_eq!(v["valid"], false, "{file}: validate agrees");
        assert!(
            list(&trader, &node).await.is_empty(),
            "{file}: nothing stored"
        );
        return;
    }
    if activity["type"] == "Add" || activity["type"] == "Update" {
        let target = if activity["type"] == "Add" {
            target_for(&activity, trader.org())
        } else {
            let mut create = activity.clone();
            create["type"] = json!("Create");
            create
        };
        assert_completed(&trader.publish(&node, &target).await);
    }
    let v = json_body(validate(&trader, &node, &activity).await).await;
    let r = trader.post(&node, &activity).await;
    assert!(r.status().is_success(), "{file}: {}", r.status());
    let entry = json_body(r).await;
    assert_completed(&entry);
    assert_eq!(v["valid"], true, "{file}: validate agrees: {v:#}");
    if activity["type"] == "Add" {
        let target = text(&activity["target"]["globalId"]).unwrap();
        let kind = if activity["object"]["type"] == "Document" {
            "documents"
        } else {
            "events"
        };
        let r = trader
            .get(&node, &format!("{LIST}/{}/{kind}", form_encoded(target)))
            .await;
        assert_eq!(r.status(), StatusCode::OK, "{file}");
        let read = json_body(r).await;
        assert_eq!(
            read["entities"].as_array().unwrap().len(),
            1,
            "{file}: {read:#}"
        );
        return;
    }
    let object = activity["object"].as_object().unwrap();
    let global_id = text(&object["globalId"]).unwrap();
    let rows = list(&trader, &node).await;
    let row = rows
        .iter()
        .find(|r| r["globalId"] == global_id)
        .unwrap_or_else(|| panic!("{file}: not listed: {rows:#?}"));
    assert_eq!(
        row["identifier"].as_str(),
        text(&object["identifier"]),
        "{file}"
    );
    let countries = countries();
    let exit = expected_port(
        object,
        "atDepartureTransportMovement",
        "departureEvent",
        &countries,
    );
    let entry_port = expected_port(
        object,
        "atArrivalTransportMovement",
        "arrivalEvent",
        &countries,
    );
    assert_port(row, "Exit", exit, file);
    assert_port(row, "Entry", entry_port.clone(), file);
    // A port of entry without a country is said on the task.
    let warned = entry["tasks"][0]["warnings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let entry_country = entry_port.as_ref().and_then(|p| p.2.clone());
    assert_eq!(
        entry_country.is_none(),
        warned
            .iter()
            .any(|w| w["path"].as_str().unwrap().contains("arrival") || w["path"] == "object"),
        "{file}: {warned:#?}"
    );
    assert_eq!(v["summary"]["globalId"], global_id, "{file}: {v:#}");
    let view = trader
        .get(&node, &format!("{LIST}/{}", form_encoded(global_id)))
        .await;
    assert_eq!(view.status(), StatusCode::OK, "{file}");
    let view = json_body(view).await;
    assert!(view["id"].is_string(), "{file}: {view:#}");
    if let Some(sent) = object.get("id") {
        // The node names the consignment; the id sent stays in the description as sent.
        assert!(
            view["id"].as_str().unwrap().starts_with("aig:"),
            "{file}: {view:#}"
        );
        assert!(
            warned.iter().any(|w| w["path"] == "object.@id"),
            "{file}: {warned:#?}"
        );
        let history = format!("{LIST}/{}/history", form_encoded(global_id));
        let revisions = ok_json(trader.get(&node, &history).await).await;
        let revision = revisions["entities"][0]["revision"].as_str().unwrap();
        let created = ok_json(trader.get(&node, &format!("{history}/{revision}")).await).await;
        assert_eq!(&created["description"]["id"], sent, "{file}: {created:#}");
    }
    let r = node
        .client
        .get(node.url(&format!("{LIST}/{}", form_encoded(global_id))))
        .header("x-api-key", &trader.account.api_key)
        .bearer_auth(&trader.token)
        .header("accept", "application/n-quads")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{file}: the linked-data form");
}

macro_rules! corpus {
    ($($test:ident: $file:literal => $expect:expr;)*) => {
        $(
            #[tokio::test]
            async fn $test() {
                check_corpus_file($file, $expect).await;
            }
        )*

        /// Every payload in tests/corpus/ has its test above.
        #[test]
        fn every_corpus_file_has_a_test() {
            let listed: HashSet<&str> = [$($file),*].into_iter().collect();
            let mut missing = Vec::new();
            for entry in std::fs::read_dir(corpus_dir()).unwrap() {
                let name = entry.unwrap().file_name().into_string().unwrap();
                if (name.ends_with(".json") || name.ends_with(".jsonld")) && !listed.contains(name.as_str()) {
                    missing.push(name);
                }
            }
            assert!(missing.is_empty(), "corpus files without a test: {missing:?}");
            assert!(listed.len() >= 12);
        }
    };
}

const DATE: &str =
    "TransportEvent: `scheduledOccurrenceDateTime` (ISO 8601 date-time): a one-digit day";
const DPI: &[(&str, &str)] = &[("departureEvent[0].scheduledOccurrenceDateTime", DATE)];
const SIGNAL: &[(&str, &str)] = &[
    (
        "occurrenceLogisticsLocation.identifier",
        "LogisticsLocation: `identifier` (object with `@type` and `@value`): `type`/`value` make a node, not a value",
    ),
    (
        "goodsTypeCode",
        "ConsignmentItem: `goodsTypeCode` (`unece:GoodsTypeCodeList#<code>`): a bare \"1602\"",
    ),
    (
        "countryId",
        "`countryId` / `tradeAddressCountryId` of the form `unece:CountryId#<alpha-2>`: a bare \"PL\"",
    ),
    (
        "WeightMeasure",
        "WrappedWeightMeasure: `unece:WeightUnitMeasureTypeValue` (string, required); `weightUnitMeasureTypeValue` is no D23B term",
    ),
    (
        "Measure",
        "D23B: `latitudeMeasure` / `longitudeMeasure` are object properties, not numbers",
    ),
];

corpus! {
    corpus_dpi_consignment_1: "dpi-consignment-1-chicken-NLRTM-GBFXT-sea.jsonld" => Expect::Refused(DPI);
    corpus_dpi_consignment_1_mended: "dpi-consignment-1-chicken-NLRTM-GBFXT-sea.mended.json" => Expect::Accepted;
    corpus_dpi_consignment_2: "dpi-consignment-2-flowers-NBO-AMS-air-iata.jsonld" => Expect::Refused(DPI);
    corpus_dpi_consignment_2_mended: "dpi-consignment-2-flowers-NBO-AMS-air-iata.mended.json" => Expect::Accepted;
    corpus_dpi_consignment_3: "dpi-consignment-3-beef-BRSSZ-GBSOU-sea.jsonld" => Expect::Refused(DPI);
    corpus_dpi_consignment_3_mended: "dpi-consignment-3-beef-BRSSZ-GBSOU-sea.mended.json" => Expect::Accepted;
    corpus_dpi_create_1_v1: "dpi-create-consignment-1-chicken-v1.jsonld" => Expect::Refused(DPI);
    corpus_dpi_create_1_v1_mended: "dpi-create-consignment-1-chicken-v1.mended.json" => Expect::Accepted;
    corpus_dpi_create_1_v2: "dpi-create-consignment-1-chicken-v2.jsonld" => Expect::Refused(DPI);
    corpus_dpi_create_1_v2_mended: "dpi-create-consignment-1-chicken-v2.mended.json" => Expect::Accepted;
    corpus_dpi_create_2_v1: "dpi-create-consignment-2-flowers-iata-v1.jsonld" => Expect::Refused(DPI);
    corpus_dpi_create_2_v1_mended: "dpi-create-consignment-2-flowers-iata-v1.mended.json" => Expect::Accepted;
    corpus_dpi_create_2_v2: "dpi-create-consignment-2-flowers-iata-v2.jsonld" => Expect::Refused(DPI);
    corpus_dpi_create_2_v2_mended: "dpi-create-consignment-2-flowers-iata-v2.mended.json" => Expect::Accepted;
    corpus_dpi_create_3: "dpi-create-consignment-3-beef.jsonld" => Expect::Refused(DPI);
    corpus_dpi_create_3_mended: "dpi-create-consignment-3-beef.mended.json" => Expect::Accepted;
    corpus_signal_create_teta: "signal-library-create-teta-calais-dover-road.json" => Expect::Refused(SIGNAL);
    corpus_signal_consignment_teta: "signal-library-consignment-teta-calais-dover-road.json" => Expect::Refused(SIGNAL);
    corpus_signal_consignment_acme: "signal-library-consignment-acme-calais-dover-road.json" => Expect::Refused(&SIGNAL[1..]);
    corpus_twin_add: "twin-dsc-openapi-add-consignment-example.json" => Expect::Refused(&[("400", "Activity: `target` is required for `Add`")]);
    corpus_sixty_kenya_community: "sixty-node-kenya-community-consignments.json" => Expect::Accepted;
}
