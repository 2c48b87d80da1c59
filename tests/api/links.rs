//! Download links end with the access that gave them: a link names the organisation it was
//! signed for, and every download asks whether that organisation may still read a document
//! holding the bytes — a revoked grant ends its links at once, not when they expire.

use reqwest::StatusCode;
use serde_json::Value;

use crate::common::*;

async fn download(node: &TestNode, href: &str) -> reqwest::Response {
    node.client.get(href).send().await.unwrap()
}

/// The signed link of every document the read `path` answers with, wherever it stands
/// (`href` of an attachment, of a list's entities, of a view's DocumentRecords).
async fn links(node: &TestNode, who: &Session, path: &str) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    match (k.as_str(), x.as_str()) {
                        ("href", Some(href)) => out.push(href.to_owned()),
                        _ => walk(x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&get_json(who, node, path).await, &mut out);
    assert!(!out.is_empty(), "{path}");
    out
}

#[tokio::test]
async fn revoking_a_grant_ends_the_download_links_it_gave() {
    let node = TestNode::start().await;
    let (operator, trader, agency, policy) = kenya_circle_with_policy(&node).await;
    trader.publish_example(&node, "create-consignment").await;
    let invoice = data_url("text/plain", b"TRADER-INVOICE");
    let entry = trader
        .publish(&node, &add_document(trader.org(), &invoice, "INV-1"))
        .await;
    assert_completed(&entry);
    let report = data_url("text/plain", b"AGENCY-REPORT");
    let entry = agency
        .publish(&node, &add_document(agency.org(), &report, "REP-1"))
        .await;
    assert_completed(&entry);

    // The agency's links to the trader's invoice: single read, list, view.
    let docs = format!("{LIST}/{IDENTIFIER}/documents");
    let mut granted = links(&node, &agency, &format!("{docs}/INV-1?scope=shared")).await;
    granted.extend(links(&node, &agency, &format!("{docs}?scope=shared")).await);
    granted.extend(links(&node, &agency, &format!("{LIST}/{IDENTIFIER}?scope=shared")).await);
    // Links that do not hang on the grant: the agency's to its own report, the trader's to
    // its own invoice and to the report added to its consignment.
    let mut kept = links(&node, &agency, &format!("{docs}/REP-1?scope=own")).await;
    kept.extend(links(&node, &trader, &format!("{docs}?scope=all")).await);
    for href in granted.iter().chain(&kept) {
        assert_eq!(
            download(&node, href).await.status(),
            StatusCode::OK,
            "{href}"
        );
    }

    operator
        .delete(&node, policy["uid"].as_str().unwrap())
        .await;
    for href in &granted {
        let body = assert_error(
            download(&node, href).await,
            StatusCode::FORBIDDEN,
            "GeneralError",
        )
        .await;
        // The holder is told no more than of an expired link.
        let message = body["message"].as_str().unwrap();
        assert!(
            !message.contains("grant") && !message.contains("revok"),
            "{body}"
        );
    }
    for href in &kept {
        let r = download(&node, href).await;
        assert_eq!(r.status(), StatusCode::OK, "{href}");
        assert!(!r.bytes().await.unwrap().is_empty());
    }
    // Read again, the invoice is not the agency's any more.
    let r = agency.get(&node, &format!("{docs}/INV-1")).await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}
