//! The notices nodes send each other, as AS2 activities:
//!
//! ```json
//! {"@context": "https://www.w3.org/ns/activitystreams", "id": "urn:uuid:…",
//!  "type": "Announce" | "Offer", "actor": "<sending organisation DID>",
//!  "to": ["<receiving organisation DID>"], "published": "<date-time>",
//!  "object": {"type": "Dataset", "id": "<datasetId>",
//!             "consignment": {"globalId", "identifier", "aigId"},
//!             "created": "<date-time>", "policy": "<uid>"}}
//! ```
//!
//! `Announce`: the actor shares its consignment with the receiver (a policy matched);
//! `Undo`: the actor no longer shares it with the receiver (the policy that shared it was
//! deleted, and no other shares it); `Offer`: the actor contributed to the receiver's
//! consignment and offers its contribution. A notice names the consignment and no more: the
//! receiver pulls the data under the sharing rules when it reads.

use serde_json::{json, Value};

use super::did;
use crate::consignment::ConsignmentRef;
use crate::error::{Error, Result};

pub const AS2: &str = "https://www.w3.org/ns/activitystreams";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Share,
    Withdrawal,
    Contribution,
}

/// A notice as received, checked for shape.
#[derive(Debug, Clone)]
pub struct Received {
    pub kind: Kind,
    pub actor: String,
    pub to: String,
    pub dataset: String,
    /// Its publisher is the actor of a share, the receiver of a contribution.
    pub consignment: ConsignmentRef,
    pub created: String,
    pub policy: Option<String>,
    pub published: String,
}

/// The dataset a notice is about and its consignment.
pub struct Subject<'a> {
    pub dataset: &'a str,
    pub consignment: ConsignmentRef,
    pub created: &'a str,
}

/// The body of a notice.
pub fn build(
    kind: Kind,
    actor: &str,
    to: &str,
    c: &Subject<'_>,
    policy: Option<&str>,
    now: &str,
) -> Value {
    let mut object = json!({
        "type": "Dataset",
        "id": c.dataset,
        "consignment": {
            "globalId": c.consignment.global_id,
            "identifier": c.consignment.identifier,
            "aigId": c.consignment.aig_id(),
        },
        "created": c.created,
    });
    if let Some(p) = policy {
        object["policy"] = json!(p);
    }
    json!({
        "@context": AS2,
        "id": format!("urn:uuid:{}", uuid::Uuid::new_v4()),
        "type": match kind {
            Kind::Share => "Announce",
            Kind::Withdrawal => "Undo",
            Kind::Contribution => "Offer",
        },
        "actor": actor,
        "to": [to],
        "published": now,
        "object": object,
    })
}

fn field<'a>(v: &'a Value, path: &[&str]) -> Result<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p).ok_or_else(|| missing(path))?;
    }
    cur.as_str()
        .filter(|s| !s.is_empty() && s.len() <= 2048)
        .ok_or_else(|| missing(path))
}

fn missing(path: &[&str]) -> Error {
    Error::invalid_field(&path.join("."), "missing, empty or not a string")
}

