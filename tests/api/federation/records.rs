//! Records of partners' consignments on this node: their graphs, dates and ids.

use super::*;

#[tokio::test]
async fn a_partner_organisation_with_a_local_id_segment_names_graphs_of_its_own() {
    let (mut ls, hosts) = listeners(2).await;
    let c_listener = ls.pop().unwrap();
    let a = federated(ls.pop().unwrap(), &hosts).await;
    let c = federated(c_listener, &hosts).await;
    let operator = Operator::new(&a).await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    // An organisation of node C whose DID ends in the trader's id segment.
    let segment = trader.org().rsplit(':').next().unwrap();
    let twin = format!("{}:org:{segment}", did_of(&c));
    operator
        .policy(&a, rule(&a, &twin, "portOfEntryCountry", "eq", json!("KE")))
        .await;
    trader.publish_example(&a, "create-consignment").await;
    let list = get_json(&trader, &a, LIST).await;
    let aig = list["entities"][0]["aigId"].as_str().unwrap().to_owned();
    let hex = aig.trim_start_matches("aig:");
    let own = graphs::contribution(hex, trader.org()).into_string();
    let theirs = graphs::contribution(hex, &twin).into_string();
    assert_ne!(own, theirs);
    let offer = |dataset: &str| {
        json!({
            "@context": "https://www.w3.org/ns/activitystreams", "type": "Offer",
            "actor": twin, "to": [trader.org()], "published": "2026-11-22T00:00:01Z",
            "object": {"type": "Dataset", "id": dataset, "created": "2026-11-22T00:00:00Z",
                       "consignment": {"globalId": GLOBAL_ID, "identifier": "FWD-2026-000417",
                                       "aigId": aig}}
        })
    };
    // Naming the trader's own dataset (what the id segment named before) is refused...
    let r = notify(&c, &twin, &a, &offer(&own)).await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    // ...its own dataset is recorded (before, the shared segment was refused with 409).
    let r = notify(&c, &twin, &a, &offer(&theirs)).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    // The trader's consignment is still its own.
    let view = get_json(&trader, &a, &format!("{LIST}/{GLOBAL_ID}?scope=own")).await;
    assert_eq!(view["id"], aig, "{view:#}");
}

/// `node` as after a crash: stopped, its models snapshot gone, started again (the models are
/// rebuilt from the store).
async fn crashed_and_restarted(node: TestNode) -> TestNode {
    let (config, addr, dir) = node.halt().await;
    std::fs::remove_file(config.data_dir.join("models.snapshot")).unwrap();
    TestNode::start_again((config, addr, dir)).await
}

