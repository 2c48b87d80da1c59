//! What a dataset pulled from a partner node may say. A node speaks for its own organisations
//! only: a partner answered datasets whose events and documents named organisations of other
//! nodes (this one's included) as their contributors, and the reads showed them as those
//! organisations' own (with a document's link wherever the partner liked). Checked once, as
//! a dataset arrives, before it is cached or joined to any read. A link of the provider's own
//! document may lead anywhere: an external reference is its URL itself.

use serde_json::Value;

use super::did;
use super::RemoteDataset;

/// `dataset` as pulled for `remote` from partner node `node`, keeping only what that node may
/// say: an answer for another dataset is refused; events, system events and documents
/// contributed by an organisation of another node are dropped, those naming no contributor
/// are the provider's.
pub fn dataset(remote: &RemoteDataset, node: &str, mut dataset: Value) -> Result<Value, String> {
    if dataset.get("datasetId").and_then(Value::as_str) != Some(remote.dataset.as_str()) {
        return Err("the partner answered with another dataset".into());
    }
    let mut dropped = 0;
    for key in ["events", "systemEvents", "documents"] {
        let Some(Value::Array(parts)) = dataset.get_mut(key) else {
            continue;
        };
        let before = parts.len();
        parts.retain_mut(|part| part_of(part, remote, node));
        dropped += before - parts.len();
    }
    if dropped > 0 {
        tracing::warn!(
            provider = remote.provider,
            dataset = remote.dataset,
            dropped,
            "a partner's dataset named contributors of other nodes; those parts are left out"
        );
    }
    Ok(dataset)
}

/// Whether `part` is one the provider's node may give (its contributor filled in when absent).
fn part_of(part: &mut Value, remote: &RemoteDataset, node: &str) -> bool {
    let Some(map) = part.as_object_mut() else {
        return false;
    };
    let contributor = match map.get("contributor") {
        None | Some(Value::Null) => remote.provider.clone(),
        Some(Value::String(c)) => c.clone(),
        Some(_) => return false,
    };
    if did::node_of(&contributor) != Some(node) {
        return false;
    }
    map.insert("contributor".into(), Value::String(contributor));
    // A link may lead anywhere a document may be (an external reference is its URL), but
    // only over HTTP: a `javascript:` or `data:` link would run or show in the reader's hands.
    match map.get("partner") {
        None | Some(Value::Null) => true,
        Some(partner) => links(partner).all(web_link),
    }
}

/// Every link a partner's rendering of a document holds: its record's and attachment's
/// `href`, and those of the attachment's history.
fn links(partner: &Value) -> impl Iterator<Item = &Value> {
    let history = partner["attachment"]["history"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| &h["href"]);
    [&partner["record"]["href"], &partner["attachment"]["href"]]
        .into_iter()
        .chain(history)
}

/// Absent, or an `http`/`https` URL.
fn web_link(href: &Value) -> bool {
    match href {
        Value::Null => true,
        Value::String(s) => {
            url::Url::parse(s).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NODE: &str = "did:web:partner.example";
    const PROVIDER: &str = "did:web:partner.example:org:p1";

    fn remote() -> RemoteDataset {
        RemoteDataset {
            provider: PROVIDER.into(),
            dataset: "urn:dataspace-node:contribution:ab:cd".into(),
        }
    }

    fn document(contributor: &str, href: &str) -> Value {
        json!({"id": "d", "at": "2026-01-01T00:00:00Z", "json": {}, "contributor": contributor,
               "partner": {"record": {"href": href},
                           "attachment": {"href": href, "history": [{"href": href}]}}})
    }

    #[test]
    fn only_the_providers_node_speaks_for_its_organisations() {
        let local_agency = "did:web:this-node.example:org:k";
        let sibling = "did:web:partner.example:org:p2";
        let on_node = "https://partner.example/supply-chain/data-space/blobs/x";
        let pulled = json!({
            "datasetId": remote().dataset,
            "events": [
                {"id": "e1", "at": "t", "json": {}},
                {"id": "e2", "at": "t", "json": {}, "contributor": local_agency},
                {"id": "e3", "at": "t", "json": {}, "contributor": sibling},
                {"id": "e4", "at": "t", "json": {}, "contributor": 7},
            ],
            "systemEvents": [{"id": "s1", "at": "t", "json": {}, "contributor": local_agency}],
            "documents": [
                document(PROVIDER, on_node),
                // An external reference: its link is the URL it names.
                document(PROVIDER, "https://docs.example/invoice.pdf"),
                document(PROVIDER, "javascript:alert(1)"),
                document(local_agency, on_node),
            ],
        });
        let vetted = dataset(&remote(), NODE, pulled).unwrap();
        let ids = |key: &str| -> Vec<(String, String)> {
            vetted[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p["id"].as_str().unwrap().into(),
                        p["contributor"].as_str().unwrap().into(),
                    )
                })
                .collect()
        };
        assert_eq!(
            ids("events"),
            [
                ("e1".into(), PROVIDER.into()),
                ("e3".into(), sibling.into())
            ]
        );
        assert!(ids("systemEvents").is_empty());
        let hrefs: Vec<&str> = vetted["documents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["partner"]["record"]["href"].as_str().unwrap())
            .collect();
        assert_eq!(hrefs, [on_node, "https://docs.example/invoice.pdf"]);
    }

    #[test]
    fn an_answer_for_another_dataset_is_refused() {
        let other = json!({"datasetId": "urn:dataspace-node:contribution:ff:cd", "events": []});
        assert!(dataset(&remote(), NODE, other).is_err());
        assert!(dataset(&remote(), NODE, json!({"events": []})).is_err());
    }
}
