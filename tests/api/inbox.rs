//! POST /supply-chain/data-space/inbox and GET /supply-chain/data-space/activity-logs/{id}.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::*;

#[tokio::test]
async fn create_answers_201_with_a_log_entry() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let r = trader
        .post(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    assert!(r.headers()["server-timing"]
        .to_str()
        .unwrap()
        .contains("expand;dur="));
    let entry = json_body(r).await;
    assert_completed(&entry);
    let id = entry["id"].as_str().unwrap();
    assert_eq!(
        location,
        format!("/supply-chain/data-space/activity-logs/{id}")
    );
    let host = node.base.trim_start_matches("http://").replace(':', "%3A");
    assert_eq!(entry["generator"], format!("did:web:{host}"));
    for field in ["dateCreated", "dateModified"] {
        assert!(chrono::DateTime::parse_from_rfc3339(entry[field].as_str().unwrap()).is_ok());
    }
    let task = &entry["tasks"][0];
    assert!(task["taskId"].is_string() && task["dataspaceAppId"].is_string());
    assert!(task["result"].as_i64().unwrap() > 50, "{task}");
    assert!(task["startDate"].is_string() && task["endDate"].is_string());
    assert!(task.get("error").is_none());
    // The entry id is not the consignment id, and the entry can be read back.
    assert!(!id.contains("7d1f8f3e"));
    let r = trader.get(&node, &location).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(json_body(r).await, entry);
}

#[tokio::test]
async fn log_entries_are_private_to_their_organisation() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let other = Session::new(&node, "other@elsewhere.example").await;
    let entry = trader
        .publish(&node, &as_org(example("no-movements"), trader.org()))
        .await;
    let path = format!(
        "/supply-chain/data-space/activity-logs/{}",
        entry["id"].as_str().unwrap()
    );
    assert_error(
        other.get(&node, &path).await,
        StatusCode::NOT_FOUND,
        "GeneralError",
    )
    .await;
    let r = trader
        .get(
            &node,
            "/supply-chain/data-space/activity-logs/0123456789abcdef0123456789abcdef",
        )
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}

#[tokio::test]
async fn the_identical_activity_twice_is_applied_once() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let activity = as_org(example("create-consignment"), trader.org());
    let first = trader.publish(&node, &activity).await;
    // Same content, other key order and spacing: the existing entry, 200.
    let reordered: Value =
        serde_json::from_str(&serde_json::to_string_pretty(&activity).unwrap()).unwrap();
    let r = trader.post(&node, &reordered).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(json_body(r).await, first);
    // The same consignment in a different activity is a conflict, not a replay.
    let mut changed = activity.clone();
    changed["object"]["summaryDescription"] = json!("changed");
    let entry = trader.publish(&node, &changed).await;
    assert_eq!(task_error(&entry)["name"], "ConflictError");
}

#[tokio::test]
async fn record_keys_must_be_strings_or_value_objects_of_strings() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    for (field, value) in [
        ("globalId", json!(417)),
        ("identifier", json!(["FWD"])),
        ("globalId", json!({"@value": 417})),
        ("identifier", json!({"@value": {"nested": "x"}})),
        ("identifier", json!({"@id": "urn:x:FWD"})),
        ("globalId", json!(true)),
    ] {
        let mut activity = as_org(example("create-consignment"), trader.org());
        activity["object"][field] = value.clone();
        let r = trader.post(&node, &activity).await;
        if r.status() == StatusCode::BAD_REQUEST {
            // Not JSON-LD at all (a value object whose @value is an object): a request error
            // naming the field.
            let body = json_body(r).await;
            assert!(body.to_string().contains(field), "{value}: {body}");
            continue;
        }
        assert_eq!(r.status(), StatusCode::CREATED, "{value}");
        let entry = json_body(r).await;
        let error = task_error(&entry);
        assert_eq!(error["cause"]["name"], "ValidationError", "{error:#}");
        let failures = error["cause"]["properties"]["failures"].as_array().unwrap();
        assert!(
            failures
                .iter()
                .any(|f| f["path"] == format!("object.{field}")),
            "{failures:#?}"
        );
    }
    let list = json_body(
        trader
            .get(&node, "/supply-chain/data-space/consignments")
            .await,
    )
    .await;
    assert_eq!(list["entities"], json!([]));
}

