//! An agency officer's open console: a new share appears without a reload, and an ended
//! session sends the page to sign-in and back to the page asked for.

use super::sign_in;
use crate::common::{consignment_at, kenya_circle, Browser, Session, TestNode, IDENTIFIER};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agency_sees_new_shares_appear_and_counts_the_unseen() {
    let node = TestNode::start().await;
    let (_operator, trader, agency) = kenya_circle(&node).await;
    let b = Browser::start("agency").await;
    let a = &agency.account;
    sign_in(&b, &node, &a.api_key, &a.email, &a.password).await;
    b.click_text("header.top nav a", "Notifications").await;
    b.wait_text("main .message", "No notifications yet").await;
    // The stream is open once the page says so to the node: wait for the node to count it.
    wait_for_stream(&b).await;

    trader.publish_example(&node, "create-consignment").await;
    let row = b.wait_text("tr.notification", IDENTIFIER).await;
    assert!(row.contains("Shared with us"), "{row}");
    b.screenshot("notifications").await;

    // On another page the menu counts what was not seen.
    b.click_text("header.top nav a", "Consignments").await;
    b.wait_text("table.list tbody tr", IDENTIFIER).await;
    trader
        .publish(
            &node,
            &consignment_at(trader.org(), 7, "KEMBA", "2026-12-30T06:00:00Z"),
        )
        .await;
    b.wait_text(".badge", "1").await;
    b.screenshot("badge").await;
    b.click_text("header.top nav a", "Notifications").await;
    b.wait_text("tr.notification", "FWD-2026-000007").await;
    let badge = b
        .run("return document.querySelector('.badge').hidden")
        .await;
    assert_eq!(
        badge,
        serde_json::json!(true),
        "seen on the notifications page"
    );
    b.close().await;
}

/// Waits until the page's stream is open: the node has taken its position by then, so every
/// later notification reaches it.
async fn wait_for_stream(b: &Browser) {
    b.wait_text(".stream-state", "live").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_session_goes_to_sign_in_and_back_to_the_page_asked_for() {
    let node = TestNode::start().await;
    let clerk = Session::new(&node, "clerk@forwarder.example").await;
    clerk.publish_example(&node, "create-consignment").await;
    let b = Browser::start("session-end").await;
    let a = &clerk.account;
    sign_in(&b, &node, &a.api_key, &a.email, &a.password).await;
    b.click_text("table.list td a", IDENTIFIER).await;
    b.wait_text("ol.stops", "Mombasa").await;
    let page = b.location().await;

    // The session ends elsewhere (its cookie, as the browser holds it, logged out).
    let cookie = b
        .client
        .get_named_cookie("access_token")
        .await
        .expect("the console's cookie");
    let r = node
        .client
        .post(node.url("/authentication/logout"))
        .header("cookie", format!("access_token={}", cookie.value()))
        .header("x-console-request", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);

    b.goto(&node.url(&page)).await;
    b.wait_text("form.sign-in .message", "session ended").await;
    let at = b.location().await;
    assert!(at.starts_with("/console/sign-in?next="), "{at}");
    b.screenshot("signed-out").await;
    super::type_credentials(&b, &a.api_key, &a.email, &a.password).await;
    b.wait_text("ol.stops", "Mombasa").await;
    assert_eq!(b.location().await, page);
    b.close().await;
}
