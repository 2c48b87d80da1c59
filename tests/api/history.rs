//! A consignment's history: every revision newest first, point-in-time reads (`?at=`) of the
//! view, its events, documents and linked-data forms, and the node's attestation of each
//! revision checked with another JOSE implementation.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::*;

const PDF2: &[u8] = b"%PDF-1.4\n%the second revision\n%%EOF\n";
const ARRIVAL_CODE: &str =
    "$.atArrivalTransportMovement.arrivalEvent[0].occurrenceLogisticsLocation.identifier['@value']";
const MODE: &str = "$.atDepartureTransportMovement.transportModeCode";

fn history(id: &str) -> String {
    format!("{LIST}/{id}/history")
}

/// The example consignment arriving at `locode`, by `mode` (a UN/ECE transport mode code).
fn consignment(org: &str, kind: &str, locode: &str, mode: &str) -> Value {
    let mut a = as_org(example("create-consignment"), org);
    a["type"] = json!(kind);
    a["object"]["atArrivalTransportMovement"]["arrivalEvent"][0]["occurrenceLogisticsLocation"]
        ["identifier"]["@value"] = json!(locode);
    a["object"]["atDepartureTransportMovement"]["transportModeCode"] =
        json!(format!("unece:TransportModeCodeList#{mode}"));
    a
}

/// Every page of a history, following the cursors.
async fn all_pages(node: &TestNode, who: &Session, path: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut url = format!("{path}?scope=all&limit=2");
    loop {
        let page = get_json(who, node, &url).await;
        let entities = page["entities"].as_array().unwrap();
        assert!(entities.len() <= 2, "{page:#}");
        out.extend(entities.iter().cloned());
        match page["cursor"].as_str() {
            Some(c) => url = format!("{path}?scope=all&limit=2&cursor={}", form_encoded(c)),
            None => return out,
        }
    }
}

/// A view without its signed download links, whose expiry moves with the clock.
fn unsigned(mut v: Value) -> Value {
    match &mut v {
        Value::Object(o) => {
            o.remove("href");
            for value in o.values_mut() {
                *value = unsigned(value.take());
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                *item = unsigned(item.take());
            }
        }
        _ => {}
    }
    v
}

fn mode_of(view: &Value) -> &str {
    view["resolvedTransportMode"]["code"].as_str().unwrap()
}

/// A trader's consignment: created for Rotterdam by sea, updated to Mombasa by road (which
/// routes it to the Kenyan agency), inspected by the agency, then an invoice in two revisions.
/// Returns the log entry ids in order.
async fn five_revisions(node: &TestNode, trader: &Session, agency: &Session) -> Vec<String> {
    let mut ids = Vec::new();
    let activities = [
        (trader, consignment(trader.org(), "Create", "NLRTM", "1")),
        (trader, consignment(trader.org(), "Update", "KEMBA", "3")),
        (agency, inspection(agency.org())),
        (trader, as_org(example("add-document"), trader.org())),
        (
            trader,
            add_document(
                trader.org(),
                &data_url("application/pdf", PDF2),
                "INV-2026-0917",
            ),
        ),
    ];
    for (who, activity) in activities {
        let entry = who.publish(node, &activity).await;
        assert_completed(&entry);
        ids.push(entry["id"].as_str().unwrap().to_owned());
    }
    ids
}

