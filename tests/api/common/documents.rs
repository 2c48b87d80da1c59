//! Documents attached to consignments: the activity that adds one, its content, attestations.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};

use super::{as_org, example, TestNode};

/// `bytes` as a `data:` URL of `media_type`.
pub fn data_url(media_type: &str, bytes: &[u8]) -> String {
    format!("data:{media_type};base64,{}", STANDARD.encode(bytes))
}

/// The `add-document` example as `org`'s, for the document `document_id` at `uri`.
pub fn add_document(org: &str, uri: &str, document_id: &str) -> Value {
    let mut doc = as_org(example("add-document"), org);
    doc["object"]["uRIId"] = json!(uri);
    doc["object"]["identifier"] = json!(document_id);
    doc
}

/// `GET` of an attestation (public).
pub async fn attestation(node: &TestNode, id: &str) -> reqwest::Response {
    node.client
        .get(node.url(&format!("/supply-chain/data-space/attestations/{id}")))
        .send()
        .await
        .unwrap()
}

/// `v` with every signed download link cut before its `&expires=`: a link's expiry is the time
/// of the read plus its lifetime, so two reads of the same data in different seconds differ
/// there and in the signature, and only there.
pub fn unsigned_links(v: Value) -> Value {
    match v {
        Value::String(s) => match s.split_once("&expires=") {
            Some((head, _)) => Value::String(head.to_owned()),
            None => Value::String(s),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(unsigned_links).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, v)| (k, unsigned_links(v))).collect())
        }
        other => other,
    }
}
