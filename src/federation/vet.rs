//! What a dataset pulled from a partner node may say. A node speaks for its own organisations
//! and users only: a partner answered datasets whose parts named organisations of other nodes
//! (this one's included) as their contributors, or carried a CREATE whose `source` was a user
//! of this node, and the reads showed them as those organisations' own (with a document's link
//! wherever the partner liked). Checked once, as a dataset arrives, before it is cached or
//! joined to any read. A link of the provider's own document may lead anywhere: an external
//! reference is its URL itself.

use serde_json::{Map, Value};

use super::did;
use super::RemoteDataset;

/// `dataset` as pulled for `remote` from partner node `node`, keeping only what that node may
/// say: an answer for another dataset is refused; events, system events and documents that
/// name an organisation or user of another node anywhere the node's renderings name who
/// acted are dropped, those naming no contributor are the provider's.
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
            "a partner's dataset named organisations or users of other nodes; those parts are left out"
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
    if !named(map)
        .iter()
        .all(|did| did.is_some_and(|d| of_node(d, node)))
    {
        return false;
    }
    // A link may lead anywhere a document may be (an external reference is its URL), but
    // only over HTTP: a `javascript:` or `data:` link would run or show in the reader's hands.
    match map.get("partner") {
        None | Some(Value::Null) => true,
        Some(partner) => links(partner).all(web_link),
    }
}

/// Keys under which a part's JSON or the provider's DocumentRecord name who acted: a system
/// event's `source` (the user, with its `organizationId`), an event's `actor`, a document
/// revision's and DocumentRecord's `organizationIdentity` and `userIdentity`, anyone's
/// `contributor` or `publisher`.
const WHO: [&str; 6] = [
    "contributor",
    "source",
    "actor",
    "organizationIdentity",
    "userIdentity",
    "publisher",
];

/// Every DID `part` names as who acted in its JSON and the provider's DocumentRecord; `None`
/// for such a value that is no DID (a number, an object naming none).
fn named(part: &Map<String, Value>) -> Vec<Option<&str>> {
    let mut out = Vec::new();
    let record = part.get("partner").and_then(|p| p.get("record"));
    for holder in [part.get("json"), record]
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
    {
        for key in WHO {
            match holder.get(key) {
                None | Some(Value::Null) => {}
                // A document recorded without a user names none.
                Some(Value::String(s)) if s.is_empty() && key == "userIdentity" => {}
                Some(value) => dids_in(value, &mut out),
            }
        }
    }
    out
}

/// The DIDs of one who-acted value: a DID as text, or an object naming one by `id` or
/// `registeredId` (an AS2 actor, a D23B TradeParty) with its organisation in
/// `detail.organizationId` (a system event's source).
fn dids_in<'a>(value: &'a Value, out: &mut Vec<Option<&'a str>>) {
    match value {
        Value::String(s) => out.push(Some(s)),
        Value::Object(o) => {
            let before = out.len();
            let ids = [
                o.get("id"),
                o.get("registeredId").map(|r| r.get("@value").unwrap_or(r)),
                o.get("detail").and_then(|d| d.get("organizationId")),
            ];
            for id in ids.into_iter().flatten() {
                dids_in(id, out);
            }
            if out.len() == before {
                out.push(None);
            }
        }
        _ => out.push(None),
    }
}

/// Whether `did` is node `node`'s, one of its organisations' or one of its users'.
fn of_node(did: &str, node: &str) -> bool {
    let Some(rest) = did.strip_prefix(node) else {
        return false;
    };
    rest.is_empty()
        || [":org:", ":user:"].iter().any(|kind| {
            rest.strip_prefix(kind)
                .is_some_and(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric()))
        })
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
    fn parts_name_only_organisations_and_users_of_the_providers_node() {
        let local_user = "did:web:this-node.example:user:u1";
        let local_org = "did:web:this-node.example:org:k";
        let own_user = "did:web:partner.example:user:u2";
        let source = |user: &str, org: &str| {
            json!({"id": "s", "at": "t", "contributor": PROVIDER,
                   "json": {"typeCode": "CREATE", "source": {"id": user, "type": "Person",
                                                             "detail": {"organizationId": org}}}})
        };
        let event = |actor: Value| json!({"id": "e", "at": "t", "json": {"actor": actor}});
        let revision = |org: &str, user: &str| {
            json!({"id": "d", "at": "t",
                   "json": {"organizationIdentity": org, "userIdentity": user}})
        };
        let kept = |part: Value| {
            let pulled = json!({"datasetId": remote().dataset, "events": [part]});
            !dataset(&remote(), NODE, pulled).unwrap()["events"]
                .as_array()
                .unwrap()
                .is_empty()
        };
        assert!(kept(source(own_user, PROVIDER)));
        assert!(!kept(source(local_user, PROVIDER)));
        assert!(!kept(source(own_user, local_org)));
        assert!(kept(event(json!(PROVIDER))));
        assert!(kept(event(json!({"registeredId": {"@value": PROVIDER}}))));
        assert!(!kept(event(json!(local_org))));
        assert!(!kept(event(json!({"registeredId": {"@value": local_org}}))));
        assert!(!kept(event(json!({"type": "TradeParty"}))));
        assert!(!kept(event(json!(7))));
        assert!(kept(revision(PROVIDER, own_user)));
        assert!(kept(revision(PROVIDER, "")));
        assert!(!kept(revision(local_org, own_user)));
        assert!(!kept(revision(PROVIDER, local_user)));
        let mut record = document(PROVIDER, "https://partner.example/x");
        record["partner"]["record"]["organizationIdentity"] = json!(local_org);
        assert!(!kept(record));
    }

    #[test]
    fn a_did_of_the_node_is_the_node_or_its_organisations_and_users() {
        for did in [NODE, PROVIDER, "did:web:partner.example:user:u2"] {
            assert!(of_node(did, NODE), "{did}");
        }
        for did in [
            "did:web:partner.example2:org:p1",
            "did:web:partner.example:org:p1:user:u",
            "did:web:partner.example:org:",
            "did:web:partner.example:elsewhere:org:p1",
            "did:web:partner.exampl",
        ] {
            assert!(!of_node(did, NODE), "{did}");
        }
    }

    #[test]
    fn an_answer_for_another_dataset_is_refused() {
        let other = json!({"datasetId": "urn:dataspace-node:contribution:ff:cd", "events": []});
        assert!(dataset(&remote(), NODE, other).is_err());
        assert!(dataset(&remote(), NODE, json!({"events": []})).is_err());
    }
}
