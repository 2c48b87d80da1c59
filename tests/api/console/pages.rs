//! A clerk's pages: the list, a consignment with its route, documents and history, and the
//! consignment as it was before its Update.

use serde_json::json;

use super::sign_in;
use crate::common::{
    as_org, consignment_at, example, kenya_circle, Browser, Session, TestNode, IDENTIFIER,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clerk_finds_a_consignment_sees_its_route_and_history_and_goes_back_before_the_update() {
    let node = TestNode::start().await;
    let clerk = Session::new(&node, "clerk@forwarder.example").await;
    for name in [
        "create-consignment",
        "update-consignment",
        "add-event",
        "add-document",
    ] {
        clerk.publish_example(&node, name).await;
    }
    let b = Browser::start("clerk").await;
    let a = &clerk.account;
    sign_in(&b, &node, &a.api_key, &a.email, &a.password).await;

    // The list: one page, with the summary columns.
    let row = b.wait_text("table.list tbody tr", IDENTIFIER).await;
    assert!(
        row.contains("Dar es Salaam") && row.contains("TZDAR"),
        "{row}"
    );
    assert!(
        row.contains("Port of Santos") && row.contains("BRSSZ"),
        "{row}"
    );
    assert!(
        row.contains("Sea") && row.contains("tlip:vessel-departed"),
        "{row}"
    );
    b.screenshot("list").await;
    assert_eq!(b.unlabelled_fields().await, Vec::<String>::new());

    b.click_text("table.list td a", IDENTIFIER).await;
    // The route: departure then arrival, with the ports routing used and their dates.
    let stops = b.wait_text("ol.stops", "Dar es Salaam").await;
    let santos = stops.find("Port of Santos").expect("departure shown");
    let dar = stops.find("Dar es Salaam").expect("arrival shown");
    assert!(santos < dar, "departure before arrival: {stops}");
    assert!(
        stops.contains("TZDAR") && stops.contains("2026-12-27 06:00:00"),
        "{stops}"
    );
    assert!(stops.contains("port of entry used by routing"), "{stops}");
    assert_eq!(b.texts("svg.route .stop").await.len(), 2);
    let ports = b.wait_text("dl.facts", "Port of entry").await;
    assert!(ports.contains("TZDAR") && ports.contains("(TZ)"), "{ports}");
    // Events, documents (the attestation checked in the page) and the two revisions.
    b.wait_text("section", "tlip:vessel-departed").await;
    let attestation = b.wait_text("td.attestation", "erified").await;
    assert!(attestation.starts_with("Verified"), "{attestation}");
    let revisions = b.texts("ol.timeline li.revision").await;
    assert!(
        revisions.iter().any(|r| r.contains("Created")),
        "{revisions:?}"
    );
    let update = revisions
        .iter()
        .find(|r| r.contains("Updated"))
        .expect("the Update");
    assert!(update.contains("scheduledOccurrenceDateTime"), "{update}");
    b.screenshot("consignment").await;
    assert_eq!(b.unlabelled_fields().await, Vec::<String>::new());

    // As of the Create: the arrival the Update replaced.
    b.find("ol.timeline li.revision.create button")
        .await
        .click()
        .await
        .unwrap();
    let before = b.wait_text("ol.stops", "Mombasa").await;
    assert!(
        before.contains("KEMBA") && before.contains("2026-12-24 06:00:00"),
        "{before}"
    );
    assert!(!before.contains("Dar es Salaam"), "{before}");
    assert!(b.location().await.contains("at="));
    b.wait_text("p.message", "Shown as of").await;
    b.screenshot("as-of").await;

    // "Now" again, by the control's own button.
    b.click_text("form.as-of button", "Now").await;
    b.wait_text("ol.stops", "Dar es Salaam").await;

    // Signing out ends the session: the console asks for a sign-in again.
    b.click_text("header.top button", "Sign out").await;
    b.find("form.sign-in input[name=apiKey]").await;
    b.goto(&node.url("/console/consignments")).await;
    b.find("form.sign-in input[name=apiKey]").await;
    assert!(b.location().await.starts_with("/console/sign-in?next="));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_reads_one_page_at_a_time_in_each_scope() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    for n in 1..=27 {
        let create = consignment_at(trader.org(), n, "KEMBA", "2026-12-24T06:00:00Z");
        trader.publish(&node, &create).await;
    }
    let b = Browser::start("scopes").await;
    let a = &agency.account;
    sign_in(&b, &node, &a.api_key, &a.email, &a.password).await;
    b.wait_text("table.list tbody tr", "FWD-2026-000027").await;
    assert_eq!(b.texts("table.list tbody tr").await.len(), 25);
    b.click_text("nav.pager a", "Next page").await;
    b.wait_text("table.list tbody tr", "FWD-2026-000001").await;
    let rest = b.texts("table.list tbody tr").await;
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert!(
        rest[0].contains("FWD-2026-000002"),
        "newest first: {rest:?}"
    );
    assert!(b
        .texts("nav.pager a")
        .await
        .iter()
        .all(|t| t != "Next page"));
    b.click_text("nav.tabs a", "Published by us").await;
    b.wait_text("main .message", "No consignments in this scope")
        .await;
    b.click_text("nav.tabs a", "Shared with us").await;
    b.wait_text("table.list tbody tr", "FWD-2026-000027").await;
    assert_eq!(b.texts("table.list tbody tr").await.len(), 25);
    assert!(b.location().await.ends_with("scope=shared"));
    b.screenshot("shared").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payload_text_renders_as_text_and_never_runs() {
    let node = TestNode::start().await;
    let clerk = Session::new(&node, "clerk@forwarder.example").await;
    let payload = "<img src=x onerror=alert(1)>";
    let mut create = as_org(example("create-consignment"), clerk.org());
    create["object"]["summaryDescription"] = json!(payload);
    create["object"]["includedConsignment"][0]["consignorParty"]["name"] = json!(payload);
    clerk.publish(&node, &create).await;
    let b = Browser::start("xss").await;
    let a = &clerk.account;
    sign_in(&b, &node, &a.api_key, &a.email, &a.password).await;

    let row = b.wait_text("table.list tbody tr", IDENTIFIER).await;
    assert!(row.contains(payload), "the consignor's name as text: {row}");
    b.click_text("table.list td a", IDENTIFIER).await;
    let party = b.wait_text("td.party-name", "onerror").await;
    assert_eq!(party, payload);
    b.wait_text("dl.facts", payload).await;
    b.screenshot("page").await;
    assert!(!b.dialog_open().await, "an alert opened: the payload ran");
    let images = b
        .run("return document.querySelectorAll('img').length")
        .await;
    assert_eq!(images, json!(0), "the payload became an element");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_id_and_wrong_credentials_are_messages_in_the_page() {
    let node = TestNode::start().await;
    let clerk = Session::new(&node, "clerk@forwarder.example").await;
    let b = Browser::start("bad-input").await;
    let a = &clerk.account;
    b.goto(&node.url("/console")).await;
    b.find("form.sign-in input[name=apiKey]").await;
    super::type_credentials(&b, &a.api_key, &a.email, "wrong password").await;
    b.wait_text("form.sign-in .message.error", "Sign-in failed")
        .await;
    b.screenshot("wrong-credentials").await;

    sign_in(&b, &node, &a.api_key, &a.email, &a.password).await;
    b.goto(&node.url("/console/consignments/aig:00000000000000000000000000000000"))
        .await;
    b.wait_text("main h1", "Consignment not found").await;
    b.wait_text(
        "main .message.error",
        "aig:00000000000000000000000000000000",
    )
    .await;
    b.screenshot("not-found").await;
    b.goto(&node.url("/console/no-such-page")).await;
    b.wait_text("main h1", "Page not found").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_description_older_than_a_page_of_history_is_still_found() {
    let node = TestNode::start().await;
    let clerk = Session::new(&node, "clerk@forwarder.example").await;
    clerk.publish_example(&node, "create-consignment").await;
    // More Adds than one history page (100) holds, all after the Create.
    for i in 0..101 {
        let at = format!("2026-12-02T{:02}:{:02}:00Z", i / 60, i % 60);
        clerk
            .publish(
                &node,
                &crate::common::example_event(&clerk, "tlip:checked", &at),
            )
            .await;
    }
    let b = Browser::start("long-history").await;
    let a = &clerk.account;
    sign_in(&b, &node, &a.api_key, &a.email, &a.password).await;
    b.click_text("table.list td a", IDENTIFIER).await;
    b.wait_text("ol.stops", "Mombasa").await;
    b.wait_text("dl.facts", "Roasted coffee beans").await;
    b.wait_text("main .message", "newest 100 revisions").await;
    b.close().await;
}
