//! Ids never resolve silently to another publisher: a globalId or identifier that names
//! consignments of several publishers shared with the caller is a 409 on reads and a failed
//! `Add`, never a choice; the aig id names one. (Security review: an organisation outside the
//! circle published the same ids as the real publisher, was shared with the same agency, and
//! received the agency's confidential report.)

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::*;

fn report(to: &str) -> Value {
    let mut add = example("add-document");
    add["object"]["identifier"] = json!("B-CONFIDENTIAL-INSPECTION-REPORT");
    add["object"]["uRIId"] =
        json!("data:text/plain;base64,QiBDT05GSURFTlRJQUwgSU5TUEVDVElPTiBSRVBPUlQ=");
    add["target"]["globalId"] = json!(to);
    add
}

#[tokio::test]
async fn a_squatted_global_id_never_routes_an_agencys_report_to_the_squatter() {
    let node = TestNode::start().await;
    let (_operator, publisher, agency) = kenya_circle(&node).await;
    let squatter = Session::new(&node, "squatter@elsewhere.example").await;
    publisher.publish_example(&node, "create-consignment").await;
    // Same globalId and identifier, also entering Kenya: shared with the agency too.
    squatter.publish_example(&node, "create-consignment").await;

    // The agency sees both consignments in its list: neither hides the other.
    let rows = ok_json(agency.get(&node, &format!("{LIST}?scope=shared")).await).await;
    assert_eq!(rows["entities"].as_array().unwrap().len(), 2, "{rows:#}");

    // Every read by a shared id is a 409 naming both, never one chosen.
    let mut aig_of_publisher = String::new();
    for id in [GLOBAL_ID, IDENTIFIER] {
        for suffix in ["", "/events", "/documents"] {
            let r = agency.get(&node, &format!("{LIST}/{id}{suffix}")).await;
            let body = assert_error(r, StatusCode::CONFLICT, "GeneralError").await;
            let candidates = body["properties"]["candidates"].as_array().unwrap();
            assert_eq!(candidates.len(), 2, "{body:#}");
            let publishers: Vec<&str> = candidates
                .iter()
                .map(|c| c["publisher"].as_str().unwrap())
                .collect();
            assert!(publishers.contains(&publisher.org()), "{body:#}");
            assert!(publishers.contains(&squatter.org()), "{body:#}");
            aig_of_publisher = candidates
                .iter()
                .find(|c| c["publisher"] == publisher.org())
                .unwrap()["aigId"]
                .as_str()
                .unwrap()
                .to_owned();
        }
    }
    // Each publisher still reads its own copy by the same ids (its own copy wins).
    for who in [&publisher, &squatter] {
        let r = who.get(&node, &format!("{LIST}/{GLOBAL_ID}")).await;
        assert_eq!(r.status(), StatusCode::OK);
    }

    // The agency's report by globalId: refused, nothing stored anywhere.
    let entry = agency
        .publish(&node, &as_org(report(GLOBAL_ID), agency.org()))
        .await;
    let error = task_error(&entry);
    assert_eq!(error["name"], "ConflictError", "{error:#}");
    assert_eq!(
        error["cause"]["properties"]["candidates"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    for who in [&publisher, &squatter] {
        let docs = ok_json(
            who.get(&node, &format!("{LIST}/{GLOBAL_ID}/documents"))
                .await,
        )
        .await;
        assert_eq!(docs["entities"], json!([]), "{docs:#}");
    }

    // By the aig id: the real publisher's consignment, read and reported on.
    let r = agency
        .get(&node, &format!("{LIST}/{aig_of_publisher}"))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    report_reaches_only(&node, &agency, &publisher, &squatter, &aig_of_publisher).await;
    let docs = ok_json(
        squatter
            .get(&node, &format!("{LIST}/{GLOBAL_ID}/documents"))
            .await,
    )
    .await;
    assert_eq!(
        docs["entities"],
        json!([]),
        "the squatter gets nothing: {docs:#}"
    );
}

/// The agency's report by `id` reaches the publisher's consignment, and nothing of it the
/// squatter.
async fn report_reaches_only(
    node: &TestNode,
    agency: &Session,
    publisher: &Session,
    squatter: &Session,
    id: &str,
) {
    let entry = agency
        .publish(node, &as_org(report(id), agency.org()))
        .await;
    assert_completed(&entry);
    let docs = ok_json(
        publisher
            .get(node, &format!("{LIST}/{GLOBAL_ID}/documents"))
            .await,
    )
    .await;
    assert_eq!(docs["entities"].as_array().unwrap().len(), 1, "{docs:#}");
    let all = ok_json(
        squatter
            .get(node, "/supply-chain/data-space/documents")
            .await,
    )
    .await;
    assert_eq!(all["entities"], json!([]), "{all:#}");
}

/// The aig id names only the consignment the node minted it for: a consignment cannot take it
/// (or any text of its form) as its globalId or identifier, and reads and reports by it reach
/// the consignment it names.
#[tokio::test]
async fn an_aig_id_cannot_be_taken_as_another_consignments_ids() {
    let node = TestNode::start().await;
    let (_operator, publisher, agency) = kenya_circle(&node).await;
    let squatter = Session::new(&node, "squatter@elsewhere.example").await;
    publisher.publish_example(&node, "create-consignment").await;
    let view = ok_json(publisher.get(&node, &format!("{LIST}/{GLOBAL_ID}")).await).await;
    let aig = view["id"].as_str().unwrap().to_owned();
    assert!(aig.starts_with("aig:"), "{view:#}");
    // The squatter's consignment, entering Kenya too, under the aig id as its ids: refused,
    // each id named, nothing stored.
    for key in ["globalId", "identifier"] {
        let mut squat = as_org(example("create-consignment"), squatter.org());
        squat["object"][key] = json!(aig);
        let entry = squatter.publish(&node, &squat).await;
        let error = task_error(&entry);
        assert_eq!(error["cause"]["name"], "ValidationError", "{error:#}");
        let failure = &error["cause"]["properties"]["failures"][0];
        assert_eq!(failure["path"], format!("object.{key}"), "{error:#}");
    }
    let rows = ok_json(squatter.get(&node, LIST).await).await;
    assert_eq!(rows["entities"], json!([]), "{rows:#}");
    // Nor may an Update give a consignment such an id (here its own aig id as globalId).
    let mut rename = as_org(example("create-consignment"), publisher.org());
    rename["type"] = json!("Update");
    rename["object"]["globalId"] = json!(aig);
    let entry = publisher.publish(&node, &rename).await;
    let error = task_error(&entry);
    assert_eq!(error["cause"]["name"], "ValidationError", "{error:#}");
    assert_eq!(
        error["cause"]["properties"]["failures"][0]["path"],
        "object.globalId"
    );
    let view = ok_json(publisher.get(&node, &format!("{LIST}/{aig}")).await).await;
    assert_eq!(
        view["updated"], view["created"],
        "nothing applied: {view:#}"
    );

    // Reads by the aig id, by the agency and the publisher: the publisher's consignment.
    for who in [&agency, &publisher] {
        for suffix in ["", "/events", "/documents"] {
            let r = who.get(&node, &format!("{LIST}/{aig}{suffix}")).await;
            assert_eq!(r.status(), StatusCode::OK, "{suffix}");
        }
        let view = ok_json(who.get(&node, &format!("{LIST}/{aig}")).await).await;
        assert_eq!(view["id"], aig.as_str());
    }
    let r = squatter.get(&node, &format!("{LIST}/{aig}")).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
    report_reaches_only(&node, &agency, &publisher, &squatter, &aig).await;
}

/// With one publisher's consignment shared, a globalId still resolves as before, and an
/// organisation's own copy wins over a shared one with the same id.
#[tokio::test]
async fn a_single_match_or_an_own_copy_resolves_without_conflict() {
    let node = TestNode::start().await;
    let (_operator, publisher, agency) = kenya_circle(&node).await;
    publisher.publish_example(&node, "create-consignment").await;
    let r = agency.get(&node, &format!("{LIST}/{GLOBAL_ID}")).await;
    assert_eq!(r.status(), StatusCode::OK);
    let entry = agency
        .publish(&node, &as_org(report(GLOBAL_ID), agency.org()))
        .await;
    assert_completed(&entry);
    // The agency publishes a consignment of its own with the same ids: its own wins.
    agency.publish_example(&node, "create-consignment").await;
    let view = ok_json(
        agency
            .get(&node, &format!("{LIST}/{GLOBAL_ID}?scope=own"))
            .await,
    )
    .await;
    let own_aig = view["id"].as_str().unwrap().to_owned();
    let view = ok_json(agency.get(&node, &format!("{LIST}/{GLOBAL_ID}")).await).await;
    assert_eq!(view["id"], own_aig.as_str());
}

const DOCUMENTS: &str = "/supply-chain/data-space/documents";

/// The bytes a DocumentAttachment's `href` serves.
async fn bytes_of(node: &TestNode, doc: &Value) -> Vec<u8> {
    let href = doc["href"].as_str().unwrap();
    let r = node.client.get(href).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{doc:#}");
    r.bytes().await.unwrap().to_vec()
}

/// A document id names documents of several organisations the agency reads: a 409 naming
/// each (consignment, publisher), never the newest one; `consignmentId` names one; each
/// organisation's own document, the agency's included, is its own answer. (A trader routed to
/// the same agency added a document under another trader's identifier, and the agency's read
/// of that identifier returned the newcomer's bytes.)
#[tokio::test]
async fn a_document_id_of_several_publishers_is_a_conflict_never_the_newest() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    let squatter = Session::new(&node, "squatter@elsewhere.example").await;
    trader.publish_example(&node, "create-consignment").await;
    let real = data_url("text/plain", b"REAL-INVOICE");
    let entry = trader
        .publish(&node, &add_document(trader.org(), &real, "INV-1"))
        .await;
    assert_completed(&entry);
    // The squatter's own consignment, entering Kenya too, and later a document on it under
    // the trader's document id.
    let own = consignment_at(squatter.org(), 7, "KEMBA", "2026-12-20T08:00:00Z");
    assert_completed(&squatter.publish(&node, &own).await);
    let fake = data_url("text/plain", b"FAKE-INVOICE");
    let mut planted = add_document(squatter.org(), &fake, "INV-1");
    planted["target"]["globalId"] = own["object"]["globalId"].clone();
    assert_completed(&squatter.publish(&node, &planted).await);

    let mut trader_aig = String::new();
    for scope in ["all", "shared"] {
        let r = agency
            .get(&node, &format!("{DOCUMENTS}/INV-1?scope={scope}"))
            .await;
        let body = assert_error(r, StatusCode::CONFLICT, "GeneralError").await;
        let candidates = body["properties"]["candidates"].as_array().unwrap();
        assert_eq!(candidates.len(), 2, "{body:#}");
        let of = |org: &str| candidates.iter().find(|c| c["publisher"] == org).cloned();
        let (Some(real), Some(squat)) = (of(trader.org()), of(squatter.org())) else {
            panic!("both publishers named: {body:#}");
        };
        assert_ne!(real["consignmentId"], squat["consignmentId"], "{body:#}");
        trader_aig = real["consignmentId"].as_str().unwrap().to_owned();
    }
    // Named by its consignment, each is that consignment's document.
    let path = format!("{DOCUMENTS}/INV-1?consignmentId={trader_aig}");
    let doc = ok_json(agency.get(&node, &path).await).await;
    assert_eq!(bytes_of(&node, &doc).await, b"REAL-INVOICE");
    // Each publisher reads its own by the id alone.
    for (who, expected) in [(&trader, b"REAL-INVOICE"), (&squatter, b"FAKE-INVOICE")] {
        let doc = ok_json(who.get(&node, &format!("{DOCUMENTS}/INV-1")).await).await;
        assert_eq!(bytes_of(&node, &doc).await, expected);
    }

    // The agency's own document under the id comes first, as its own consignment would;
    // among what others shared the id stays ambiguous.
    let copy = data_url("text/plain", b"AGENCY-COPY");
    let mut report = add_document(agency.org(), &copy, "INV-1");
    report["target"]["globalId"] = json!(trader_aig);
    assert_completed(&agency.publish(&node, &report).await);
    let doc = ok_json(agency.get(&node, &format!("{DOCUMENTS}/INV-1")).await).await;
    assert_eq!(bytes_of(&node, &doc).await, b"AGENCY-COPY");
    let r = agency
        .get(&node, &format!("{DOCUMENTS}/INV-1?scope=shared"))
        .await;
    assert_error(r, StatusCode::CONFLICT, "GeneralError").await;
}
