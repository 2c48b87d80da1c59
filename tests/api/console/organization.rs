//! An organisation's admin: a key created (shown once) and revoked, a member made admin and
//! disabled, the audit log of it; a member is told the page is for admins.

use super::sign_in;
use crate::common::{Browser, Session, TestNode};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_manages_keys_and_users_and_reads_the_audit_log() {
    let node = TestNode::start().await;
    let admin = Session::new(&node, "admin@forwarder.example").await;
    let a = &admin.account;
    let member = node
        .create_account(&a.api_key, "clerk@forwarder.example", Some(admin.org()))
        .await;
    let b = Browser::start("organization").await;
    sign_in(&b, &node, &a.api_key, &a.email, &a.password).await;
    b.click_text("header.top nav a", "Organisation").await;
    b.wait_text("tr.user", "clerk@forwarder.example").await;
    assert_eq!(b.unlabelled_fields().await, Vec::<String>::new());

    // A new key, shown once, and working.
    b.find("input[name=keyName]")
        .await
        .send_keys("ci pipeline")
        .await
        .unwrap();
    b.click_text("form.new-key button", "Create key").await;
    let shown = b.wait_text(".new-key-value", "dsn_org_").await;
    let with_shown_key = || {
        node.client
            .get(node.url("/supply-chain/data-space/consignments"))
            .header("x-api-key", shown.trim())
            .bearer_auth(&admin.token)
            .send()
    };
    assert_eq!(
        with_shown_key().await.unwrap().status(),
        200,
        "the shown key works"
    );
    b.screenshot("key-created").await;

    // Revoked after the page said what that ends.
    b.goto(&node.url("/console/organization")).await;
    let row = "tr.key[data-name='ci pipeline']";
    b.click_text(&format!("{row} button"), "Revoke").await;
    b.wait_text(&format!("{row} .confirm"), "refused").await;
    b.click_text(&format!("{row} button.danger"), "Revoke key")
        .await;
    b.wait_text("main .message.ok", "revoked").await;
    assert_eq!(
        with_shown_key().await.unwrap().status(),
        401,
        "the revoked key is refused"
    );

    // The member made admin, then disabled: its session ends.
    let clerk_row = "tr.user[data-email='clerk@forwarder.example'] button";
    b.click_text(clerk_row, "Make admin").await;
    b.wait_text("main .message.ok", "now an admin").await;
    b.wait_text("tr.user", "admin").await;
    b.click_text(clerk_row, "Disable").await;
    b.wait_text("main .message.ok", "disabled").await;
    let r = node
        .client
        .get(node.url("/authentication/session"))
        .header("x-api-key", &member.api_key)
        .bearer_auth(&member.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "the disabled user's session ended");
    let audit = b.texts("tr.audit").await.join("\n");
    for action in ["key.created", "key.revoked", "user.updated"] {
        assert!(audit.contains(action), "{action} in {audit}");
    }
    b.screenshot("organization").await;
    b.close().await;

    // A member learns the page is for admins.
    let other = node
        .create_account(&a.api_key, "second@forwarder.example", Some(admin.org()))
        .await;
    let b = Browser::start("organization-member").await;
    sign_in(&b, &node, &a.api_key, &other.email, &other.password).await;
    b.click_text("header.top nav a", "Organisation").await;
    b.wait_text("main .message", "Only your organisation's admins")
        .await;
    b.close().await;
}
