//! The read endpoints: summaries, views, events, documents, scope, paging.

use std::collections::HashSet;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::*;

#[tokio::test]
async fn summary_columns_come_from_their_sources() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    let list = ok_json(trader.get(&node, LIST).await).await;
    assert!(list.get("cursor").is_none());
    let rows = list["entities"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let s = &rows[0];
    let aig = s["aigId"].as_str().unwrap();
    assert!(aig.starts_with("aig:") && aig.len() == 36, "{aig}");
    assert_eq!(s["id"], aig);
    let expected = json!({
        "identifier": "FWD-2026-000417",
        "globalId": "urn:uuid:7d1f8f3e-5b3c-4c1e-9a51-2f6a1f0b9c11",
        "transportId": "IMO9811000",
        "dateOfEntry": "2026-12-24T06:00:00Z",
        "portOfEntry": "Mombasa", "portOfEntryCode": "KEMBA", "portOfEntryCountryId": "KE",
        "portOfExit": "Port of Santos", "portOfExitCode": "BRSSZ", "portOfExitCountryId": "BR",
        "firstConsignor": {"name": "Cafe Exportadora Ltda", "countryId": "BR"},
        "lastConsignee": {"name": "Nairobi Roasters Ltd", "countryId": "KE"},
        "tradeParty": [
            {"role": "consignor", "name": "Cafe Exportadora Ltda", "countryId": "BR"},
            {"role": "consignee", "name": "Nairobi Roasters Ltd", "countryId": "KE"}
        ],
        "commodities": [{"goodsTypeCode": "090121", "description": "Roasted coffee, not decaffeinated", "originCountryId": "BR"}],
        "reference": "MSKU1234565",
        "transportModeCode": "1",
        "transportMeans": [
            {"identifier": "MSKU1234565", "transportMeansTypeCode": "1511", "label": "Full container ship/cellular vessel"},
            {"identifier": "MSKU7654321", "transportMeansTypeCode": "1511", "label": "Full container ship/cellular vessel"}
        ],
        "latestStatus": {"name": "scheduledDeparture", "date": "2026-12-01T08:00:00Z"},
        "payloadVersion": "D23B",
    });
    for (key, value) in expected.as_object().unwrap() {
        assert_eq!(&s[key], value, "column {key}");
    }
    for key in ["dateCreated", "dateUpdated"] {
        assert!(chrono::DateTime::parse_from_rfc3339(s[key].as_str().unwrap()).is_ok());
    }
    assert!(
        s.get("carrierParty").is_none() && s.get("scheduledDeparture").is_none(),
        "{s:#}"
    );

    // An event becomes the latest status.
    trader.publish_example(&node, "add-event").await;
    let list = ok_json(trader.get(&node, LIST).await).await;
    assert_eq!(
        list["entities"][0]["latestStatus"],
        json!({"name": "tlip:vessel-departed", "date": "2026-12-01T09:12:00Z"})
    );
}

#[tokio::test]
async fn absent_sources_leave_columns_out() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let mut no_movements = as_org(example("no-movements"), trader.org());
    // Top-level parties are kept but never fill the summary columns.
    no_movements["object"]["consignorParty"] =
        json!({"type": "TradeParty", "name": "Top Level Ltd"});
    assert_completed(&trader.publish(&node, &no_movements).await);
    let list = ok_json(trader.get(&node, LIST).await).await;
    let s = list["entities"][0].as_object().unwrap();
    let mut keys: Vec<&str> = s.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        vec![
            "aigId",
            "dateCreated",
            "dateUpdated",
            "globalId",
            "id",
            "identifier",
            "payloadVersion"
        ]
    );
}

#[tokio::test]
async fn malformed_locode_has_a_port_name_but_no_code_or_country() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let mut activity = as_org(example("create-consignment"), trader.org());
    activity["object"]["atArrivalTransportMovement"]["arrivalEvent"][0]
        ["occurrenceLogisticsLocation"]["identifier"]["@value"] = json!("KEMB");
    assert_completed(&trader.publish(&node, &activity).await);
    let s = ok_json(trader.get(&node, LIST).await).await["entities"][0].clone();
    assert_eq!(s["portOfEntry"], "Mombasa");
    assert!(
        s.get("portOfEntryCode").is_none() && s.get("portOfEntryCountryId").is_none(),
        "{s:#}"
    );
    assert_eq!(s["portOfExitCountryId"], "BR");
}