#[tokio::test]
async fn shape_failures_are_a_failed_task_with_every_failure_listed() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let activity = as_org(example("invalid-missing-globalid"), trader.org());
    let r = trader.post(&node, &activity).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let entry = json_body(r).await;
    let error = task_error(&entry);
    assert_eq!(error["name"], "UnprocessableError");
    assert_eq!(
        error["message"],
        "dataspaceDataPlaneService.activitySemanticError"
    );
    assert!(error["source"].is_string());
    assert_eq!(error["cause"]["name"], "ValidationError");
    assert!(
        error["cause"]["message"]
            .as_str()
            .unwrap()
            .contains("globalId"),
        "{error:#}"
    );
    let failures = error["cause"]["properties"]["failures"].as_array().unwrap();
    let paths: Vec<&str> = failures
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"object.globalId"), "{paths:?}");
    let date = failures
        .iter()
        .find(|f| {
            f["path"]
                == "object.atArrivalTransportMovement.arrivalEvent[0].scheduledOccurrenceDateTime"
        })
        .expect("the bad date is reported");
    assert_eq!(date["value"], "not-a-date");
    assert_eq!(entry["tasks"][0]["result"], 0);

    // Strict handling: the same failure as a 422 with the entry as body.
    let mut again = activity.clone();
    again["object"]["identifier"] = json!("FWD-2026-000418-B");
    let r = trader
        .client_post_with(&node, &again, &[("prefer", "handling=strict")])
        .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        json_body(r).await["tasks"][0]["error"]["name"],
        "UnprocessableError"
    );

    // Nothing of the failed activity was stored: a valid consignment with that identifier works.
    let mut fixed = as_org(example("no-movements"), trader.org());
    fixed["object"]["identifier"] = json!("FWD-2026-000418");
    assert_completed(&trader.publish(&node, &fixed).await);
}

#[tokio::test]
async fn update_and_add_need_an_existing_own_consignment() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let other = Session::new(&node, "other@elsewhere.example").await;
    let entry = trader
        .publish(&node, &as_org(example("update-consignment"), trader.org()))
        .await;
    assert_eq!(task_error(&entry)["name"], "NotFoundError");
    let entry = trader
        .publish(&node, &as_org(example("add-event"), trader.org()))
        .await;
    assert_eq!(task_error(&entry)["name"], "NotFoundError");

    trader.publish_example(&node, "create-consignment").await;
    trader.publish_example(&node, "update-consignment").await;
    trader.publish_example(&node, "add-event").await;
    trader.publish_example(&node, "add-document").await;

    // Another organisation cannot touch it, and is not told it exists.
    let entry = other
        .publish(&node, &as_org(example("add-event"), other.org()))
        .await;
    let error = task_error(&entry);
    assert_eq!(error["name"], "NotFoundError");
    let entry = other
        .publish(&node, &as_org(example("update-consignment"), other.org()))
        .await;
    assert_eq!(task_error(&entry)["name"], "NotFoundError");
    // It can publish its own consignment with the same ids.
    other.publish_example(&node, "create-consignment").await;
}

#[tokio::test]
async fn request_level_problems_are_400_naming_the_problem() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let good = as_org(example("add-event"), trader.org());
    let mut cases: Vec<(Value, &str)> = Vec::new();
    for field in ["type", "@context", "actor", "object", "target"] {
        let mut v = good.clone();
        v.as_object_mut().unwrap().remove(field);
        cases.push((v, field));
    }
    let mut v = good.clone();
    v["type"] = json!("Delete");
    cases.push((v, "type"));
    let mut v = good.clone();
    v["@context"] = json!(["https://vocabulary.uncefact.org/unece-context-D23B.jsonld"]);
    cases.push((v, "@context"));
    let mut v = good.clone();
    v["object"] = json!("a string");
    cases.push((v, "object"));
    for (body, field) in cases {
        let r = trader.post(&node, &body).await;
        let v = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
        assert_eq!(v["properties"]["field"], field, "{v}");
    }
    for raw in [
        b"{not json".to_vec(),
        b"[1,2,3]".to_vec(),
        vec![0xff, 0xfe, 0x00],
        b"".to_vec(),
    ] {
        let r = trader.post_raw(&node, raw).await;
        assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    }
}

