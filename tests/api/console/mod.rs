//! The web console at `/console`, in a real browser (chromium through chromedriver) against a
//! real node, and its serving and session rules over plain HTTP.

mod analysts;
mod live;
mod operator;
mod organization;
mod pages;
mod served;

use crate::common::{Browser, TestNode};

const TAB: &str = "\u{e004}";
const ENTER: &str = "\u{e007}";

/// Opens the console and signs in with the keyboard alone: the key field has the focus, Tab
/// moves on, Enter submits.
async fn sign_in(b: &Browser, node: &TestNode, key: &str, email: &str, password: &str) {
    b.goto(&node.url("/console")).await;
    b.find("form.sign-in input[name=apiKey]").await;
    assert!(b.location().await.starts_with("/console/sign-in"));
    b.screenshot("sign-in").await;
    type_credentials(b, key, email, password).await;
    b.find("header.top .who").await;
}

/// Types the sign-in form's three fields from the first (focused), Tab between, Enter last.
async fn type_credentials(b: &Browser, key: &str, email: &str, password: &str) {
    b.type_keys(&format!("{key}{TAB}{email}{TAB}{password}{ENTER}"))
        .await;
}
