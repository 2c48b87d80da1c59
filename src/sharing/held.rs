//! How many consignments each partner node shares with each organisation of this node, for
//! the cap `--federation-max-remote-records`: a partner may announce any number, and every one
//! is a record in the index, a row of the organisation's shared list and a notification.
//!
//! One counter per organisation and partner node, in the sharing graph, changed in the
//! transactions that put a partner's record in an organisation's circle or take it out (the
//! writer lock makes it exact); counting the organisation's shares at every notice would read
//! every consignment shared with it. A counter not written yet (the node's first share with the
//! organisation) is counted once from the memberships.

use oxigraph::model::{Literal, NamedNode};
use oxigraph::store::Transaction;

use crate::error::{Error, Result};
use crate::federation::did;
use crate::store::{graphs, replace_value};
use crate::vocab::dsn;

const HELD: &str = "remoteRecordsHeld";

/// Counts one more of `node`'s records in `org`'s circle, before it joins: refused when the
/// node holds the cap already (the caller's transaction then stores nothing).
pub(super) fn add(tx: &mut Transaction<'_>, org: &NamedNode, node: &str, cap: u64) -> Result<()> {
    let held = held(tx, org, node)?;
    if held >= cap {
        tracing::warn!(
            org = org.as_str(),
            node,
            held,
            "a partner node's share refused: over --federation-max-remote-records"
        );
        return Err(Error::Forbidden(format!(
            "this organisation holds {held} consignments of your node's organisations, the \
             most this node keeps records of for one partner node"
        )));
    }
    set(tx, org, node, held + 1)
}

/// Counts one of `node`'s records less in `org`'s circle, after it left.
pub(super) fn remove(tx: &mut Transaction<'_>, org: &NamedNode, node: &str) -> Result<()> {
    let counter = counter(org, node);
    let stored = crate::store::records::literal(tx, &counter, HELD, graphs::sharing().as_ref())?;
    let held = match stored.and_then(|n| n.parse::<u64>().ok()) {
        Some(n) => n.saturating_sub(1),
        // Counted after the membership went.
        None => count(tx, org, node)?,
    };
    set(tx, org, node, held)
}

/// The records of `node`'s organisations in `org`'s circle.
fn held(tx: &Transaction<'_>, org: &NamedNode, node: &str) -> Result<u64> {
    let counter = counter(org, node);
    let stored = crate::store::records::literal(tx, &counter, HELD, graphs::sharing().as_ref())?;
    match stored.and_then(|n| n.parse().ok()) {
        Some(n) => Ok(n),
        None => count(tx, org, node),
    }
}

/// Counts them from the memberships: every consignment shared with `org` whose publisher is an
/// organisation of `node`.
fn count(tx: &Transaction<'_>, org: &NamedNode, node: &str) -> Result<u64> {
    let sharing = graphs::sharing();
    let index = graphs::consignment_index();
    let shared_with = dsn("sharedWith");
    let mut n = 0;
    for quad in tx.quads_for_pattern(
        None,
        Some(shared_with.as_ref()),
        Some(org.as_ref().into()),
        Some(sharing.as_ref().into()),
    ) {
        let oxigraph::model::NamedOrBlankNode::NamedNode(record) = quad?.subject else {
            continue;
        };
        let publishers = crate::store::records::objects(tx, &record, "publisher", index.as_ref())?;
        if publishers.iter().any(|p| did::node_of(p) == Some(node)) {
            n += 1;
        }
    }
    Ok(n)
}

fn set(tx: &mut Transaction<'_>, org: &NamedNode, node: &str, held: u64) -> Result<()> {
    let value = Literal::new_typed_literal(held.to_string(), oxigraph::model::vocab::xsd::INTEGER);
    replace_value(
        tx,
        &counter(org, node),
        &dsn(HELD),
        value,
        &graphs::sharing(),
    )
}

/// The counter of `node`'s records held for `org`.
fn counter(org: &NamedNode, node: &str) -> NamedNode {
    graphs::minted(
        "remote-records-held",
        &format!(
            "{}:{}",
            graphs::org_key(org.as_str()),
            graphs::org_key(node)
        ),
    )
}
