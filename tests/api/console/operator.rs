//! The operator's page: policies listed, created through the form with the API's problems at
//! their fields, deleted after the revocation is stated.

use super::sign_in;
use crate::common::{
    Browser, Operator, Session, TestNode, OPERATOR_EMAIL, OPERATOR_KEY, OPERATOR_PASSWORD, POLICIES,
};

async fn fill(b: &Browser, css: &str, text: &str) {
    let field = b.find(css).await;
    field.clear().await.unwrap();
    field.send_keys(text).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_creates_a_policy_through_the_form_and_deletes_it_knowing_what_it_revokes() {
    let node = TestNode::start().await;
    let operator = Operator::new(&node).await;
    let agency = Session::new(&node, "officer@kra.example").await;
    let b = Browser::start("operator").await;
    sign_in(&b, &node, OPERATOR_KEY, OPERATOR_EMAIL, OPERATOR_PASSWORD).await;
    b.click_text("header.top nav a", "Sharing policies").await;
    b.wait_text("main .message", "No policies").await;
    assert_eq!(b.unlabelled_fields().await, Vec::<String>::new());

    // Wrong values: each problem next to its field, nothing stored.
    fill(&b, "input[name=assignee]", "not-a-did").await;
    fill(&b, "input[name=rightOperand0]", "kenya").await;
    b.click_text("form.policy-form button", "Create policy")
        .await;
    let at_assignee = b.wait_text(".field .problem", "assignee").await;
    assert!(
        at_assignee.starts_with("permission[0].assignee"),
        "{at_assignee}"
    );
    let near = b
        .run("return document.querySelector('input[name=assignee]').closest('.field').innerText")
        .await;
    assert!(
        near.as_str().unwrap().contains("permission[0].assignee"),
        "{near}"
    );
    let near = b
        .run("return document.querySelector('input[name=rightOperand0]').closest('.field').innerText")
        .await;
    assert!(near.as_str().unwrap().contains("rightOperand"), "{near}");
    b.screenshot("problems").await;

    fill(&b, "input[name=assignee]", agency.org()).await;
    fill(&b, "input[name=rightOperand0]", "KE").await;
    b.click_text("form.policy-form button", "Create policy")
        .await;
    b.wait_text("main .message.ok", "created").await;
    let row = b.wait_text("tr.policy", "portOfEntryCountry is KE").await;
    let stored = operator
        .send(&node, reqwest::Method::GET, POLICIES, None)
        .await;
    let list: serde_json::Value = stored.json().await.unwrap();
    assert_eq!(list["entities"].as_array().unwrap().len(), 1, "{row}");
    b.screenshot("policies").await;

    b.click_text("tr.policy button", "Delete").await;
    let stated = b.wait_text(".confirm", "revokes").await;
    assert!(
        stated.contains("stops reading") && stated.contains("download links"),
        "{stated}"
    );
    b.screenshot("delete").await;
    b.click_text("tr.policy button.danger", "Delete policy and revoke")
        .await;
    b.wait_text("main .message.ok", "deleted").await;
    let stored = operator
        .send(&node, reqwest::Method::GET, POLICIES, None)
        .await;
    let list: serde_json::Value = stored.json().await.unwrap();
    assert_eq!(list["entities"], serde_json::json!([]));
    b.close().await;
}