#[tokio::test]
async fn the_view_resolves_every_id_form_and_hides_others() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let other = Session::new(&node, "other@elsewhere.example").await;
    for name in ["create-consignment", "add-event", "add-document"] {
        trader.publish_example(&node, name).await;
    }
    let aig = ok_json(trader.get(&node, LIST).await).await["entities"][0]["aigId"]
        .as_str()
        .unwrap()
        .to_string();
    let ids = [
        aig.clone(),
        "urn:uuid:7d1f8f3e-5b3c-4c1e-9a51-2f6a1f0b9c11".into(),
        "FWD-2026-000417".into(),
    ];
    let mut views = Vec::new();
    for id in &ids {
        let path = format!("{LIST}/{}", colons_encoded(id));
        views.push(unsigned_links(
            ok_json(trader.get(&node, &path).await).await,
        ));
        // Another organisation gets the same 404 for every id form.
        let r = other.get(&node, &path).await;
        let body = assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
        assert!(!body.to_string().contains("FWD-2026"), "{body}");
    }
    assert!(views.iter().all(|v| v == &views[0]));
    let v = &views[0];
    assert_eq!(v["id"], aig.as_str());
    assert!(v["created"].is_string() && v["updated"].is_string());
    assert_eq!(
        v["includedConsignments"],
        example("create-consignment")["object"]["includedConsignment"]
    );
    assert_eq!(
        v["resolvedTransportMode"],
        json!({"raw": "unece:TransportModeCodeList#1", "code": "1", "label": "Maritime transport"})
    );
    assert_eq!(
        v["resolvedTransportEquipment"][1],
        json!({"identifier": "MSKU7654321", "transportMeansTypes": [
        {"raw": "unece:TransportMeansTypeCodeList#1511", "code": "1511", "label": "Full container ship/cellular vessel"}]})
    );
    assert_eq!(v["events"].as_array().unwrap().len(), 1);
    assert_eq!(v["events"][0]["typeCode"], "tlip:vessel-departed");
    assert_eq!(v["documents"].as_array().unwrap().len(), 1);
    let system: Vec<&str> = v["systemEvents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["typeCode"].as_str().unwrap())
        .collect();
    assert_eq!(system, vec!["CREATE", "ADD", "ADD"]);
    let create = &v["systemEvents"][0];
    assert_eq!(create["type"], "SystemEvent");
    for part in ["source", "object", "target"] {
        assert!(
            create[part]["id"].is_string()
                && create[part]["type"].is_string()
                && create[part]["detail"].is_object(),
            "{create:#}"
        );
    }
    assert!(
        create["@context"].is_string() && create["id"].is_string() && create["date"].is_string()
    );

    let r = trader.get(&node, &format!("{LIST}/nope")).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}

#[tokio::test]
async fn unknown_codes_keep_raw_and_code_without_label() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let mut activity = as_org(example("create-consignment"), trader.org());
    activity["object"]["atDepartureTransportMovement"]["usedTransportMeans"]
        ["transportMeansTypeCode"] = json!("unece:TransportMeansTypeCodeList#9999");
    assert_completed(&trader.publish(&node, &activity).await);
    let v = ok_json(trader.get(&node, &format!("{LIST}/FWD-2026-000417")).await).await;
    assert_eq!(
        v["resolvedTransportEquipment"][0]["transportMeansTypes"][0],
        json!({"raw": "unece:TransportMeansTypeCodeList#9999", "code": "9999"})
    );
    let s = ok_json(trader.get(&node, LIST).await).await["entities"][0].clone();
    assert_eq!(
        s["transportMeans"][0],
        json!({"identifier": "MSKU1234565", "transportMeansTypeCode": "9999"})
    );
}

