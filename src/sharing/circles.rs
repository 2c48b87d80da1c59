//! Circle look-ups: who a consignment is shared with and who contributed to it.

use oxigraph::model::{GraphName, NamedNode};
use oxigraph::store::Transaction;

use super::{has, quad, Sharing};
use crate::error::Result;
use crate::store::graphs;
use crate::vocab::dsn;

impl Sharing {
    /// Is the consignment shared with `org` (is `org` in its circle, besides the publisher)?
    pub fn is_shared_with(&self, record: &NamedNode, org: &str) -> Result<bool> {
        let q = quad(
            record.clone(),
            dsn("sharedWith"),
            NamedNode::new_unchecked(org),
        );
        Ok(self.store.db().contains(&q)?)
    }

    /// Is the record with aig id bits `bits` shared with `org`? From memory, kept in commit
    /// order with the grants.
    pub fn shares_with(&self, org: &str, bits: u128) -> bool {
        self.shared.contains(org, bits)
    }

    /// The organisations other than the publisher that contributed to a consignment.
    pub fn contributors(&self, record: &NamedNode) -> Result<Vec<String>> {
        let g = GraphName::NamedNode(graphs::sharing());
        let p = dsn("contributor");
        crate::store::records::named_objects(
            self.store
                .db()
                .quads_for_pattern(
                    Some(record.as_ref().into()),
                    Some(p.as_ref()),
                    None,
                    Some(g.as_ref()),
                )
                .map(|q| q.map_err(Into::into)),
        )
    }

    /// Records `org` as a contributor of a consignment it does not publish; `true` when it
    /// had not contributed before.
    pub fn add_contributor(
        tx: &mut Transaction<'_>,
        record: &NamedNode,
        org: &str,
    ) -> Result<bool> {
        let q = quad(
            record.clone(),
            dsn("contributor"),
            NamedNode::new_unchecked(org),
        );
        let new = !has(tx, &q)?;
        if new {
            tx.insert(&q);
        }
        Ok(new)
    }
}
