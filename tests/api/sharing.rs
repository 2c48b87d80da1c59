//! Data sharing: policies, routing to agencies and operators, notifications, scope `shared`,
//! co-contribution and the absence of leaks — several organisations on one node.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::*;

/// Trader, Kenyan and Tanzanian border agencies, the KEMBA terminal operator and an outsider,
/// with the agency and operator rules in place.
struct World {
    node: TestNode,
    operator: Operator,
    trader: Session,
    ke: Session,
    tz: Session,
    kemba: Session,
    outsider: Session,
}

impl World {
    async fn new() -> Self {
        let node = TestNode::start().await;
        let operator = Operator::new(&node).await;
        let trader = Session::new(&node, "trader@forwarder.example").await;
        let ke = Session::new(&node, "officer@kra.example").await;
        let tz = Session::new(&node, "officer@tra.example").await;
        let kemba = Session::new(&node, "ops@kemba-terminal.example").await;
        let outsider = Session::new(&node, "someone@elsewhere.example").await;
        operator
            .policy(
                &node,
                rule(&node, ke.org(), "portOfEntryCountry", "eq", json!("KE")),
            )
            .await;
        operator
            .policy(
                &node,
                rule(
                    &node,
                    tz.org(),
                    "portOfEntryCountry",
                    "isAnyOf",
                    json!(["TZ", "UG"]),
                ),
            )
            .await;
        operator
            .policy(
                &node,
                rule(&node, kemba.org(), "portOfEntry", "eq", json!("KEMBA")),
            )
            .await;
        Self {
            node,
            operator,
            trader,
            ke,
            tz,
            kemba,
            outsider,
        }
    }

    /// The same world after a graceful restart of its node, everyone logged in again.
    async fn restarted(mut self) -> Self {
        self.node = self.node.restart().await;
        let node = &self.node;
        self.trader = self.trader.logged_in_again(node).await;
        self.ke = self.ke.logged_in_again(node).await;
        self.tz = self.tz.logged_in_again(node).await;
        self.kemba = self.kemba.logged_in_again(node).await;
        self.outsider = self.outsider.logged_in_again(node).await;
        self
    }

    async fn json(&self, who: &Session, path: &str) -> Value {
        let r = who.get(&self.node, path).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        json_body(r).await
    }

    async fn rows(&self, who: &Session, scope: &str) -> Vec<Value> {
        self.json(who, &format!("{LIST}?scope={scope}")).await["entities"]
            .as_array()
            .unwrap()
            .clone()
    }

    async fn notifications(&self, who: &Session) -> Vec<Value> {
        self.json(who, NOTIFICATIONS).await["entities"]
            .as_array()
            .unwrap()
            .clone()
    }

    async fn status(&self, who: &Session, path: &str) -> StatusCode {
        who.get(&self.node, path).await.status()
    }
}

fn ids(aig: &str) -> [String; 3] {
    [GLOBAL_ID.into(), IDENTIFIER.into(), aig.into()]
}

#[tokio::test]
async fn agency_and_terminal_operator_receive_a_consignment_routed_to_their_port() {
    let w = World::new().await;
    w.trader
        .publish_example(&w.node, "create-consignment")
        .await;
    let own = w.rows(&w.trader, "own").await;
    let aig = own[0]["aigId"].as_str().unwrap().to_owned();

    for receiver in [&w.ke, &w.kemba] {
        let shared = w.rows(receiver, "shared").await;
        assert_eq!(shared.len(), 1);
        assert_eq!(shared[0]["aigId"], aig.as_str());
        assert_eq!(shared[0]["portOfEntryCode"], "KEMBA");
        assert_eq!(w.rows(receiver, "all").await.len(), 1);
        assert!(w.rows(receiver, "own").await.is_empty());
        for id in ids(&aig) {
            let path = format!("{LIST}/{}", percent_encoded(&id));
            for scope in ["shared", "all"] {
                let view = w.json(receiver, &format!("{path}?scope={scope}")).await;
                assert_eq!(view["id"], aig.as_str());
                assert_eq!(view["includedConsignments"].as_array().unwrap().len(), 1);
                assert_eq!(view["resolvedTransportMode"]["code"], "1");
            }
            assert_eq!(
                w.status(receiver, &format!("{path}?scope=own")).await,
                StatusCode::NOT_FOUND
            );
            assert_eq!(
                w.status(receiver, &format!("{path}/events")).await,
                StatusCode::OK
            );
        }
        let notes = w.notifications(receiver).await;
        assert_eq!(notes.len(), 1, "{notes:?}");
        let n = &notes[0];
        assert_eq!(n["type"], "ConsignmentShared");
        assert_eq!(
            n["consignment"],
            json!({"globalId": GLOBAL_ID, "identifier": IDENTIFIER, "aigId": aig})
        );
        assert_eq!(n["provider"], w.trader.org());
        assert!(n["policy"].as_str().unwrap().starts_with("urn:uuid:"));
        assert!(n["datasetId"].as_str().is_some_and(|d| !d.is_empty()));
        assert!(n["id"].as_str().is_some_and(|d| !d.is_empty()));
        assert!(chrono::DateTime::parse_from_rfc3339(n["date"].as_str().unwrap()).is_ok());
    }

    // Neither the Tanzanian agency nor an outsider learns anything, whatever the id form.
    for stranger in [&w.tz, &w.outsider] {
        assert!(w.rows(stranger, "all").await.is_empty());
        assert!(w.notifications(stranger).await.is_empty());
        for id in ids(&aig) {
            for suffix in ["", "/events", "/documents", "/documents/INV-1"] {
                let r = stranger
                    .get(&w.node, &format!("{LIST}/{}{suffix}", percent_encoded(&id)))
                    .await;
                let body = assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
                let message = body["message"].as_str().unwrap();
                assert!(
                    !message.contains(IDENTIFIER) && !message.contains(&aig),
                    "{message}"
                );
            }
        }
        let docs = w.json(stranger, "/supply-chain/data-space/documents").await;
        assert!(docs["entities"].as_array().unwrap().is_empty());
    }
    // The trader is not notified about its own consignment.
    assert!(w.notifications(&w.trader).await.is_empty());
}