/// A date-time of the notice, in this node's form (UTC, milliseconds): chrono reads forms an
/// `xsd:dateTime` does not allow (a lowercase `t`, a space), which would be stored as
/// ill-typed literals and sort as text among the node's dates.
fn date(v: &Value, path: &[&str]) -> Result<String> {
    let s = field(v, path)?;
    let at = chrono::DateTime::parse_from_rfc3339(s)
        .map_err(|_| Error::invalid_field(&path.join("."), "not an ISO 8601 date-time"))?;
    Ok(at
        .with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// A partner's date, no later than this node's clock: the receivers' lists sort by a share's
/// `created`, and this node's stamps never fall behind a stored time — a date ahead (a
/// partner's clock, or a partner's choice) would keep its consignment above every other and
/// carry this node's clock forward with it. Refusing it instead would lose the share: the
/// sender drops a notice its receiver refuses.
fn not_ahead(date: String) -> String {
    let now = chrono::Utc::now();
    match chrono::DateTime::parse_from_rfc3339(&date) {
        Ok(at) if at > now => now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        _ => date,
    }
}

/// Checks a received notice's shape (not yet who may send it: see `sharing::remote`).
pub fn parse(body: &Value) -> Result<Received> {
    let context_ok = match body.get("@context") {
        Some(Value::String(s)) => s == AS2,
        Some(Value::Array(items)) => items.iter().any(|i| i.as_str() == Some(AS2)),
        _ => false,
    };
    if !context_ok {
        return Err(Error::invalid_field(
            "@context",
            format!("must include {AS2}"),
        ));
    }
    let kind =
        match body.get("type").and_then(Value::as_str) {
            Some("Announce") => Kind::Share,
            Some("Undo") => Kind::Withdrawal,
            Some("Offer") => Kind::Contribution,
            _ => return Err(Error::invalid_field(
                "type",
                "must be Announce (a shared consignment), Undo (a share withdrawn) or Offer (a \
                 contribution)",
            )),
        };
    let actor = field(body, &["actor"])?.to_owned();
    let to = match body.get("to") {
        Some(Value::Array(items)) if items.len() == 1 => items[0].as_str(),
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    }
    .ok_or_else(|| Error::invalid_field("to", "must name exactly one organisation"))?
    .to_owned();
    for (name, did) in [("actor", &actor), ("to", &to)] {
        if did::node_of(did).is_none() {
            return Err(Error::invalid_field(
                name,
                "must be an organisation's did:web",
            ));
        }
    }
    let aig = field(body, &["object", "consignment", "aigId"])?;
    let aig_hex = aig
        .strip_prefix("aig:")
        .filter(|h| h.len() == 32 && h.chars().all(|c| c.is_ascii_hexdigit()))
        .ok_or_else(|| Error::invalid_field("object.consignment.aigId", "must be aig:<32 hex>"))?
        .to_ascii_lowercase();
    let id = |name: &str| -> Result<String> {
        let value = field(body, &["object", "consignment", name])?;
        if crate::store::graphs::is_aig_id(value) {
            return Err(Error::invalid_field(
                &format!("object.consignment.{name}"),
                "has the form of an aig id, which names only the record minted for it",
            ));
        }
        Ok(value.to_owned())
    };
    let consignment = ConsignmentRef {
        aig_hex,
        global_id: id("globalId")?,
        identifier: id("identifier")?,
        publisher: match kind {
            Kind::Share | Kind::Withdrawal => actor.clone(),
            Kind::Contribution => to.clone(),
        },
    };
    Ok(Received {
        kind,
        dataset: field(body, &["object", "id"])?.to_owned(),
        consignment,
        created: not_ahead(date(body, &["object", "created"])?),
        policy: body
            .pointer("/object/policy")
            .and_then(Value::as_str)
            .map(str::to_owned),
        published: date(body, &["published"])?,
        actor,
        to,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_notices_parse_back() {
        let c = Subject {
            dataset: "urn:dataspace-node:contribution:0123456789abcdef0123456789abcdef:a1",
            consignment: ConsignmentRef {
                aig_hex: "0123456789abcdef0123456789abcdef".into(),
                global_id: "g1".into(),
                identifier: "i1".into(),
                publisher: "did:web:a.example:org:a1".into(),
            },
            created: "2026-01-02T03:04:05.000Z",
        };
        let body = build(
            Kind::Share,
            "did:web:a.example:org:a1",
            "did:web:b.example:org:b1",
            &c,
            Some("urn:uuid:p"),
            "2026-01-02T03:04:06.000Z",
        );
        let r = parse(&body).unwrap();
        assert_eq!(r.kind, Kind::Share);
        assert_eq!(r.to, "did:web:b.example:org:b1");
        assert_eq!(r.consignment, c.consignment);
        assert_eq!(r.policy.as_deref(), Some("urn:uuid:p"));
        let mut bad = body.clone();
        bad["object"]["consignment"]["aigId"] = json!("aig:xyz");
        assert!(parse(&bad).is_err());
        let mut bad = body.clone();
        bad["to"] = json!(["did:web:b.example:org:b1", "did:web:c.example:org:c1"]);
        assert!(parse(&bad).is_err());
        let mut undo = body.clone();
        undo["type"] = json!("Undo");
        assert_eq!(parse(&undo).unwrap().kind, Kind::Withdrawal);
        let mut bad = body;
        bad["type"] = json!("Delete");
        assert!(parse(&bad).is_err());
    }
}