#[tokio::test]
async fn the_history_lists_every_revision_newest_first_and_pages() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    let ids = five_revisions(&node, &trader, &agency).await;

    let entries = all_pages(&node, &trader, &history(GLOBAL_ID)).await;
    assert_eq!(entries.len(), 5, "{entries:#?}");
    let field = |k: &str| -> Vec<Value> { entries.iter().map(|e| e[k].clone()).collect() };
    assert_eq!(
        field("type"),
        [
            json!("ADD"),
            json!("ADD"),
            json!("ADD"),
            json!("UPDATE"),
            json!("CREATE")
        ]
    );
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(
        field("activityLogEntryId"),
        newest_first.iter().map(|i| json!(i)).collect::<Vec<_>>()
    );
    let orgs: Vec<Value> = [
        trader.org(),
        trader.org(),
        agency.org(),
        trader.org(),
        trader.org(),
    ]
    .iter()
    .map(|o| json!(o))
    .collect();
    assert_eq!(field("organizationIdentity"), orgs);
    let users = [&trader, &trader, &agency, &trader, &trader].map(|s| json!(s.account.identity));
    assert_eq!(field("userIdentity"), users);
    assert_eq!(
        field("changed"),
        [
            json!([]),
            json!([]),
            json!([]),
            json!([ARRIVAL_CODE, MODE]),
            json!(["$"])
        ]
    );
    let objects: Vec<&str> = entries
        .iter()
        .map(|e| e["object"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        objects,
        [
            "Document",
            "Document",
            "SupplyChainEvent",
            "Consignment",
            "Consignment"
        ]
    );
    let dates: Vec<_> = entries
        .iter()
        .map(|e| chrono::DateTime::parse_from_rfc3339(e["date"].as_str().unwrap()).unwrap())
        .collect();
    assert!(dates.windows(2).all(|w| w[0] > w[1]), "{dates:?}");
    for e in &entries {
        assert_eq!(
            e["attestation"].as_str().unwrap().split('.').count(),
            3,
            "{e:#}"
        );
        assert!(
            e["userIdentity"].as_str().unwrap().starts_with("did:"),
            "{e:#}"
        );
    }

    // One revision, with the description it sent; the same by the aig id and the identifier.
    let list = get_json(&trader, &node, LIST).await;
    let aig = list["entities"][0]["aigId"].as_str().unwrap().to_owned();
    for id in [GLOBAL_ID, IDENTIFIER, aig.as_str()] {
        let created = get_json(
            &trader,
            &node,
            &format!(
                "{}/{}",
                history(id),
                entries[4]["revision"].as_str().unwrap()
            ),
        )
        .await;
        assert_eq!(created["type"], "CREATE");
        let d = &created["description"];
        assert_eq!(
            d["atDepartureTransportMovement"]["transportModeCode"],
            "unece:TransportModeCodeList#1"
        );
        assert_eq!(
            d["atArrivalTransportMovement"]["arrivalEvent"][0]["occurrenceLogisticsLocation"]
                ["identifier"]["@value"],
            "NLRTM"
        );
    }
    let updated = get_json(
        &trader,
        &node,
        &format!(
            "{}/{}",
            history(GLOBAL_ID),
            entries[3]["revision"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(
        updated["description"]["atDepartureTransportMovement"]["transportModeCode"],
        "unece:TransportModeCodeList#3"
    );
    assert!(get_json(
        &trader,
        &node,
        &format!(
            "{}/{}",
            history(GLOBAL_ID),
            entries[2]["revision"].as_str().unwrap()
        )
    )
    .await
    .get("description")
    .is_none());
    let unknown = format!("{}/{}", history(GLOBAL_ID), "0".repeat(32));
    assert_error(
        trader.get(&node, &unknown).await,
        StatusCode::NOT_FOUND,
        "GeneralError",
    )
    .await;

    // The agency was granted the consignment by the Update and still reads it from the Create
    // (the trader's users as DIDs only); its own revision is there too.
    let seen = all_pages(&node, &agency, &history(GLOBAL_ID)).await;
    assert_eq!(seen, entries);
    let shared = get_json(
        &agency,
        &node,
        &format!("{}?scope=shared", history(GLOBAL_ID)),
    )
    .await;
    let types: Vec<&str> = shared["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["ADD", "ADD", "UPDATE", "CREATE"]);
    assert!(
        !shared.to_string().contains(&trader.account.email),
        "{shared:#}"
    );
    let own = get_json(&agency, &node, &format!("{}?scope=own", history(GLOBAL_ID))).await;
    assert_eq!(own["entities"].as_array().unwrap().len(), 1);
    assert_eq!(own["entities"][0]["organizationIdentity"], agency.org());

    // Outsiders: 404 for every id form, for the history and a revision alike.
    let outsider = Session::new(&node, "ops@elsewhere.example").await;
    let revision = entries[4]["revision"].as_str().unwrap();
    for id in [GLOBAL_ID, IDENTIFIER, aig.as_str()] {
        for path in [history(id), format!("{}/{revision}", history(id))] {
            assert_error(
                outsider.get(&node, &path).await,
                StatusCode::NOT_FOUND,
                "GeneralError",
            )
            .await;
        }
    }

    // Bad paging input.
    for bad in ["limit=0", "limit=x", "cursor=nonsense"] {
        let r = trader
            .get(&node, &format!("{}?{bad}", history(GLOBAL_ID)))
            .await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
}

#[tokio::test]
async fn reads_at_an_instant_answer_as_the_data_stood_then() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    five_revisions(&node, &trader, &agency).await;
    // One more change after the invoice's second revision, so that an instant after it is in
    // the history (not the current state).
    let arrived = example_event(&trader, "tlip:vessel-arrived", "2026-12-24T07:30:00Z");
    assert_completed(&trader.publish(&node, &arrived).await);
    let entries = get_json(&trader, &node, &format!("{}?scope=all", history(GLOBAL_ID))).await;
    let date = |i: usize| entries["entities"][i]["date"].as_str().unwrap().to_owned();
    let (created, updated, inspected) = (date(5), date(4), date(3));
    let (invoiced, revised) = (date(2), date(1));
    let at = |path: &str, when: &str| format!("{path}?scope=all&at={}", form_encoded(when));
    let view = format!("{LIST}/{GLOBAL_ID}");
    let now = get_json(&trader, &node, &format!("{view}?scope=all")).await;

    let first = get_json(&trader, &node, &at(&view, &created)).await;
    assert_eq!(mode_of(&first), "1");
    assert_eq!(first["events"], json!([]));
    assert_eq!(first["documents"], json!([]));
    assert_eq!(first["systemEvents"].as_array().unwrap().len(), 1);
    assert_eq!(first["created"], now["created"]);
    assert_eq!(first["updated"], created);
    let second = get_json(&trader, &node, &at(&view, &updated)).await;
    assert_eq!(mode_of(&second), "3");
    assert_eq!(second["events"], json!([]));
    // The same instant written in another time zone.
    let instant = chrono::DateTime::parse_from_rfc3339(&updated).unwrap();
    let nairobi = instant
        .with_timezone(&chrono::FixedOffset::east_opt(3 * 3600).unwrap())
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false);
    assert_eq!(get_json(&trader, &node, &at(&view, &nairobi)).await, second);
    // Just before the update: the Create's state.
    let before_update = (instant - chrono::Duration::microseconds(1))
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
    assert_eq!(
        mode_of(&get_json(&trader, &node, &at(&view, &before_update)).await),
        "1"
    );

    let events = format!("{view}/events");
    assert_eq!(
        get_json(&trader, &node, &at(&events, &updated)).await["entities"],
        json!([])
    );
    let then = get_json(&trader, &node, &at(&events, &inspected)).await;
    assert_eq!(then["entities"].as_array().unwrap().len(), 1);
    assert_eq!(then["entities"][0]["typeCode"], "kra:inspection-completed");

    let documents = format!("{view}/documents");
    let first_invoice = get_json(&trader, &node, &at(&documents, &invoiced)).await;
    assert_eq!(first_invoice["entities"].as_array().unwrap().len(), 1);
    // Document revisions count from 0.
    assert_eq!(first_invoice["entities"][0]["documentRevision"], 0);
    let current = get_json(&trader, &node, &format!("{documents}?scope=all")).await;
    assert_eq!(current["entities"][0]["documentRevision"], 1);
    let one = get_json(
        &trader,
        &node,
        &at(&format!("{documents}/INV-2026-0917"), &invoiced),
    )
    .await;
    assert_eq!(one["documentRevision"], 0);
    // After the second revision, before the last change: that revision only.
    let second_invoice = get_json(&trader, &node, &at(&documents, &revised)).await;
    let revisions: Vec<&Value> = second_invoice["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["documentRevision"])
        .collect();
    assert_eq!(revisions, [&json!(1)]);
    let then = get_json(&trader, &node, &at(&view, &revised)).await;
    assert_eq!(then["documents"].as_array().unwrap().len(), 1, "{then:#}");
    assert_eq!(then["events"].as_array().unwrap().len(), 1, "{then:#}");

    // The future is the current state; an instant before the Create is not found.
    assert_eq!(
        unsigned(get_json(&trader, &node, &at(&view, "2999-01-01T00:00:00Z")).await),
        unsigned(now.clone())
    );
    let before = (chrono::DateTime::parse_from_rfc3339(&created).unwrap()
        - chrono::Duration::microseconds(1))
    .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
    for path in [&view, &events, &documents] {
        assert_error(
            trader.get(&node, &at(path, &before)).await,
            StatusCode::NOT_FOUND,
            "GeneralError",
        )
        .await;
    }

    // The agency, granted by the update, reads the Create's state too.
    let shared = get_json(
        &agency,
        &node,
        &format!("{view}?scope=shared&at={}", form_encoded(&created)),
    )
    .await;
    assert_eq!(mode_of(&shared), "1");

    // Linked data at the Create: the description then, nothing added later.
    for (accept, when) in [
        ("application/n-quads", Some(&created)),
        ("application/n-quads", None),
    ] {
        let url = match when {
            Some(w) => node.url(&at(&view, w)),
            None => node.url(&format!("{view}?scope=all")),
        };
        let r = node
            .client
            .get(url)
            .header("x-api-key", &trader.account.api_key)
            .bearer_auth(&trader.token)
            .header("accept", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let text = r.text().await.unwrap();
        let old = when.is_some();
        // By sea at both ends then; by road from departure now.
        assert_eq!(text.contains("TransportModeCodeList#3"), !old, "{text}");
        assert_eq!(text.contains("kra:inspection-completed"), !old);
        // The description's arrival port (the Create revision declares it either way).
        let described = text
            .lines()
            .any(|l| l.contains("\"NLRTM\"") && !l.contains("declaredPortOfEntry"));
        assert_eq!(described, old, "{text}");
        assert!(
            text.contains("ConsignmentSummary") != old,
            "summary now, not then"
        );
    }

    // Bad instants: 400 naming the parameter.
    for bad in [
        "yesterday",
        "2026-13-01T00:00:00Z",
        "2026-01-01",
        "1969-12-31T23:59:59Z",
        "99999-01-01T00:00:00Z",
    ] {
        let body = assert_error(
            trader.get(&node, &at(&view, bad)).await,
            StatusCode::BAD_REQUEST,
            "GeneralError",
        )
        .await;
        assert!(body.to_string().contains("at"), "{bad}: {body}");
    }
    // An offset's `+` left unencoded reads as a space: the answer says how to send it.
    let body = assert_error(
        trader
            .get(&node, &format!("{view}?at=2026-03-01T12:00:00+03:00"))
            .await,
        StatusCode::BAD_REQUEST,
        "GeneralError",
    )
    .await;
    assert!(body.to_string().contains("%2B"), "{body}");
    let outsider = Session::new(&node, "ops@elsewhere.example").await;
    assert_error(
        outsider.get(&node, &at(&view, &created)).await,
        StatusCode::NOT_FOUND,
        "GeneralError",
    )
    .await;
}

#[tokio::test]
async fn each_revision_is_attested_with_the_key_of_the_node_did_document() {
    let node = TestNode::start().await;
    let trader = Session::new(&node, "trader@forwarder.example").await;
    let entry = trader
        .publish(&node, &as_org(example("create-consignment"), trader.org()))
        .await;
    let id = entry["id"].as_str().unwrap();
    let logged = get_json(
        &trader,
        &node,
        &format!("/supply-chain/data-space/activity-logs/{id}"),
    )
    .await;
    let jws = logged["attestation"].as_str().unwrap().to_owned();
    // The inbox answered with the same attestation it stored.
    assert_eq!(entry["attestation"], jws.as_str());
    let entries = get_json(&trader, &node, &history(GLOBAL_ID)).await;
    assert_eq!(entries["entities"][0]["attestation"], jws.as_str());

    // The verifier: jsonwebtoken's EdDSA, with the key from the node's DID document (the
    // node signs with its own compact JWS code).
    let did = json_body(
        node.client
            .get(node.url("/.well-known/did.json"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let header = jsonwebtoken::decode_header(&jws).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::EdDSA);
    let kid = header.kid.unwrap();
    let method = did["verificationMethod"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == kid.as_str())
        .unwrap_or_else(|| panic!("{kid} in {did:#}"));
    let key = jsonwebtoken::DecodingKey::from_ed_components(
        method["publicKeyJwk"]["x"].as_str().unwrap(),
    )
    .unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::EdDSA);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    let claims = jsonwebtoken::decode::<Value>(&jws, &key, &validation)
        .unwrap()
        .claims;
    let aig = get_json(&trader, &node, LIST).await["entities"][0]["aigId"].clone();
    assert_eq!(claims["iss"], did["id"]);
    assert_eq!(claims["sub"], trader.org());
    assert_eq!(claims["jti"], id);
    assert_eq!(claims["activityType"], "Create");
    assert_eq!(claims["consignment"], aig);
    assert_eq!(claims["activityHash"].as_str().unwrap().len(), 64);

    // A payload changed after signing fails.
    let parts: Vec<&str> = jws.split('.').collect();
    let mut forged = claims.clone();
    forged["sub"] = json!("did:web:squatter.example");
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(forged.to_string()),
        parts[2]
    );
    let err = jsonwebtoken::decode::<Value>(&tampered, &key, &validation).unwrap_err();
    assert_eq!(
        err.kind(),
        &jsonwebtoken::errors::ErrorKind::InvalidSignature
    );
}
