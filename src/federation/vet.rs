//! What a dataset pulled from a partner node may say. A node speaks for its own organisations
//! only: a partner answered datasets whose events and documents named organisations of other
//! nodes (this one's included) as their contributors, and documents whose links pointed
//! anywhere — and the reads showed them as those organisations' own. Checked once, as a
//! dataset arrives, before it is cached or joined to any read.

use serde_json::Value;

use super::did;
use super::RemoteDataset;

/// `dataset` as pulled for `remote` from partner node `node` (whose federation endpoint is
/// `endpoint`), keeping only what that node may say: an answer for another dataset is
/// refused; events, system events and documents contributed by an organisation of another
/// node are dropped, those naming no contributor are the provider's; a document whose links
/// lead off the provider's node is dropped.
pub fn dataset(
    remote: &RemoteDataset,
    node: &str,
    endpoint: &str,
    mut dataset: Value,
) -> Result<Value, String> {
    if dataset.get("datasetId").and_then(Value::as_str) != Some(remote.dataset.as_str()) {
        return Err("the partner answered with another dataset".into());
    }
    let host = host_of(endpoint).ok_or_else(|| format!("{endpoint}: no host"))?;
    let mut dropped = 0;
    for key in ["events", "systemEvents", "documents"] {
        let Some(Value::Array(parts)) = dataset.get_mut(key) else {
            continue;
        };
        let before = parts.len();
        parts.retain_mut(|part| part_of(part, remote, node, &host));
        dropped += before - parts.len();
    }
    if dropped > 0 {
        tracing::warn!(
            provider = remote.provider,
            dataset = remote.dataset,
            dropped,
            "a partner's dataset named contributors or links off its node; those parts are left out"
        );
    }
    Ok(dataset)
}

/// Whether `part` is one the provider's node may give (its contributor filled in when absent).
fn part_of(part: &mut Value, remote: &RemoteDataset, node: &str, host: &str) -> bool {
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
    match map.get("partner") {
        None | Some(Value::Null) => true,
        Some(partner) => links(partner).all(|href| host_of(href).as_deref() == Some(host)),
    }
}

/// Every link a partner's rendering of a document holds: its record's and attachment's
/// `href`, and those of the attachment's history.
fn links(partner: &Value) -> impl Iterator<Item = &str> {
    let history = partner["attachment"]["history"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| &h["href"]);
    [&partner["record"]["href"], &partner["attachment"]["href"]]
        .into_iter()
        .chain(history)
        .filter(|v| !v.is_null())
        // A link that is not a string is no link to the provider.
        .map(|v| v.as_str().unwrap_or(""))
}

/// `host` or `host:port` of a URL, lower case.
fn host_of(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    let host = url.host_str()?;
    Some(
        match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_owned(),
        }
        .to_ascii_lowercase(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NODE: &str = "did:web:partner.example";
    const PROVIDER: &str = "did:web:partner.example:org:p1";
    const ENDPOINT: &str = "https://partner.example/federation";

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
    fn only_the_providers_node_speaks_for_its_organisations_and_links() {
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
                document(PROVIDER, "https://evil.example/phish"),
                document(local_agency, on_node),
                document(PROVIDER, "https://partner.example:8443/blobs/x"),
            ],
        });
        let vetted = dataset(&remote(), NODE, ENDPOINT, pulled).unwrap();
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
        assert_eq!(vetted["documents"].as_array().unwrap().len(), 1);
        assert_eq!(vetted["documents"][0]["partner"]["record"]["href"], on_node);
    }

    #[test]
    fn an_answer_for_another_dataset_is_refused() {
        let other = json!({"datasetId": "urn:dataspace-node:contribution:ff:cd", "events": []});
        assert!(dataset(&remote(), NODE, ENDPOINT, other).is_err());
        assert!(dataset(&remote(), NODE, ENDPOINT, json!({"events": []})).is_err());
    }
}