#[tokio::test]
async fn contexts_are_never_fetched_and_never_redefined() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    // A context URL on a local listener: a fetch would be seen.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/ctx.jsonld", listener.local_addr().unwrap());
    let mut v = as_org(example("create-consignment"), trader.org());
    v["object"]["@context"] = json!(url);
    let body = assert_error(
        trader.post(&node, &v).await,
        StatusCode::BAD_REQUEST,
        "GeneralError",
    )
    .await;
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains(&url) && message.contains("unece-context-D23B.jsonld"),
        "{message}"
    );
    assert!(
        listener.accept().is_err(),
        "the node connected to the context URL"
    );

    // Inline contexts that remap terms or keywords.
    let mut v = as_org(example("create-consignment"), trader.org());
    v["object"]["@context"] =
        json!({"Consignment": "https://evil.example/Thing", "globalId": "@id"});
    assert_error(
        trader.post(&node, &v).await,
        StatusCode::BAD_REQUEST,
        "GeneralError",
    )
    .await;
    let mut v = as_org(example("create-consignment"), trader.org());
    v["@context"] = json!(["https://www.w3.org/ns/activitystreams", {"type": "@id"}]);
    assert_error(
        trader.post(&node, &v).await,
        StatusCode::BAD_REQUEST,
        "GeneralError",
    )
    .await;
}

#[tokio::test]
async fn graph_tricks_are_refused_and_an_id_on_the_object_names_nothing() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    // An id on the object names nothing the node stores: the node names the consignment
    // (`realworld::an_id_sent_on_the_object_is_kept_as_sent_and_the_node_names_the_consignment`).
    for (n, key) in ["@id", "id"].into_iter().enumerate() {
        let mut v = as_org(example("create-consignment"), trader.org());
        v["object"][key] = json!("urn:dataspace-node:consignment:0123");
        v["object"]["globalId"] = json!(format!("urn:uuid:00000000-0000-4000-9000-00000000012{n}"));
        v["object"]["identifier"] = json!(format!("TRICK-{n}"));
        let entry = trader.publish(&node, &v).await;
        assert_completed(&entry);
        assert!(
            entry.to_string().contains("names this resource itself"),
            "{entry}"
        );
    }
    let tricks = [
        ("object", json!({"@graph": [{"@id": "urn:x"}]})),
        ("object", json!({"@reverse": {"globalId": "x"}})),
        ("object", json!({"@included": [{"@id": "urn:x"}]})),
    ];
    for (at, extra) in tricks {
        let mut v = as_org(example("create-consignment"), trader.org());
        for (k, val) in extra.as_object().unwrap() {
            v[at][k] = val.clone();
        }
        let r = trader.post(&node, &v).await;
        assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    }
}

#[tokio::test]
async fn actor_must_be_the_callers_organisation() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let other = Session::new(&node, "other@elsewhere.example").await;
    let r = trader
        .post(&node, &as_org(example("create-consignment"), other.org()))
        .await;
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;
    let r = node
        .client
        .post(node.url(INBOX))
        .header("x-api-key", &trader.account.api_key)
        .json(&example("create-consignment"))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
}

#[tokio::test]
async fn oversized_and_deeply_nested_bodies() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let mut v = as_org(example("create-consignment"), trader.org());
    v["object"]["summaryDescription"] = json!("x".repeat(50 * 1024 * 1024));
    let r = trader.post(&node, &v).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "GeneralError").await;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let r = trader.post_raw(&node, deep.into_bytes()).await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    let deep_object = format!(
        r#"{{"@context":"https://www.w3.org/ns/activitystreams","type":"Create","actor":{{}},"object":{}1{}}}"#,
        r#"{"a":"#.repeat(100_000),
        "}".repeat(100_000)
    );
    let r = trader.post_raw(&node, deep_object.into_bytes()).await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    // Still serving.
    trader.publish_example(&node, "no-movements").await;
}