#[tokio::test]
async fn events_and_documents_endpoints() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    for (i, at) in [
        "2026-12-03T10:00:00Z",
        "2026-12-01T10:00:00Z",
        "2026-12-02T10:00:00Z",
    ]
    .iter()
    .enumerate()
    {
        let mut event = as_org(example("add-event"), trader.org());
        event["object"]["occurrenceDateTime"] = json!(at);
        event["object"]["typeCode"] = json!(format!("tlip:step-{i}"));
        assert_completed(&trader.publish(&node, &event).await);
    }
    trader.publish_example(&node, "add-document").await;
    let events = ok_json(
        trader
            .get(&node, &format!("{LIST}/FWD-2026-000417/events"))
            .await,
    )
    .await;
    let codes: Vec<&str> = events["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["typeCode"].as_str().unwrap())
        .collect();
    assert_eq!(codes, vec!["tlip:step-1", "tlip:step-2", "tlip:step-0"]);
    // With events, the list row's status is the latest event; no internal column shows.
    let list = ok_json(trader.get(&node, LIST).await).await;
    let row = &list["entities"][0];
    assert_eq!(row["latestStatus"]["name"], "tlip:step-0");
    assert!(row.get("scheduledDeparture").is_none(), "{row}");
    let docs = ok_json(
        trader
            .get(&node, &format!("{LIST}/FWD-2026-000417/documents"))
            .await,
    )
    .await;
    let doc = &docs["entities"][0];
    assert_eq!(doc["documentId"], "INV-2026-0917");
    assert_eq!(doc["documentCode"], "380");
    assert_eq!(doc["documentType"], "Commercial invoice");
    let single = ok_json(
        trader
            .get(
                &node,
                &format!("{LIST}/FWD-2026-000417/documents/INV-2026-0917"),
            )
            .await,
    )
    .await;
    // The same attachment; only the download link's lifetime differs (list vs single read).
    let without_links = |d: &Value| {
        let mut d = d.clone();
        d.as_object_mut().unwrap().remove("href");
        d
    };
    assert_eq!(without_links(&single), without_links(doc));
    assert!(single["href"].as_str().unwrap().contains("signature="));
    let r = trader
        .get(&node, &format!("{LIST}/FWD-2026-000417/documents/NOPE"))
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    let r = trader.get(&node, &format!("{LIST}/NOPE/events")).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}

#[tokio::test]
async fn scope_is_validated_and_shared_is_empty_without_sharing() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    for path in [
        format!("{LIST}?scope=mine"),
        format!("{LIST}/FWD-2026-000417?scope=everything"),
        format!("{LIST}/FWD-2026-000417/events?scope="),
        format!("{LIST}?limit=0"),
        format!("{LIST}?limit=abc"),
        format!("{LIST}?limit=101"),
        format!("{LIST}?cursor=garbage"),
    ] {
        let r = trader.get(&node, &path).await;
        assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    }
    assert_eq!(
        ok_json(trader.get(&node, &format!("{LIST}?scope=own")).await).await["entities"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        ok_json(trader.get(&node, &format!("{LIST}?scope=shared")).await).await["entities"],
        json!([])
    );
    let r = trader
        .get(&node, &format!("{LIST}/FWD-2026-000417?scope=shared"))
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    let r = node.client.get(node.url(LIST)).send().await.unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // Undecodable path and query strings get the spec's error body too.
    for path in [
        format!("{LIST}/%FF%FE"),
        format!("{LIST}/x/events?scope=%FF"),
        format!("{LIST}?limit=%FF"),
    ] {
        let r = trader.get(&node, &path).await;
        assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    }
}