#[tokio::test]
async fn a_malformed_locode_or_no_movements_reaches_no_one() {
    let w = World::new().await;
    let mut bad = as_org(example("create-consignment"), w.trader.org());
    bad["object"]["atArrivalTransportMovement"]["arrivalEvent"][0]["occurrenceLogisticsLocation"]
        ["identifier"]["@value"] = json!("KEMB");
    assert_completed(&w.trader.publish(&w.node, &bad).await);
    w.trader.publish_example(&w.node, "no-movements").await;
    assert_eq!(w.rows(&w.trader, "own").await.len(), 2);
    for receiver in [&w.ke, &w.tz, &w.kemba] {
        assert!(w.rows(receiver, "all").await.is_empty());
        assert!(w.notifications(receiver).await.is_empty());
    }
}

#[tokio::test]
async fn an_agency_contribution_is_seen_by_the_whole_circle_only() {
    let w = World::new().await;
    w.trader
        .publish_example(&w.node, "create-consignment")
        .await;
    let inspection = json!({
        "@context": "https://www.w3.org/ns/activitystreams",
        "type": "Add",
        "actor": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld", "type": "TradeParty",
                  "registeredId": {"@type": "https://ref.gs1.org/voc/OrganizationID_Type-DID", "@value": w.ke.org()}},
        "object": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld", "type": "SupplyChainEvent",
                   "typeCode": "kra:inspection-completed", "occurrenceDateTime": "2026-12-24T10:00:00Z"},
        "target": {"@context": "https://vocabulary.uncefact.org/unece-context-D23B.jsonld", "type": "Consignment",
                   "globalId": GLOBAL_ID}
    });
    assert_completed(&w.ke.publish(&w.node, &inspection).await);
    let codes = |events: &Value| -> Vec<String> {
        events["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["typeCode"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let events = |scope: &str| format!("{LIST}/{IDENTIFIER}/events?scope={scope}");
    for scope in ["all", "shared"] {
        let seen = codes(&w.json(&w.trader, &events(scope)).await);
        assert!(
            seen.contains(&"kra:inspection-completed".to_owned()),
            "{scope}: {seen:?}"
        );
        let view = w
            .json(&w.kemba, &format!("{LIST}/{IDENTIFIER}?scope={scope}"))
            .await;
        assert!(
            view["events"]
                .to_string()
                .contains("kra:inspection-completed"),
            "{scope}"
        );
    }
    assert!(!codes(&w.json(&w.trader, &events("own")).await)
        .contains(&"kra:inspection-completed".to_owned()));
    let trader_view = w.json(&w.trader, &format!("{LIST}/{IDENTIFIER}")).await;
    let system: Vec<&str> = trader_view["systemEvents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["typeCode"].as_str().unwrap())
        .collect();
    assert_eq!(
        system,
        vec!["CREATE", "ADD"],
        "the agency's system event joins the trader's"
    );
    // The agency's own scope holds exactly its contribution.
    assert_eq!(
        codes(&w.json(&w.ke, &events("own")).await),
        vec!["kra:inspection-completed"]
    );

    // A document the agency adds reaches the trader's document reads.
    let mut doc = as_org(example("add-document"), w.ke.org());
    doc["target"]["globalId"] = json!(GLOBAL_ID);
    assert_completed(&w.ke.publish(&w.node, &doc).await);
    let doc_id = doc["object"]["identifier"].as_str().unwrap().to_owned();
    let listed = w
        .json(&w.trader, &format!("{LIST}/{IDENTIFIER}/documents"))
        .await;
    assert_eq!(listed["entities"][0]["documentId"], doc_id.as_str());
    for scope in ["all", "shared"] {
        let all = w
            .json(
                &w.trader,
                &format!("/supply-chain/data-space/documents?scope={scope}"),
            )
            .await;
        assert_eq!(all["entities"].as_array().unwrap().len(), 1, "{scope}");
        let one = w
            .json(
                &w.trader,
                &format!("/supply-chain/data-space/documents/{doc_id}?scope={scope}"),
            )
            .await;
        assert_eq!(one["documentId"], doc_id.as_str());
        // The partner's document downloads through its signed link, and is the bytes it sent.
        let bytes = w
            .node
            .client
            .get(one["href"].as_str().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(bytes.status(), StatusCode::OK);
        assert!(bytes.bytes().await.unwrap().starts_with(b"%PDF-1.4"));
    }
    let own_docs = w
        .json(&w.trader, "/supply-chain/data-space/documents?scope=own")
        .await;
    assert!(own_docs["entities"].as_array().unwrap().is_empty());
    assert_eq!(
        w.status(
            &w.trader,
            &format!("/supply-chain/data-space/documents/{doc_id}?scope=own")
        )
        .await,
        StatusCode::NOT_FOUND
    );

    // A document the trader adds reaches the agency the consignment is shared with.
    let mut own_doc = as_org(example("add-document"), w.trader.org());
    own_doc["object"]["identifier"] = json!("TRADER-DOC");
    own_doc["object"]["uRIId"] = json!("data:text/plain;base64,dHJhZGVyJ3MgZG9j");
    assert_completed(&w.trader.publish(&w.node, &own_doc).await);
    let seen = w
        .json(
            &w.ke,
            &format!("{LIST}/{IDENTIFIER}/documents/TRADER-DOC?scope=shared"),
        )
        .await;
    assert_eq!(seen["metadata"]["encodingFormat"], "text/plain");
    let bytes = w
        .node
        .client
        .get(seen["href"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(&bytes.bytes().await.unwrap()[..], b"trader's doc");
    assert_eq!(
        w.status(
            &w.ke,
            &format!("{LIST}/{IDENTIFIER}/documents/TRADER-DOC?scope=own")
        )
        .await,
        StatusCode::NOT_FOUND
    );

    // Outside the circle: nothing, and no way in.
    assert_eq!(
        w.status(&w.outsider, &events("all")).await,
        StatusCode::NOT_FOUND
    );
    let docs = w
        .json(&w.outsider, "/supply-chain/data-space/documents")
        .await;
    assert!(docs["entities"].as_array().unwrap().is_empty());
    assert_eq!(
        w.status(
            &w.outsider,
            &format!("/supply-chain/data-space/documents/{doc_id}")
        )
        .await,
        StatusCode::NOT_FOUND
    );
    let intrusion = as_org(inspection.clone(), w.outsider.org());
    let error = task_error(&w.outsider.publish(&w.node, &intrusion).await).clone();
    assert_eq!(error["name"], "NotFoundError", "{error}");
    // A member may add, but never update someone else's consignment.
    let update = as_org(example("update-consignment"), w.ke.org());
    let error = task_error(&w.ke.publish(&w.node, &update).await).clone();
    assert_eq!(error["name"], "NotFoundError", "{error}");
    let view = w.json(&w.trader, &format!("{LIST}/{IDENTIFIER}")).await;
    assert!(!view.to_string().contains("Dar es Salaam"));
}

#[tokio::test]
async fn an_update_moving_the_arrival_port_routes_to_the_new_country_and_keeps_old_grants() {
    let w = World::new().await;
    w.trader
        .publish_example(&w.node, "create-consignment")
        .await;
    assert!(w.notifications(&w.tz).await.is_empty());
    // Same ports again: nothing new is routed.
    let mut same = as_org(example("create-consignment"), w.trader.org());
    same["type"] = json!("Update");
    same["object"]["summaryDescription"] = json!("Roasted coffee beans, re-weighed");
    assert_completed(&w.trader.publish(&w.node, &same).await);
    assert_eq!(w.notifications(&w.ke).await.len(), 1);

    w.trader
        .publish_example(&w.node, "update-consignment")
        .await;
    let tz = w.notifications(&w.tz).await;
    assert_eq!(tz.len(), 1);
    assert_eq!(tz[0]["consignment"]["identifier"], IDENTIFIER);
    assert_eq!(w.rows(&w.tz, "shared").await[0]["portOfEntryCode"], "TZDAR");
    // The Kenyan agency keeps its access (documented), and is not notified again.
    assert_eq!(w.rows(&w.ke, "shared").await[0]["portOfEntryCode"], "TZDAR");
    assert_eq!(w.notifications(&w.ke).await.len(), 1);
    assert_eq!(w.notifications(&w.kemba).await.len(), 1);
}

#[tokio::test]
async fn a_list_under_all_keeps_the_callers_own_copy_of_an_identifier() {
    let w = World::new().await;
    w.trader
        .publish_example(&w.node, "create-consignment")
        .await;
    // The agency records its own consignment under the same identifier (another globalId).
    let mut own = as_org(example("create-consignment"), w.ke.org());
    own["object"]["globalId"] = json!("urn:uuid:11111111-2222-4333-8444-555555555555");
    own["object"]["summaryDescription"] = json!("agency copy");
    assert_completed(&w.ke.publish(&w.node, &own).await);
    let own_rows = w.rows(&w.ke, "own").await;
    assert_eq!(own_rows.len(), 1);
    let all = w.rows(&w.ke, "all").await;
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["aigId"], own_rows[0]["aigId"]);
    let shared = w.rows(&w.ke, "shared").await;
    assert_eq!(shared.len(), 1);
    assert_ne!(shared[0]["aigId"], own_rows[0]["aigId"]);
    // By identifier, the view resolves to the agency's own copy; `shared` to the trader's.
    let view = w.json(&w.ke, &format!("{LIST}/{IDENTIFIER}")).await;
    assert_eq!(view["id"], own_rows[0]["aigId"]);
    let view = w
        .json(&w.ke, &format!("{LIST}/{IDENTIFIER}?scope=shared"))
        .await;
    assert_eq!(view["id"], shared[0]["aigId"]);
}

/// A page of many shared rows, some of them given way to the caller's own copies: the rows are
/// read on several threads (more than eight need store reads), and each must still land in
/// its place, newest first, once.
#[tokio::test]
async fn a_long_page_under_all_gives_each_shared_row_its_place_or_the_callers_copy() {
    let w = World::new().await;
    let mut own_copies = std::collections::BTreeMap::new();
    for i in 0..14 {
        let mut a = as_org(example("create-consignment"), w.trader.org());
        a["object"]["identifier"] = json!(format!("T-{i:02}"));
        a["object"]["globalId"] = json!(format!("urn:uuid:00000000-0000-4000-8000-1{i:011}"));
        assert_completed(&w.trader.publish(&w.node, &a).await);
        if i % 5 == 2 {
            let mut copy = as_org(example("create-consignment"), w.ke.org());
            copy["object"]["identifier"] = json!(format!("T-{i:02}"));
            copy["object"]["globalId"] =
                json!(format!("urn:uuid:00000000-0000-4000-8000-2{i:011}"));
            assert_completed(&w.ke.publish(&w.node, &copy).await);
            own_copies.insert(format!("T-{i:02}"), ());
        }
    }
    let own: Vec<Value> = w.rows(&w.ke, "own").await;
    let shared: Vec<Value> = w.rows(&w.ke, "shared").await;
    assert_eq!((own.len(), shared.len()), (3, 14));
    // What `all` must be: the own rows, and the shared rows of the other identifiers, merged
    // newest first (the same order as the lists they come from).
    let mut expected: Vec<&Value> = own
        .iter()
        .chain(
            shared
                .iter()
                .filter(|r| !own_copies.contains_key(r["identifier"].as_str().unwrap())),
        )
        .collect();
    let created = |r: &Value| {
        chrono::DateTime::parse_from_rfc3339(r["dateCreated"].as_str().unwrap()).unwrap()
    };
    expected.sort_by_key(|r| std::cmp::Reverse(created(r)));
    let ids = |rows: &[&Value]| -> Vec<String> {
        rows.iter()
            .map(|r| r["aigId"].as_str().unwrap().to_owned())
            .collect()
    };
    // Restarted, so that no row is cached and the page reads them all.
    let w = w.restarted().await;
    let all: Vec<Value> = w.rows(&w.ke, "all").await;
    assert_eq!(ids(&all.iter().collect::<Vec<_>>()), ids(&expected));
    for row in &all {
        let mine = own.iter().any(|o| o["aigId"] == row["aigId"]);
        assert_eq!(
            mine,
            own_copies.contains_key(row["identifier"].as_str().unwrap()),
            "{row}"
        );
    }
}

#[tokio::test]
async fn shared_and_own_lists_page_together_without_repeats() {
    let w = World::new().await;
    let mut expected = Vec::new();
    for i in 0..5 {
        for (who, prefix, n) in [(&w.trader, "T", 1), (&w.ke, "K", 2)] {
            let mut a = as_org(example("create-consignment"), who.org());
            a["object"]["identifier"] = json!(format!("{prefix}-{i}"));
            a["object"]["globalId"] = json!(format!("urn:uuid:00000000-0000-4000-8000-{n}{i:011}"));
            assert_completed(&who.publish(&w.node, &a).await);
            expected.push(format!("{prefix}-{i}"));
        }
    }
    let mut seen = Vec::new();
    let mut created = Vec::new();
    let mut path = format!("{LIST}?limit=3");
    loop {
        let page = w.json(&w.ke, &path).await;
        for row in page["entities"].as_array().unwrap() {
            seen.push(row["identifier"].as_str().unwrap().to_owned());
            created.push(
                chrono::DateTime::parse_from_rfc3339(row["dateCreated"].as_str().unwrap()).unwrap(),
            );
        }
        match page["cursor"].as_str() {
            Some(c) => path = format!("{LIST}?limit=3&cursor={c}"),
            None => break,
        }
    }
    assert!(
        created.windows(2).all(|p| p[0] >= p[1]),
        "newest first: {created:?}"
    );
    seen.sort();
    expected.sort();
    assert_eq!(seen, expected, "own and shared rows, each once");
}

#[tokio::test]
async fn policies_are_checked_and_every_problem_is_named() {
    let w = World::new().await;
    let bad = json!({
        "@context": "https://example.org/remote-context.jsonld",
        "@type": "Offer",
        "permission": [{
            "action": "modify", "assignee": "did:web:nobody.example", "target": "https://elsewhere.example/data",
            "constraint": [{"leftOperand": "spatial", "operator": "neq", "rightOperand": "KE"},
                           {"leftOperand": "portOfEntry", "operator": "eq", "rightOperand": "KEMB"}]
        }],
        "prohibition": []
    });
    let r = w
        .operator
        .send(&w.node, Method::POST, POLICIES, Some(&bad))
        .await;
    let body = assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    let fields: Vec<&str> = body["properties"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["field"].as_str().unwrap())
        .collect();
    for field in [
        "@context",
        "@type",
        "prohibition",
        "permission[0].action",
        "permission[0].assignee",
        "permission[0].target",
        "permission[0].constraint[0].leftOperand",
        "permission[0].constraint[0].operator",
        "permission[0].constraint[1].rightOperand",
    ] {
        assert!(fields.contains(&field), "{field} not in {fields:?}");
    }
    for body in [
        json!([1, 2]),
        json!({"@context": "http://www.w3.org/ns/odrl.jsonld", "@type": "Set"}),
    ] {
        let r = w
            .operator
            .send(&w.node, Method::POST, POLICIES, Some(&body))
            .await;
        assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    }
    let r = w
        .node
        .client
        .post(w.node.url(POLICIES))
        .header("x-api-key", OPERATOR_KEY)
        .bearer_auth(&w.operator.token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    // A uid is kept, and a second policy with it is refused.
    let mut named = rule(&w.node, w.ke.org(), "portOfExitCountry", "eq", json!("BR"));
    named["uid"] = json!("https://policies.example/ke-exports-from-brazil");
    let stored = w.operator.policy(&w.node, named.clone()).await;
    assert_eq!(
        stored["uid"],
        "https://policies.example/ke-exports-from-brazil"
    );
    let r = w
        .operator
        .send(&w.node, Method::POST, POLICIES, Some(&named))
        .await;
    assert_error(r, StatusCode::CONFLICT, "GeneralError").await;
    // Nothing invalid was stored: the operator lists the three rules of the world plus this one.
    let list = json_body(w.operator.send(&w.node, Method::GET, POLICIES, None).await).await;
    assert_eq!(list["entities"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn policy_management_needs_the_operator_and_assignees_see_only_their_rules() {
    let w = World::new().await;
    let body = rule(&w.node, w.ke.org(), "portOfExit", "eq", json!("BRSSZ"));
    // No session: 401, even with the operator key.
    let r = w.node.post_json(POLICIES, Some(OPERATOR_KEY), &body).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
    // An organisation's own key and session: 403 to create or delete.
    let r = w
        .node
        .client
        .post(w.node.url(POLICIES))
        .header("x-api-key", &w.ke.account.api_key)
        .bearer_auth(&w.ke.token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;

    // The agency sees its rule, and only its own permissions; others see nothing of it.
    let listed = w.json(&w.ke, POLICIES).await;
    let mine = listed["entities"].as_array().unwrap();
    assert_eq!(mine.len(), 1);
    assert!(!listed.to_string().contains(w.tz.org()));
    let uid = mine[0]["uid"].as_str().unwrap().to_owned();
    let path = format!("{POLICIES}/{}", percent_encoded(&uid));
    assert_eq!(w.json(&w.ke, &path).await["uid"], uid.as_str());
    assert_error(
        w.tz.get(&w.node, &path).await,
        StatusCode::NOT_FOUND,
        "GeneralError",
    )
    .await;
    assert!(w.json(&w.outsider, POLICIES).await["entities"]
        .as_array()
        .unwrap()
        .is_empty());
    let r = w
        .node
        .client
        .delete(w.node.url(&path))
        .header("x-api-key", &w.ke.account.api_key)
        .bearer_auth(&w.ke.token)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::FORBIDDEN, "GeneralError").await;

    // Deleting the rule revokes the access it alone gave; the notification stays as history.
    w.trader
        .publish_example(&w.node, "create-consignment")
        .await;
    assert_eq!(w.rows(&w.ke, "shared").await.len(), 1);
    let r = w.operator.send(&w.node, Method::DELETE, &path, None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_error(
        w.ke.get(&w.node, &path).await,
        StatusCode::NOT_FOUND,
        "GeneralError",
    )
    .await;
    assert!(w.rows(&w.ke, "all").await.is_empty());
    assert_eq!(
        w.status(&w.ke, &format!("{LIST}/{IDENTIFIER}")).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(w.notifications(&w.ke).await.len(), 1);
    assert_eq!(
        w.rows(&w.kemba, "shared").await.len(),
        1,
        "other grants stay"
    );
    let r = w.operator.send(&w.node, Method::DELETE, &path, None).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}

#[tokio::test]
async fn policies_grants_and_notifications_survive_a_restart() {
    let w = World::new().await;
    w.trader
        .publish_example(&w.node, "create-consignment")
        .await;
    let World {
        node,
        trader,
        ke,
        tz,
        ..
    } = w;
    let node = node.restart().await;
    let ke_token = node
        .login(&ke.account.api_key, &ke.account.email, &ke.account.password)
        .await;
    let shared = json_body(
        node.get_with_cookie(
            &format!("{LIST}?scope=shared"),
            &ke.account.api_key,
            &ke_token,
        )
        .await,
    )
    .await;
    assert_eq!(shared["entities"].as_array().unwrap().len(), 1);
    let notes = json_body(
        node.get_with_cookie(NOTIFICATIONS, &ke.account.api_key, &ke_token)
            .await,
    )
    .await;
    assert_eq!(notes["entities"].as_array().unwrap().len(), 1);
    // Routing still works from the reloaded index.
    let trader = trader.logged_in_again(&node).await;
    trader.publish_example(&node, "update-consignment").await;
    let tz_token = node
        .login(&tz.account.api_key, &tz.account.email, &tz.account.password)
        .await;
    let tz_notes = json_body(
        node.get_with_cookie(NOTIFICATIONS, &tz.account.api_key, &tz_token)
            .await,
    )
    .await;
    // Each organisation's numbers are its own: the agency's first is 1 (how an organisation's
    // numbers go on after a restart: `notification_numbers_are_each_organisations_own`).
    assert_eq!(notes["entities"][0]["id"], "1");
    assert_eq!(tz_notes["entities"][0]["id"], "1", "{tz_notes:#}");
}

#[tokio::test]
async fn policies_stored_and_deleted_before_a_restart_route_as_they_were_left() {
    let w = World::new().await;
    // Two more rules for the outsider; one deleted again before the clean shutdown, whose
    // models snapshot carries the policies to the next start.
    let mut stored = Vec::new();
    for (operand, value) in [("portOfEntry", "KEMBA"), ("portOfEntryCountry", "KE")] {
        let body = rule(&w.node, w.outsider.org(), operand, "eq", json!(value));
        stored.push(w.operator.policy(&w.node, body).await);
    }
    let (kept, dropped) = (&stored[0], &stored[1]);
    w.operator
        .delete(&w.node, dropped["uid"].as_str().unwrap())
        .await;
    let World {
        node,
        operator,
        trader,
        outsider,
        ..
    } = w;
    let node = node.restart().await;
    let listed = json_body(operator.send(&node, Method::GET, POLICIES, None).await).await;
    let uids: Vec<&str> = listed["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["uid"].as_str())
        .collect();
    assert!(uids.contains(&kept["uid"].as_str().unwrap()), "{listed}");
    assert!(
        !uids.contains(&dropped["uid"].as_str().unwrap()),
        "{listed}"
    );
    let trader = trader.logged_in_again(&node).await;
    trader.publish_example(&node, "create-consignment").await;
    let outsider = outsider.logged_in_again(&node).await;
    let (key, token) = (&outsider.account.api_key, &outsider.token);
    let shared = json_body(
        node.get_with_cookie(&format!("{LIST}?scope=shared"), key, token)
            .await,
    )
    .await;
    // Routed once, by the kept rule (the dropped one would have matched too).
    assert_eq!(shared["entities"].as_array().unwrap().len(), 1, "{shared}");
    let notes = json_body(node.get_with_cookie(NOTIFICATIONS, key, token).await).await;
    let notes = notes["entities"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    let text = notes[0].to_string();
    assert!(text.contains(kept["uid"].as_str().unwrap()), "{text}");
    assert!(!text.contains(dropped["uid"].as_str().unwrap()), "{text}");
}

/// Reads SSE events (`id`, parsed `data`) from a streaming response until `n` arrived.
async fn sse_events(r: &mut reqwest::Response, n: usize, within: Duration) -> Vec<(String, Value)> {
    let mut buffer = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    while events.len() < n {
        let chunk = tokio::time::timeout_at(deadline, r.chunk())
            .await
            .unwrap_or_else(|_| panic!("only {} of {n} events within {within:?}", events.len()))
            .unwrap()
            .expect("stream open");
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut id = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data = Some(serde_json::from_str::<Value>(v.trim()).unwrap());
                }
            }
            if let (Some(id), Some(data)) = (id, data) {
                events.push((id, data));
            }
        }
    }
    events
}

async fn open_stream(
    node: &TestNode,
    who: &Session,
    last_event_id: Option<&str>,
) -> reqwest::Response {
    let mut req = node
        .client
        .get(node.url(&format!("{NOTIFICATIONS}/stream")))
        .header("x-api-key", &who.account.api_key)
        .bearer_auth(&who.token);
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id);
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    r
}

#[tokio::test]
async fn the_stream_delivers_notifications_live_and_replays_after_a_reconnect() {
    let w = World::new().await;
    let mut live = open_stream(&w.node, &w.ke, None).await;
    w.trader
        .publish_example(&w.node, "create-consignment")
        .await;
    let got = sse_events(&mut live, 1, Duration::from_secs(30)).await;
    assert_eq!(got[0].1["type"], "ConsignmentShared");
    assert_eq!(got[0].1["consignment"]["identifier"], IDENTIFIER);
    assert_eq!(got[0].0, got[0].1["id"].as_str().unwrap());
    drop(live);

    // Missed while disconnected: a second consignment; the reconnect replays it only.
    let mut second = as_org(example("create-consignment"), w.trader.org());
    second["object"]["identifier"] = json!("FWD-2026-000500");
    second["object"]["globalId"] = json!("urn:uuid:9e9e9e9e-0000-4000-8000-000000000500");
    assert_completed(&w.trader.publish(&w.node, &second).await);
    let mut again = open_stream(&w.node, &w.ke, Some(&got[0].0)).await;
    let replayed = sse_events(&mut again, 1, Duration::from_secs(5)).await;
    assert_eq!(
        replayed[0].1["consignment"]["identifier"],
        "FWD-2026-000500"
    );
    // An outsider's stream opens but never carries the agency's notifications.
    let mut other = open_stream(&w.node, &w.outsider, Some("0")).await;
    let nothing = tokio::time::timeout(Duration::from_millis(300), other.chunk()).await;
    assert!(
        nothing.is_err()
            || nothing
                .unwrap()
                .unwrap()
                .is_none_or(|c| !String::from_utf8_lossy(&c).contains("data:"))
    );

    let r = w
        .node
        .client
        .get(w.node.url(&format!("{NOTIFICATIONS}/stream")))
        .header("x-api-key", &w.ke.account.api_key)
        .bearer_auth(&w.ke.token)
        .header("last-event-id", "yesterday")
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    let r = w
        .node
        .client
        .get(w.node.url(&format!("{NOTIFICATIONS}/stream")))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "UnauthorizedError").await;
}

#[tokio::test]
async fn activities_cannot_use_the_nodes_own_namespace() {
    let w = World::new().await;
    w.trader
        .publish_example(&w.node, "create-consignment")
        .await;
    let trader_aig = w.rows(&w.trader, "own").await[0]["aigId"]
        .as_str()
        .unwrap()
        .to_owned();
    // An outsider plants, on its own consignment, a document claiming to be the trader's
    // contribution to the trader's consignment.
    let mut own = as_org(example("no-movements"), w.outsider.org());
    own["object"]["globalId"] = json!("urn:uuid:0d0d0d0d-0000-4000-8000-000000000001");
    assert_completed(&w.outsider.publish(&w.node, &own).await);
    let mut forged = as_org(example("add-document"), w.outsider.org());
    forged["target"]["globalId"] = json!("urn:uuid:0d0d0d0d-0000-4000-8000-000000000001");
    forged["object"]["https://w3id.org/dataspace-node/ns#contributor"] =
        json!({"@id": w.trader.org()});
    forged["object"]["https://w3id.org/dataspace-node/ns#consignment"] =
        json!({"@id": format!("urn:dataspace-node:consignment:{}", &trader_aig[4..])});
    let entry = w.outsider.publish(&w.node, &forged).await;
    let error = task_error(&entry);
    assert!(error.to_string().contains("own namespace"), "{error}");
    let docs = w
        .json(&w.trader, "/supply-chain/data-space/documents")
        .await;
    assert!(docs["entities"].as_array().unwrap().is_empty(), "{docs}");
    let view = w.json(&w.trader, &format!("{LIST}/{IDENTIFIER}")).await;
    assert!(view["documents"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn notifications_page_newest_first() {
    let w = World::new().await;
    for i in 0..3 {
        let mut a = as_org(example("create-consignment"), w.trader.org());
        a["object"]["identifier"] = json!(format!("P-{i}"));
        a["object"]["globalId"] = json!(format!("urn:uuid:00000000-0000-4000-8000-00000000000{i}"));
        assert_completed(&w.trader.publish(&w.node, &a).await);
    }
    let first = w.json(&w.ke, &format!("{NOTIFICATIONS}?limit=2")).await;
    let rows = first["entities"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["consignment"]["identifier"], "P-2");
    let cursor = first["cursor"].as_str().unwrap();
    let rest = w
        .json(&w.ke, &format!("{NOTIFICATIONS}?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(rest["entities"].as_array().unwrap().len(), 1);
    assert_eq!(rest["entities"][0]["consignment"]["identifier"], "P-0");
    assert!(rest.get("cursor").is_none());
    // A cursor is bound to its organisation.
    let r =
        w.tz.get(&w.node, &format!("{NOTIFICATIONS}?cursor={cursor}"))
            .await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
}

#[tokio::test]
async fn a_contributor_whose_grant_was_revoked_does_not_see_when_the_publisher_changes() {
    let node = TestNode::start().await;
    let (operator, trader, agency, policy) = kenya_circle_with_policy(&node).await;
    trader.publish_example(&node, "create-consignment").await;
    agency.publish_example(&node, "add-event").await;
    let own = view(&node, &agency, "own").await;
    let added = instant(&own["systemEvents"][0]["date"]);
    assert_eq!(instant(&own["updated"]), added, "{own:#}");
    operator
        .delete(&node, policy["uid"].as_str().unwrap())
        .await;
    trader.publish_example(&node, "update-consignment").await;
    let publisher = view(&node, &trader, "all").await;
    assert_ne!(instant(&publisher["updated"]), added);
    // The agency still reads its own contribution, dated by its own last revision.
    let own = view(&node, &agency, "own").await;
    assert_eq!(instant(&own["updated"]), added, "{own:#}");
    let all = view(&node, &agency, "all").await;
    assert_eq!(instant(&all["updated"]), added, "{all:#}");
    // Nor through a point-in-time read: its bound is what the caller may know of the last
    // change, so any instant after the agency's own revision reads as now.
    for scope in ["own", "all"] {
        let path = format!("{LIST}/{GLOBAL_ID}?scope={scope}&at=2999-01-01T00:00:00Z");
        let later = ok_json(agency.get(&node, &path).await).await;
        assert_eq!(instant(&later["updated"]), added, "{scope}: {later:#}");
    }
    let before_update = (instant(&publisher["updated"]) - chrono::Duration::milliseconds(1))
        .with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let linked = |at: String| {
        let url = node.url(&format!("{LIST}/{GLOBAL_ID}?at={at}"));
        let (key, token) = (agency.account.api_key.clone(), agency.token.clone());
        let client = node.client.clone();
        async move {
            let r = client
                .get(url)
                .header("x-api-key", key)
                .bearer_auth(token)
                .header("accept", "application/n-quads")
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            let mut lines: Vec<String> =
                r.text().await.unwrap().lines().map(str::to_owned).collect();
            lines.sort();
            lines
        }
    };
    assert_eq!(
        linked(before_update).await,
        linked("2999-01-01T00:00:00Z".into()).await,
        "the linked form at an instant before the publisher's change differs from after it"
    );
}

async fn view(node: &TestNode, who: &Session, scope: &str) -> Value {
    ok_json(
        who.get(node, &format!("{LIST}/{GLOBAL_ID}?scope={scope}"))
            .await,
    )
    .await
}

/// A time the node wrote, as an instant (the store gives `…48.75Z` back for `…48.750Z`).
fn instant(v: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap()
}

/// A stream carries nothing past its session's expiry: it ends when the caller's other reads
/// turn 401 (the sessions tests check those).
#[tokio::test]
async fn the_stream_ends_when_its_session_expires() {
    let node = TestNode::start_with(|c| c.session_lifetime_secs = 6).await;
    let agency = Session::new(&node, "officer@kra.example").await;
    let mut stream = open_stream(&node, &agency, None).await;
    let ended = tokio::time::timeout(Duration::from_secs(120), async {
        while stream.chunk().await.unwrap().is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the stream outlived its session");
}

/// Each organisation's notifications are numbered by a sequence of its own: the gaps between
/// its numbers must not tell it how many notifications others received meanwhile. After a
/// restart an organisation's numbers go on after its highest.
#[tokio::test]
async fn notification_numbers_are_each_organisations_own() {
    let w = World::new().await;
    for (n, locode) in [(1, "KEMBA"), (2, "TZDAR"), (3, "KEMBA"), (4, "KEMBA")] {
        let activity = consignment_at(w.trader.org(), n, locode, "2026-12-24T06:00:00Z");
        assert_completed(&w.trader.publish(&w.node, &activity).await);
    }
    let ids = |v: Value| -> Vec<String> {
        v["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(w.json(&w.ke, NOTIFICATIONS).await), ["3", "2", "1"]);
    assert_eq!(ids(w.json(&w.kemba, NOTIFICATIONS).await), ["3", "2", "1"]);
    assert_eq!(ids(w.json(&w.tz, NOTIFICATIONS).await), ["1"]);
    let w = w.restarted().await;
    let activity = consignment_at(w.trader.org(), 5, "KEMBA", "2026-12-24T06:00:00Z");
    assert_completed(&w.trader.publish(&w.node, &activity).await);
    assert_eq!(
        ids(w.json(&w.ke, NOTIFICATIONS).await),
        ["4", "3", "2", "1"]
    );
    let mut stream = open_stream(&w.node, &w.tz, Some("0")).await;
    let replayed = sse_events(&mut stream, 1, Duration::from_secs(5)).await;
    assert_eq!(replayed[0].0, "1");
}