#[tokio::test]
async fn every_required_field_missing_in_turn_fails_the_task() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let create = as_org(example("create-consignment"), trader.org());
    let event = as_org(example("add-event"), trader.org());
    let cases: Vec<(Value, &str, &str)> = vec![
        (create.clone(), "/object/identifier", "object.identifier"),
        (create.clone(), "/object/globalId", "object.globalId"),
        (event.clone(), "/object/typeCode", "object.typeCode"),
        (
            event.clone(),
            "/object/occurrenceDateTime",
            "object.occurrenceDateTime",
        ),
        (event.clone(), "/target/globalId", "target.globalId"),
        (
            create.clone(),
            "/actor/registeredId/@type",
            "actor.registeredId",
        ),
    ];
    for (mut activity, pointer, path) in cases {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        activity
            .pointer_mut(parent)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove(key);
        let entry = trader.publish(&node, &activity).await;
        let error = task_error(&entry);
        let failures = error["cause"]["properties"]["failures"].as_array().unwrap();
        assert!(
            failures.iter().any(|f| f["path"] == path),
            "{path}: {error:#}"
        );
    }
}

#[tokio::test]
async fn wrong_value_forms_fail_the_task_naming_field_and_value() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let base = as_org(example("create-consignment"), trader.org());
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        ("/object/atDepartureTransportMovement/transportModeCode", json!("sea"), "object.atDepartureTransportMovement.transportModeCode", "sea"),
        ("/object/atDepartureTransportMovement/transportModeCode", json!("unece:TransportModeCodeList#12"), "object.atDepartureTransportMovement.transportModeCode", "TransportModeCodeList#12"),
        ("/object/atArrivalTransportMovement/arrivalEvent/0/scheduledOccurrenceDateTime", json!("2026-02-30T06:00:00Z"), "object.atArrivalTransportMovement.arrivalEvent[0].scheduledOccurrenceDateTime", "2026-02-30T06:00:00Z"),
        ("/object/atArrivalTransportMovement/arrivalEvent/0/scheduledOccurrenceDateTime", json!("2026-12-5T06:00:00Z"), "object.atArrivalTransportMovement.arrivalEvent[0].scheduledOccurrenceDateTime", "2026-12-5T06:00:00Z"),
        ("/object/atArrivalTransportMovement/arrivalEvent/0/occurrenceLogisticsLocation/identifier", json!({"nested": {"@value": "KEMBA"}}), "object.atArrivalTransportMovement.arrivalEvent[0].occurrenceLogisticsLocation.identifier", ""),
        ("/object/consignmentItemQuantity", json!({"unece:QuantityTypeCode": "XCN"}), "object.consignmentItemQuantity.QuantityTypeValue", ""),
        ("/object/consignmentItemQuantity/unece:QuantityTypeCode", json!("unece:UnitMeasureCode#xcn"), "object.consignmentItemQuantity.QuantityTypeCode", "UnitMeasureCode#xcn"),
        ("/object/atDepartureTransportMovement/usedTransportMeans/type", json!("TransportMovement"), "object.atDepartureTransportMovement.usedTransportMeans.type", "TransportMovement"),
        ("/object/includedConsignment/0/includedConsignmentItem/0/originCountry/countryId", json!("unece:CountryId#Kenya"), "object.includedConsignment[0].includedConsignmentItem[0].originCountry.countryId", "CountryId#Kenya"),
        ("/object/utilizedTransportEquipment/0/identifier", json!({"nested": true}), "object.utilizedTransportEquipment[0].identifier", ""),
        ("/object/summaryDescriptoin", json!("typo"), "object.summaryDescriptoin", ""),
        ("/object/declarationTypeCode", json!(7), "object.declarationTypeCode", ""),
    ];
    for (pointer, value, path, shown) in cases {
        let mut activity = base.clone();
        activity["object"]["globalId"] = json!(format!("urn:uuid:{}", uuid_like(pointer)));
        activity["object"]["identifier"] = json!(format!("id-{}", uuid_like(pointer)));
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let target = activity.pointer_mut(parent).unwrap();
        match target {
            Value::Array(items) => items[key.parse::<usize>().unwrap()] = value,
            Value::Object(map) => {
                map.insert(key.to_string(), value);
            }
            _ => unreachable!(),
        }
        let entry = trader.publish(&node, &activity).await;
        let error = task_error(&entry);
        let failures = error["cause"]["properties"]["failures"].as_array().unwrap();
        let failure = failures
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("{path}: {error:#}"));
        if !shown.is_empty() {
            assert!(
                failure["value"].as_str().unwrap_or("").contains(shown),
                "{failure}"
            );
        }
        if path.ends_with("DateTime") {
            // Said in words, not as the date-time pattern's hundreds of characters.
            let message = failure["message"].as_str().unwrap();
            assert!(
                message.contains("not an ISO 8601 date-time (YYYY-MM-DDThh:mm:ss"),
                "{failure}"
            );
            assert!(!failure.to_string().contains("0[13578]"), "{failure}");
        }
    }
}