#[tokio::test]
async fn paging_returns_every_row_once_newest_first() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let other = Session::new(&node, "other@elsewhere.example").await;
    let mut published = HashSet::new();
    for i in 0..250 {
        let mut activity = as_org(example("no-movements"), trader.org());
        activity["object"]["identifier"] = json!(format!("PAGE-{i:03}"));
        activity["object"]["globalId"] = json!(format!("urn:uuid:00000000-0000-4000-8000-{i:012}"));
        assert_completed(&trader.publish(&node, &activity).await);
        published.insert(format!("PAGE-{i:03}"));
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut first_cursor = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("{LIST}?limit=7&cursor={c}"),
            None => format!("{LIST}?limit=7"),
        };
        let page = ok_json(trader.get(&node, &path).await).await;
        let rows = page["entities"].as_array().unwrap();
        assert!(rows.len() <= 7);
        seen.extend(rows.iter().map(|r| {
            (
                r["dateCreated"].as_str().unwrap().to_string(),
                r["identifier"].as_str().unwrap().to_string(),
            )
        }));
        if seen.len() == 14 {
            // A consignment published while paging does not shift the pages being read.
            let mut late = as_org(example("no-movements"), trader.org());
            late["object"]["identifier"] = json!("LATE");
            late["object"]["globalId"] = json!("urn:uuid:00000000-0000-4000-8000-999999999999");
            assert_completed(&trader.publish(&node, &late).await);
        }
        match page.get("cursor").and_then(Value::as_str) {
            Some(c) => {
                first_cursor.get_or_insert(c.to_string());
                cursor = Some(c.to_string());
            }
            None => break,
        }
    }
    let identifiers: Vec<&str> = seen.iter().map(|(_, id)| id.as_str()).collect();
    let unique: HashSet<&str> = identifiers.iter().copied().collect();
    assert_eq!(identifiers.len(), 250, "every row exactly once");
    assert_eq!(unique.len(), 250);
    assert!(unique.iter().all(|id| published.contains(*id)));
    let times: Vec<_> = seen
        .iter()
        .map(|(at, _)| chrono::DateTime::parse_from_rfc3339(at).unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first");
    // A cursor is bound to its organisation and scope, and cannot be edited.
    let c = first_cursor.unwrap();
    let r = other
        .get(&node, &format!("{LIST}?limit=7&cursor={c}"))
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    let r = trader
        .get(&node, &format!("{LIST}?limit=7&scope=own&cursor={c}"))
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    let mut tampered = c.clone();
    let flip = if tampered.ends_with('A') { "B" } else { "A" };
    tampered.replace_range(tampered.len() - 1.., flip);
    let r = trader
        .get(&node, &format!("{LIST}?limit=7&cursor={tampered}"))
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
}