/// A share from a partner node leaves the partner's record in this node's index, dated by the
/// partner — here far ahead. It is held to this node's clock when it arrives, the rebuilt own
/// lists (a start after a crash) leave the partner's record out as the running node did, and
/// this node's stamps do not move: a Create after the rebuild is dated now.
#[tokio::test]
async fn a_partners_record_dated_ahead_moves_no_stamp_after_a_rebuild() {
    let (a, c, partner) = a_and_a_partner().await;
    let agency = Session::new(&a, "officer@kra.example").await;
    let trader = Session::new(&a, "trader@forwarder.example").await;
    let hex = "5a5a5a5a5a5a4a5a8a5a5a5a5a5a5a5a";
    let announce = |created: &str| announce(&partner, hex, agency.org(), created);
    let r = notify(&c, &partner, &a, &announce("2099-01-01T00:00:00Z")).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    // A partner's consignment may not take an id of the aig form either.
    let mut squat = announce("2026-11-26T00:00:00Z");
    squat["object"]["consignment"]["identifier"] = json!(format!("aig:{hex}"));
    let r = notify(&c, &partner, &a, &squat).await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    // In the agency's shared list (node C holds no such dataset: a warning in its place).
    let shared = get_json(&agency, &a, &format!("{LIST}?scope=shared")).await;
    assert_eq!(
        shared["warnings"][0]["datasetId"],
        graphs::contribution(hex, &partner).as_str(),
        "{shared:#}"
    );

    let a = crashed_and_restarted(a).await;
    let trader = trader.logged_in_again(&a).await;
    let before = chrono::Utc::now();
    trader.publish_example(&a, "create-consignment").await;
    let list = get_json(&trader, &a, LIST).await;
    let rows = list["entities"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{list:#}");
    let created =
        chrono::DateTime::parse_from_rfc3339(rows[0]["dateCreated"].as_str().unwrap()).unwrap();
    assert!(
        created.signed_duration_since(before).num_minutes() < 10,
        "dated by this node's clock: {created}"
    );
}

/// A partner's consignment shared with a second receiver on this node keeps the date it was
/// first stored with, whatever the second notice says: both receivers' lists order it by that
/// date, while the node runs and after a rebuild of the lists from the store (a crash).
#[tokio::test]
async fn a_second_share_of_a_partners_consignment_keeps_its_stored_date() {
    let (a, c, partner) = a_and_a_partner().await;
    let first = Session::new(&a, "officer@kra.example").await;
    let second = Session::new(&a, "officer@tra.example").await;
    let dataset = |hex: &str| graphs::contribution(hex, &partner).into_string();
    let (p, q) = (
        "5a5a5a5a5a5a4a5a8a5a5a5a5a5a5a01",
        "5a5a5a5a5a5a4a5a8a5a5a5a5a5a5a02",
    );
    for (hex, to, created) in [
        (p, first.org(), "2026-01-01T00:00:00Z"),
        (p, second.org(), "2026-06-01T00:00:00Z"),
        (q, second.org(), "2026-03-01T00:00:00Z"),
    ] {
        let r = notify(&c, &partner, &a, &announce(&partner, hex, to, created)).await;
        assert_eq!(r.status(), StatusCode::ACCEPTED);
    }
    // Node C holds no such datasets: the partner's one warning names the first row the page
    // left out, in list order, and counts both.
    let order = |list: &Value| -> Vec<Value> {
        let warnings = list["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), 1, "{list:#}");
        vec![
            warnings[0]["datasetId"].clone(),
            warnings[0]["rows"].clone(),
        ]
    };
    let expected = vec![json!(dataset(q)), json!(2)];
    let shared = format!("{LIST}?scope=shared");
    assert_eq!(order(&get_json(&second, &a, &shared).await), expected);

    let a = crashed_and_restarted(a).await;
    let second = second.logged_in_again(&a).await;
    assert_eq!(order(&get_json(&second, &a, &shared).await), expected);
}

/// A partner node may announce any number of its organisations' consignments under one id.
/// Announced to the organisation that publishes a consignment under that id here (and to
/// the agency it is shared with), they make nothing ambiguous: the publisher still reads its
/// own, and the agency reads, and adds its event to, the one its node's publisher shared.
#[tokio::test]
async fn announcements_under_a_taken_id_do_not_hide_the_real_consignment() {
    let (a, c, _) = a_and_a_partner().await;
    let (_operator, trader, agency) = kenya_circle(&a).await;
    trader.publish_example(&a, "create-consignment").await;
    let own = get_json(&trader, &a, &format!("{LIST}/{GLOBAL_ID}")).await;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    for n in 0..(dataspace_node::store::index::MAX_MATCHES + 5) {
        let partner = format!("{}:org:squatter{n}", did_of(&c));
        let hex = format!("{n:032x}");
        for to in [trader.org(), agency.org()] {
            let mut notice = announce(&partner, &hex, to, &now);
            notice["object"]["consignment"]["globalId"] = json!(GLOBAL_ID);
            assert_eq!(
                notify(&c, &partner, &a, &notice).await.status(),
                StatusCode::ACCEPTED
            );
        }
    }
    let again = get_json(&trader, &a, &format!("{LIST}/{GLOBAL_ID}")).await;
    assert_eq!(again["id"], own["id"], "{again:#}");
    let view = get_json(&agency, &a, &format!("{LIST}/{GLOBAL_ID}")).await;
    assert_eq!(view["id"], own["id"], "{view:#}");
    let event = as_org(example("add-event"), agency.org());
    assert_eq!(event["target"]["globalId"], GLOBAL_ID);
    assert_completed(&agency.publish(&a, &event).await);
    let events = get_json(&trader, &a, &format!("{LIST}/{GLOBAL_ID}/events?scope=all")).await;
    assert_eq!(event_codes(&events), ["tlip:vessel-departed"], "{events:#}");
}

/// The aig ids of a 409's candidates, sorted.
fn candidates(body: &Value) -> Vec<String> {
    let mut aigs: Vec<String> = body["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["aigId"].as_str().unwrap().to_owned())
        .collect();
    aigs.sort();
    aigs
}

/// Candidates for an id rank the caller's own, then this node's organisations', then those
/// partners announced: the id names the first rank that holds any, and a 409 lists that
/// rank's candidates only — two publishers here sharing one id with the agency are
/// ambiguous among themselves, the partners' announcements under it are not among them; two
/// partners' announcements under an id nobody here uses are ambiguous between them.
#[tokio::test]
async fn an_id_names_its_first_rank_and_a_409_lists_that_rank_only() {
    let (a, c, _) = a_and_a_partner().await;
    let (_operator, trader, agency) = kenya_circle(&a).await;
    let shipper = Session::new(&a, "trader@shipper.example").await;
    let mut local = Vec::new();
    for publisher in [&trader, &shipper] {
        publisher.publish_example(&a, "create-consignment").await;
        let list = get_json(publisher, &a, &format!("{LIST}?scope=own")).await;
        local.push(list["entities"][0]["aigId"].as_str().unwrap().to_owned());
    }
    local.sort();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut announced = Vec::new();
    for (n, global_id) in [
        (1, GLOBAL_ID),
        (2, GLOBAL_ID),
        (3, "urn:uuid:p"),
        (4, "urn:uuid:p"),
    ] {
        let partner = format!("{}:org:announcer{n}", did_of(&c));
        let hex = format!("{n:032x}");
        let mut notice = announce(&partner, &hex, agency.org(), &now);
        notice["object"]["consignment"]["globalId"] = json!(global_id);
        let r = notify(&c, &partner, &a, &notice).await;
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        announced.push(format!("aig:{hex}"));
    }
    let r = agency.get(&a, &format!("{LIST}/{GLOBAL_ID}")).await;
    let body = assert_error(r, StatusCode::CONFLICT, "GeneralError").await;
    assert_eq!(candidates(&body["properties"]), local, "{body:#}");
    let r = agency.get(&a, &format!("{LIST}/urn:uuid:p")).await;
    let body = assert_error(r, StatusCode::CONFLICT, "GeneralError").await;
    assert_eq!(candidates(&body["properties"]), announced[2..], "{body:#}");
    // The Add's look-up ranks alike.
    let event = as_org(example("add-event"), agency.org());
    let error = task_error(&agency.publish(&a, &event).await).clone();
    assert_eq!(
        candidates(&error["cause"]["properties"]),
        local,
        "{error:#}"
    );
}