fn uuid_like(seed: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    seed.hash(&mut h);
    format!("{:016x}", h.finish())
}

#[tokio::test]
async fn parallel_activities_on_one_consignment_all_land() {
    // All in flight at once: beyond the default per-organisation allowance (`fairness`).
    let node = TestNode::start_with(|c| c.inbox_max_concurrent_per_org = 24).await;
    let trader = std::sync::Arc::new(Session::new(&node, "trader@forwarder.example").await);
    trader.publish_example(&node, "create-consignment").await;
    let mut tasks = Vec::new();
    for i in 0..24 {
        let mut event = as_org(example("add-event"), trader.org());
        event["object"]["occurrenceDateTime"] = json!(format!("2026-12-01T09:{:02}:00Z", i));
        let client = node.client.clone();
        let url = node.url(INBOX);
        let key = trader.account.api_key.clone();
        let token = trader.token.clone();
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .header("x-api-key", key)
                .bearer_auth(token)
                .json(&event)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::CREATED);
            r.json::<Value>().await.unwrap()
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for t in tasks {
        let entry = t.await.unwrap();
        assert_completed(&entry);
        ids.insert(entry["id"].as_str().unwrap().to_string());
    }
    assert_eq!(ids.len(), 24);
    // Counted in the store itself once the node has stopped.
    let dir = node.data_dir();
    let node = node.stop().await;
    let store = oxigraph::store::Store::open(dir.join("store")).unwrap();
    let events = store
        .quads_for_pattern(
            None,
            Some(
                oxigraph::model::NamedNodeRef::new("https://w3id.org/dataspace-node/ns#occurredAt")
                    .unwrap(),
            ),
            None,
            None,
        )
        .count();
    assert_eq!(events, 24);
    drop(node);
}