#[tokio::test]
async fn documents_across_consignments_are_paged_and_found_by_id() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let other = Session::new(&node, "other@elsewhere.example").await;
    trader.publish_example(&node, "create-consignment").await;
    let mut second = as_org(example("no-movements"), trader.org());
    second["object"]["identifier"] = json!("SECOND");
    assert_completed(&trader.publish(&node, &second).await);
    for (consignment, n) in [
        ("urn:uuid:7d1f8f3e-5b3c-4c1e-9a51-2f6a1f0b9c11", 3),
        ("urn:uuid:0b7e5d6a-93b1-4f0e-8d1c-6a2c4e8f1a22", 2),
    ] {
        for i in 0..n {
            let mut doc = as_org(example("add-document"), trader.org());
            doc["object"]["identifier"] = json!(format!("DOC-{}-{i}", &consignment[9..13]));
            doc["target"]["globalId"] = json!(consignment);
            assert_completed(&trader.publish(&node, &doc).await);
        }
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/supply-chain/data-space/documents?limit=2&cursor={c}"),
            None => "/supply-chain/data-space/documents?limit=2".to_string(),
        };
        let page = ok_json(trader.get(&node, &path).await).await;
        seen.extend(
            page["entities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["documentId"].as_str().unwrap().to_string()),
        );
        match page.get("cursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 5);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 5);
    // Restricted to one consignment.
    let page = ok_json(
        trader
            .get(
                &node,
                "/supply-chain/data-space/documents?consignmentId=SECOND",
            )
            .await,
    )
    .await;
    assert_eq!(page["entities"].as_array().unwrap().len(), 2);
    // Found by documentId without the consignment, and with it.
    let found = ok_json(
        trader
            .get(&node, "/supply-chain/data-space/documents/DOC-0b7e-1")
            .await,
    )
    .await;
    assert_eq!(found["documentId"], "DOC-0b7e-1");
    assert_eq!(found["documentType"], "Commercial invoice");
    let r = trader
        .get(
            &node,
            "/supply-chain/data-space/documents/DOC-0b7e-1?consignmentId=SECOND",
        )
        .await;
    assert_eq!(ok_json(r).await["documentId"], "DOC-0b7e-1");
    let r = trader
        .get(
            &node,
            "/supply-chain/data-space/documents/DOC-0b7e-1?consignmentId=FWD-2026-000417",
        )
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    // Nothing of it for another organisation.
    assert_eq!(
        ok_json(other.get(&node, "/supply-chain/data-space/documents").await).await["entities"],
        json!([])
    );
    let r = other
        .get(&node, "/supply-chain/data-space/documents/DOC-0b7e-1")
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    let r = other
        .get(
            &node,
            "/supply-chain/data-space/documents?consignmentId=SECOND",
        )
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}

#[tokio::test]
async fn the_list_order_survives_a_restart() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    for i in 0..5 {
        let mut activity = as_org(example("no-movements"), trader.org());
        activity["object"]["identifier"] = json!(format!("R-{i}"));
        activity["object"]["globalId"] =
            json!(format!("urn:uuid:00000000-0000-4000-8000-00000000000{i}"));
        assert_completed(&trader.publish(&node, &activity).await);
    }
    let ids = |v: Value| -> Vec<String> {
        v["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["identifier"].as_str().unwrap().to_string())
            .collect()
    };
    let before = ids(ok_json(trader.get(&node, LIST).await).await);
    assert_eq!(before, vec!["R-4", "R-3", "R-2", "R-1", "R-0"]);
    let page = ok_json(trader.get(&node, &format!("{LIST}?limit=2")).await).await;
    let cursor = page["cursor"].as_str().unwrap().to_string();
    let node = node.restart().await;
    let trader = trader.logged_in_again(&node).await;
    let (key, token) = (&trader.account.api_key, &trader.token);
    let r = node.get_with_cookie(LIST, key, token).await;
    assert_eq!(ids(ok_json(r).await), before);
    // A cursor handed out before the restart still continues where it was.
    let r = node
        .get_with_cookie(&format!("{LIST}?limit=2&cursor={cursor}"), key, token)
        .await;
    assert_eq!(ids(ok_json(r).await), vec!["R-2", "R-1"]);
}

/// List rows are kept in memory between reads (consignment::rows): every change to a consignment
/// must show in the next list read, for the publisher and for whoever else lists it.
#[tokio::test]
async fn list_rows_follow_updates_and_additions() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    trader.publish_example(&node, "create-consignment").await;
    let first = ok_json(trader.get(&node, LIST).await).await["entities"][0].clone();
    // Read twice: the second read is served from memory.
    let again = ok_json(trader.get(&node, LIST).await).await["entities"][0].clone();
    assert_eq!(first, again);
    assert_eq!(first["portOfEntryCode"], "KEMBA");

    trader.publish_example(&node, "update-consignment").await;
    let updated = ok_json(trader.get(&node, LIST).await).await["entities"][0].clone();
    assert_eq!(updated["aigId"], first["aigId"]);
    assert_eq!(updated["portOfEntryCode"], "TZDAR");
    assert_eq!(updated["portOfEntryCountryId"], "TZ");
    assert_ne!(updated["dateUpdated"], first["dateUpdated"]);
    assert_eq!(updated["dateCreated"], first["dateCreated"]);

    trader.publish_example(&node, "add-event").await;
    let added = ok_json(trader.get(&node, LIST).await).await["entities"][0].clone();
    assert_eq!(added["latestStatus"]["name"], "tlip:vessel-departed");
    assert_ne!(added["dateUpdated"], updated["dateUpdated"]);
    // The list agrees with the view, which is never cached.
    let id = added["aigId"].as_str().unwrap();
    let view = ok_json(trader.get(&node, &format!("{LIST}/{id}")).await).await;
    assert_eq!(view["updated"], added["dateUpdated"]);
}
