//! Names of the named graphs the node keeps.
//!
//! System graphs (`urn:dataspace-node:system:*`) hold accounts, keys, policies' internals and
//! logs. No read path or caller query is ever given one of them: a caller's dataset is always
//! built from an explicit list of contribution graphs, never from "all graphs".

use oxigraph::model::NamedNode;

const SYSTEM: &str = "urn:dataspace-node:system:";

/// Organisations, users (argon2id password hashes) and API key hashes.
pub fn accounts() -> NamedNode {
    NamedNode::new_unchecked(format!("{SYSTEM}accounts"))
}

/// Sessions ended before their expiry (a logout), each until its expiry.
pub fn ended_sessions() -> NamedNode {
    NamedNode::new_unchecked(format!("{SYSTEM}sessions"))
}

/// Dataspace Protocol negotiations and transfers, one JSON state each.
pub fn dsp() -> NamedNode {
    NamedNode::new_unchecked(format!("{SYSTEM}dsp"))
}

/// Who changed which key, user, role or policy, and when.
pub fn audit() -> NamedNode {
    NamedNode::new_unchecked(format!("{SYSTEM}audit"))
}

pub fn is_system(iri: &str) -> bool {
    iri.starts_with(SYSTEM)
}

/// The node's index of consignment records (publisher, globalId, identifier, aig id, graph):
/// bookkeeping for look-ups, never part of a caller's dataset.
pub fn consignment_index() -> NamedNode {
    NamedNode::new_unchecked(format!("{SYSTEM}consignments"))
}

/// Circle membership (`<record> dsn:sharedWith <org>`, present while any grant shares the
/// record with the organisation) and co-contributors (`dsn:contributor`) of consignment records.
pub fn sharing() -> NamedNode {
    NamedNode::new_unchecked(format!("{SYSTEM}sharing"))
}

const GRANTS: &str = "urn:dataspace-node:system:grants:";

/// The grants one policy gave, one quad each (`<record> dsn:sharedWith <org>`): the policy is
/// the graph, so a grant costs one write when routing and deleting the policy finds its grants
/// by graph.
pub fn grants(uid: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{GRANTS}{}", uid_key(uid)))
}

fn uid_key(uid: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(uid.as_bytes())[..16])
}

/// The contribution graphs organisation `org_did` may read, as markers the SPARQL endpoint
/// joins with (`sharing::readable`), named by [`org_key`].
pub fn readable(org_did: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{SYSTEM}readable:{}", uid_key(org_did)))
}

/// Where the markers' own bookkeeping is kept.
pub fn readable_root() -> NamedNode {
    NamedNode::new_unchecked(format!("{SYSTEM}readable"))
}

/// One ODRL policy, in a graph of its own so deleting it is dropping the graph.
pub fn policy(uid: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{SYSTEM}policy:{}", uid_key(uid)))
}

/// The notifications an organisation received.
pub fn notifications(org_did: &str) -> NamedNode {
    NamedNode::new_unchecked(format!(
        "urn:dataspace-node:notifications:{}",
        org_key(org_did)
    ))
}

/// The key of an organisation in graph and node names: a hash of its whole DID. Two
/// organisations of different nodes may share an id segment (`…:org:<id>`); their graphs must
/// not.
pub fn org_key(org_did: &str) -> String {
    uid_key(org_did)
}

/// Where the store's layout version is kept.
pub fn layout() -> NamedNode {
    NamedNode::new_unchecked(format!("{SYSTEM}layout"))
}

/// The one value of `dsn:<property>` in the layout graph of `db`, if any (`db` may be a store
/// opened alone, as `import` does).
pub fn layout_value(
    db: &oxigraph::store::Store,
    property: &NamedNode,
) -> Result<Option<oxigraph::model::Term>, oxigraph::store::StorageError> {
    let layout = layout();
    Ok(db
        .quads_for_pattern(
            Some(layout.as_ref().into()),
            Some(property.as_ref()),
            None,
            Some(layout.as_ref().into()),
        )
        .next()
        .transpose()?
        .map(|q| q.object))
}

/// One organisation's contribution to one consignment: the description (publisher) or the
/// events and documents it added, with the derived facts the views read.
pub fn contribution(aig_hex: &str, org_did: &str) -> NamedNode {
    NamedNode::new_unchecked(format!(
        "urn:dataspace-node:contribution:{aig_hex}:{}",
        org_key(org_did)
    ))
}

/// An organisation's activities (with generator and trust credential) and activity log.
pub fn activities(org_did: &str) -> NamedNode {
    NamedNode::new_unchecked(format!(
        "urn:dataspace-node:activities:{}",
        org_key(org_did)
    ))
}

/// The consignment's aig hex and the organisation key of a contribution graph's name.
pub fn parse_contribution(iri: &str) -> Option<(&str, &str)> {
    iri.strip_prefix("urn:dataspace-node:contribution:")?
        .split_once(':')
}

/// The consignment node (root of the stored description).
pub fn consignment(aig_hex: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("urn:dataspace-node:consignment:{aig_hex}"))
}

/// The aig hex of a consignment node (the inverse of [`consignment`]).
pub fn consignment_hex(iri: &str) -> Option<&str> {
    iri.strip_prefix("urn:dataspace-node:consignment:")
}

/// Whether an id has the form of the node's own ids (`aig:` and 32 lowercase hexadecimal
/// digits, as the node mints them and lowers partners'): such
/// an id names only the record the node minted it for, never a consignment whose publisher
/// chose that text as its identifier or globalId (which would otherwise stand beside another
/// publisher's consignment wherever the aig id is resolved). The queries that resolve ids
/// apply the same rule (`queries/consignment_by_key.rq`, `consignment_shared_by_key.rq`).
pub fn is_aig_id(key: &str) -> bool {
    key.strip_prefix("aig:").is_some_and(|hex| {
        hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The node holding a consignment's derived summary facts.
pub fn summary(aig_hex: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("urn:dataspace-node:summary:{aig_hex}"))
}

/// Nodes the node mints: `event`, `document`, `system-event`, `activity`, `activity-log`.
pub fn minted(kind: &str, id: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("urn:dataspace-node:{kind}:{id}"))
}

/// IRIs the node mints start with this; a walk over a payload's nodes stops at them.
pub const MINTED_PREFIX: &str = "urn:dataspace-node:";

#[cfg(test)]
mod tests {
    use super::is_aig_id;

    #[test]
    fn the_aig_form_is_the_prefix_and_32_hex_digits() {
        assert!(is_aig_id("aig:0123456789abcdef0123456789abcdef"));
        for not in [
            "aig:0123456789abcdef0123456789ABCDEF",
            "aig:0123456789abcdef0123456789abcde",
            "aig:0123456789abcdef0123456789abcdef0",
            "aig:0123456789abcdef0123456789abcdeg",
            "0123456789abcdef0123456789abcdef",
            "AIG:0123456789abcdef0123456789abcdef",
            "aig:",
        ] {
            assert!(!is_aig_id(not), "{not}");
        }
    }
}