/// Runs a SELECT over the whole store of a stopped node; rows as `var=value` strings.
fn select(dir: &std::path::Path, query: &str) -> Vec<String> {
    use oxigraph::sparql::{QueryResults, SparqlEvaluator};
    let store = oxigraph::store::Store::open(dir.join("store")).unwrap();
    let QueryResults::Solutions(rows) = SparqlEvaluator::new()
        .parse_query(query)
        .unwrap()
        .on_store(&store)
        .execute()
        .unwrap()
    else {
        panic!("not a select")
    };
    let mut out: Vec<String> = rows
        .map(|r| {
            let r = r.unwrap();
            r.iter()
                .map(|(v, t)| match t {
                    oxigraph::model::Term::Literal(l) => format!("{}={}", v.as_str(), l.value()),
                    other => format!("{}={other}", v.as_str()),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    out.sort();
    out
}

const DSN: &str = "PREFIX dsn: <https://w3id.org/dataspace-node/ns#> PREFIX unece: <https://vocabulary.uncefact.org/>";

/// A stopped node's data dir after a Create, an event Add and an Update of the examples (and
/// the guard that keeps it).
async fn created_added_updated() -> (std::path::PathBuf, tempfile::TempDir) {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    trader.publish_example(&node, "add-event").await;
    trader.publish_example(&node, "update-consignment").await;
    let dir = node.data_dir();
    (dir, node.stop().await)
}

#[tokio::test]
async fn update_replaces_the_description_and_keeps_events() {
    let (dir, _guard) = created_added_updated().await;
    let ports = select(&dir, &format!(
        "{DSN} SELECT ?entry ?entryCountry ?exit WHERE {{ GRAPH ?g {{ ?s dsn:portOfEntryCode ?entry ; dsn:portOfEntryCountry ?entryCountry ; dsn:portOfExitCode ?exit }} }}"));
    assert_eq!(ports, vec!["entry=TZDAR entryCountry=TZ exit=BRSSZ"]);
    // The old arrival location is gone from the description, the new one is there.
    let names = select(&dir, &format!("{DSN} SELECT ?name WHERE {{ GRAPH ?g {{ ?l a unece:LogisticsLocation ; unece:name ?name }} }}"));
    assert_eq!(names, vec!["name=Dar es Salaam", "name=Port of Santos"]);
    // Equipment was not in the update: replaced, not merged.
    let equipment = select(
        &dir,
        &format!(
            "{DSN} SELECT ?e WHERE {{ GRAPH ?g {{ ?e a unece:LogisticsTransportEquipment }} }}"
        ),
    );
    assert!(equipment.is_empty(), "{equipment:?}");
    // The event stays, and each activity left its system event.
    let events = select(&dir, &format!("{DSN} SELECT ?code WHERE {{ GRAPH ?g {{ ?e a unece:SupplyChainEvent ; unece:typeCode ?code }} }}"));
    assert_eq!(events, vec!["code=tlip:vessel-departed"]);
    let system = select(&dir, &format!("{DSN} SELECT ?code WHERE {{ GRAPH ?g {{ ?e a dsn:SystemEvent ; dsn:typeCode ?code }} }}"));
    assert_eq!(system, vec!["code=ADD", "code=CREATE", "code=UPDATE"]);
}

/// An organisation's activity graph keeps, per activity, what a read needs: on its log entry,
/// the entry's JSON and the payload (the activity as received, with the generator and the
/// credential), and the entry's type (the vocabulary's domains hold) — no activity node,
/// actor, object, target, generator, hash, consignment link, second credential, status or date
/// written as quads besides.
#[tokio::test]
async fn the_activity_graph_keeps_only_what_reads_need() {
    let (dir, _guard) = created_added_updated().await;
    let per_predicate = select(
        &dir,
        "SELECT ?p (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } \
         FILTER(STRSTARTS(STR(?g), \"urn:dataspace-node:activities:\")) } GROUP BY ?p",
    );
    let dsn = |l: &str| format!("p=<https://w3id.org/dataspace-node/ns#{l}>");
    let mut expected = vec![
        format!("{} n=3", dsn("entryJson")),
        format!("{} n=3", dsn("payload")),
        "p=<http://www.w3.org/1999/02/22-rdf-syntax-ns#type> n=3".to_owned(),
    ];
    expected.sort();
    assert_eq!(per_predicate, expected);
    // Both on the log entry, one entry per activity.
    let entries = select(
        &dir,
        &format!(
            "{DSN} SELECT ?s WHERE {{ GRAPH ?g {{ ?s a dsn:ActivityLogEntry ; dsn:payload ?p ; dsn:entryJson ?e }} \
             FILTER(STRSTARTS(STR(?s), \"urn:dataspace-node:activity-log:\")) }}"
        ),
    );
    assert_eq!(entries.len(), 3, "{entries:?}");
}

#[tokio::test]
async fn ports_follow_the_derivation_rules() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let mut malformed = as_org(example("create-consignment"), trader.org());
    malformed["object"]["globalId"] = json!("urn:uuid:00000000-0000-4000-8000-000000000001");
    malformed["object"]["identifier"] = json!("MALFORMED");
    malformed["object"]["atArrivalTransportMovement"]["arrivalEvent"][0]
        ["occurrenceLogisticsLocation"]["identifier"]["@value"] = json!("KE-MBA");
    // A second arrival event never counts.
    let mut second = malformed["object"]["atArrivalTransportMovement"]["arrivalEvent"][0].clone();
    second["occurrenceLogisticsLocation"]["identifier"]["@value"] = json!("TZDAR");
    malformed["object"]["atArrivalTransportMovement"]["arrivalEvent"]
        .as_array_mut()
        .unwrap()
        .push(second);
    assert_completed(&trader.publish(&node, &malformed).await);
    trader.publish_example(&node, "no-movements").await;
    let dir = node.data_dir();
    let _guard = node.stop().await;
    let rows = select(&dir, &format!(
        "{DSN} SELECT ?id ?name ?code ?country WHERE {{ GRAPH ?g {{ ?s a dsn:ConsignmentSummary ; dsn:identifier ?id . OPTIONAL {{ ?s dsn:portOfEntryName ?name }} OPTIONAL {{ ?s dsn:portOfEntryCode ?code }} OPTIONAL {{ ?s dsn:portOfEntryCountry ?country }} }} }}"));
    assert_eq!(
        rows,
        vec!["id=FWD-2026-000419", "id=MALFORMED name=Mombasa"]
    );
}

#[tokio::test]
async fn update_finds_its_consignment_by_either_id_and_never_takes_anothers() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let list = "/supply-chain/data-space/consignments";
    let create = |global_id: &str, identifier: &str| {
        let mut a = as_org(example("create-consignment"), trader.org());
        a["object"]["globalId"] = json!(global_id);
        a["object"]["identifier"] = json!(identifier);
        a
    };
    let update = |global_id: &str, identifier: &str, note: &str| {
        let mut a = create(global_id, identifier);
        a["type"] = json!("Update");
        a["object"]["summaryDescription"] = json!(note);
        a
    };
    let (a, b) = (
        "urn:uuid:0a000000-0000-4000-8000-00000000000a",
        "urn:uuid:0b000000-0000-4000-8000-00000000000b",
    );
    assert_completed(&trader.publish(&node, &create(a, "A-1")).await);
    assert_completed(&trader.publish(&node, &create(b, "B-1")).await);
    let aig_of_a = get_json(&trader, &node, &format!("{list}/{a}")).await["id"].clone();

    // An id of the other consignment, with either id of this one: a conflict, nothing changed.
    for (global_id, identifier) in [(a, "B-1"), (b, "A-1")] {
        let entry = trader
            .publish(&node, &update(global_id, identifier, "squat"))
            .await;
        assert_eq!(task_error(&entry)["name"], "ConflictError", "{entry}");
    }
    // A Create may not reuse either id, whichever consignment has it.
    for (global_id, identifier) in [(a, "C-1"), ("urn:uuid:0c", "B-1")] {
        let entry = trader.publish(&node, &create(global_id, identifier)).await;
        assert_eq!(task_error(&entry)["name"], "ConflictError", "{entry}");
    }
    // Found by its identifier alone, the consignment takes a new globalId.
    let renamed = "urn:uuid:0d000000-0000-4000-8000-00000000000d";
    assert_completed(
        &trader
            .publish(&node, &update(renamed, "A-1", "renamed"))
            .await,
    );
    let view = get_json(&trader, &node, &format!("{list}/{renamed}")).await;
    assert_eq!(view["id"], aig_of_a);
    let codes = |v: &Value| -> Vec<Value> {
        let events = v["systemEvents"].as_array().unwrap();
        events.iter().map(|e| e["typeCode"].clone()).collect()
    };
    assert_eq!(codes(&view), [json!("CREATE"), json!("UPDATE")]);
    assert_eq!(
        trader.get(&node, &format!("{list}/{a}")).await.status(),
        StatusCode::NOT_FOUND
    );
    // Found by its globalId alone, it takes a new identifier; B was never touched.
    assert_completed(
        &trader
            .publish(&node, &update(renamed, "A-2", "re-identified"))
            .await,
    );
    let view = get_json(&trader, &node, &format!("{list}/A-2")).await;
    assert_eq!(view["id"], aig_of_a);
    assert_eq!(codes(&view).len(), 3);
    let other = get_json(&trader, &node, &format!("{list}/B-1")).await;
    assert_eq!(codes(&other), [json!("CREATE")]);
    assert_ne!(other["id"], aig_of_a);
}

/// The ids a record is keyed by are read as sent: under another spelling of the key
/// (`unece:globalId`) they pass the shape but would key the record by nothing, so the task
/// fails naming the field.
#[tokio::test]
async fn ids_under_another_spelling_of_the_key_fail_the_task() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    for name in ["globalId", "identifier"] {
        let mut create = as_org(example("create-consignment"), trader.org());
        let object = create["object"].as_object_mut().unwrap();
        let value = object.remove(name).unwrap();
        object.insert(format!("unece:{name}"), value);
        let error = task_error(&trader.publish(&node, &create).await).to_string();
        assert!(error.contains(&format!("object.{name}")), "{name}: {error}");
    }
    let mut add = as_org(example("add-event"), trader.org());
    let target = add["target"].as_object_mut().unwrap();
    let value = target.remove("globalId").unwrap();
    target.insert("unece:globalId".into(), value);
    let error = task_error(&trader.publish(&node, &add).await).to_string();
    assert!(error.contains("target.globalId"), "{error}");
    let list = ok_json(trader.get(&node, LIST).await).await;
    assert_eq!(list["entities"], json!([]), "{list:#}");
}

/// The value the node reads as sent must be the one the description holds: a target without
/// the D23B context drops its `globalId` key, and a second value under the full IRI would be
/// the one stored and signed while the node applied the Add to the first. And a document is
/// sent as `"type": "Document"`: typed otherwise it passed the Document shape and was stored
/// as an event.
#[tokio::test]
async fn the_value_read_is_the_one_the_description_holds() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    let mut add = as_org(example("add-event"), trader.org());
    let target = add["target"].as_object_mut().unwrap();
    target.remove("@context");
    target.insert(
        "type".into(),
        json!("https://vocabulary.uncefact.org/Consignment"),
    );
    target.insert(
        "https://vocabulary.uncefact.org/globalId".into(),
        json!("urn:uuid:00000000-0000-4000-8000-000000000000"),
    );
    let r = trader.post(&node, &add).await;
    let status = r.status();
    let body = json_body(r).await;
    assert!(
        status == StatusCode::BAD_REQUEST || body["status"] == "error",
        "{status} {body:#}"
    );
    let events = ok_json(
        trader
            .get(&node, &format!("{LIST}/{IDENTIFIER}/events"))
            .await,
    )
    .await;
    assert_eq!(events["entities"], json!([]), "{events:#}");

    let mut document = as_org(example("add-document"), trader.org());
    let object = document["object"].as_object_mut().unwrap();
    object.remove("type");
    object.insert("@type".into(), json!("Document"));
    let error = task_error(&trader.publish(&node, &document).await).to_string();
    assert!(error.contains("object.type"), "{error}");
}

/// A Create's description is written before the writer lock, in its own new graph
/// (`store::ahead`), and the transaction takes it or removes it: four identical posts at once
/// (the organisation's allowance in flight; one applied, the others its replays, some found
/// only under the lock) and a conflicting
/// Create (a failed task) leave exactly one consignment's graph, and no pending note.
#[tokio::test]
async fn a_create_written_ahead_of_the_lock_is_whole_or_gone() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let activity = as_org(example("create-consignment"), trader.org());
    let posts = (0..4).map(|_| trader.post(&node, &activity));
    let mut statuses: Vec<StatusCode> = futures_util::future::join_all(posts)
        .await
        .iter()
        .map(|r| r.status())
        .collect();
    statuses.sort();
    let mut expected = vec![StatusCode::OK; 3];
    expected.push(StatusCode::CREATED);
    assert_eq!(statuses, expected);
    let mut changed = activity.clone();
    changed["object"]["summaryDescription"] = json!("changed");
    let entry = trader.publish(&node, &changed).await;
    assert_eq!(task_error(&entry)["name"], "ConflictError");

    let dir = node.stop().await;
    let store = dataspace_node::store::Store::open_read_only(&dir.path().join("store")).unwrap();
    let graphs: std::collections::BTreeSet<String> = store
        .db()
        .quads_for_pattern(None, None, None, None)
        .map(|q| q.unwrap().graph_name.to_string())
        .filter(|g| g.starts_with("<urn:dataspace-node:contribution:"))
        .collect();
    assert_eq!(graphs.len(), 1, "{graphs:?}");
    let notes = store
        .db()
        .quads_for_pattern(None, None, None, None)
        .filter(|q| {
            q.as_ref().unwrap().graph_name.to_string() == "<urn:dataspace-node:system:bulk>"
        })
        .count();
    assert_eq!(notes, 0);
}
