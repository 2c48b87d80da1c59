//! Rewrites grants and notifications stored in the earlier, wider layout (a grant node with
//! three quads; a notification with a recipient quad and a JSON quad) into the one-quad forms
//! routing writes now, so a data dir from an earlier version keeps every grant revocable and
//! every notification listed. Runs at start-up; a store already in the current layout costs
//! two empty look-ups.

use oxigraph::model::{GraphName, Quad, Term};

use crate::error::Result;
use crate::store::Query;
use crate::store::{graphs, Queries, Store};
use crate::vocab::dsn;

/// Returns how many grants and notifications were rewritten. Blocking.
pub fn run(store: &Store, queries: &Queries) -> Result<(usize, usize)> {
    store.write(|tx| {
        let sharing = GraphName::NamedNode(graphs::sharing());
        let grants = queries.select_in(tx, Query::LegacyGrants, &[])?;
        for row in &grants {
            let (
                Some(Term::NamedNode(grant)),
                Some(Term::NamedNode(record)),
                Some(Term::NamedNode(org)),
                Some(Term::NamedNode(policy)),
            ) = (
                row.get("grant"),
                row.get("record"),
                row.get("org"),
                row.get("policy"),
            )
            else {
                continue;
            };
            tx.insert(&Quad::new(
                record.clone(),
                dsn("sharedWith"),
                org.clone(),
                GraphName::NamedNode(graphs::grants(policy.as_str())),
            ));
            for (p, o) in [
                ("grantee", org.clone()),
                ("consignment", record.clone()),
                ("policy", policy.clone()),
            ] {
                tx.remove(&Quad::new(grant.clone(), dsn(p), o, sharing.clone()));
            }
        }
        let notifications = queries.select_in(tx, Query::LegacyNotifications, &[])?;
        for row in &notifications {
            let (
                Some(Term::NamedNode(graph)),
                Some(Term::NamedNode(n)),
                Some(Term::NamedNode(org)),
                Some(json),
            ) = (
                row.get("graph"),
                row.get("notification"),
                row.get("org"),
                row.get("json"),
            )
            else {
                continue;
            };
            let g = GraphName::NamedNode(graph.clone());
            tx.insert(&Quad::new(
                n.clone(),
                dsn("notice"),
                json.clone(),
                g.clone(),
            ));
            tx.remove(&Quad::new(
                n.clone(),
                dsn("recipient"),
                org.clone(),
                g.clone(),
            ));
            tx.remove(&Quad::new(n.clone(), dsn("json"), json.clone(), g));
        }
        if !grants.is_empty() || !notifications.is_empty() {
            tracing::info!(
                grants = grants.len(),
                notifications = notifications.len(),
                "grants and notifications rewritten into the one-quad layout"
            );
        }
        Ok((grants.len(), notifications.len()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxigraph::model::{Literal, NamedNode};

    fn q(s: &str, p: &str, o: Term, g: &NamedNode) -> Quad {
        Quad::new(
            NamedNode::new_unchecked(s),
            dsn(p),
            o,
            GraphName::NamedNode(g.clone()),
        )
    }

    #[test]
    fn earlier_layout_is_rewritten_once_and_nothing_else_changes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let queries = Queries::load().unwrap();
        let sharing = graphs::sharing();
        let org = "did:web:node.example:org:agency";
        let record = "urn:dataspace-node:consignment:00ff";
        let inbox = graphs::notifications(org);
        let json = Term::Literal(Literal::new_typed_literal(
            r#"{"id":"7","type":"ConsignmentShared"}"#,
            NamedNode::new_unchecked(crate::vocab::RDF_JSON),
        ));
        let node = |s: &str| Term::NamedNode(NamedNode::new_unchecked(s));
        let old = [
            q("urn:dataspace-node:grant:1", "grantee", node(org), &sharing),
            q(
                "urn:dataspace-node:grant:1",
                "consignment",
                node(record),
                &sharing,
            ),
            q(
                "urn:dataspace-node:grant:1",
                "policy",
                node("urn:uuid:p1"),
                &sharing,
            ),
            q(
                "urn:dataspace-node:notification:7",
                "recipient",
                node(org),
                &inbox,
            ),
            q(
                "urn:dataspace-node:notification:7",
                "json",
                json.clone(),
                &inbox,
            ),
        ];
        let member = q(record, "sharedWith", node(org), &sharing);
        store
            .write(|tx| {
                for quad in old.iter().chain([&member]) {
                    tx.insert(quad);
                }
                Ok(())
            })
            .unwrap();

        assert_eq!(run(&store, &queries).unwrap(), (1, 1));
        for quad in &old {
            assert!(!store.db().contains(quad).unwrap(), "{quad} left behind");
        }
        assert!(store.db().contains(&member).unwrap());
        let grant = q(
            record,
            "sharedWith",
            node(org),
            &graphs::grants("urn:uuid:p1"),
        );
        assert!(store.db().contains(&grant).unwrap());
        let notice = q("urn:dataspace-node:notification:7", "notice", json, &inbox);
        assert!(store.db().contains(&notice).unwrap());
        assert_eq!(store.db().len().unwrap(), 3);

        assert_eq!(run(&store, &queries).unwrap(), (0, 0));
        let loaded = super::super::notifications::Notifications::load(&store, &queries).unwrap();
        assert_eq!(loaded.page(org, None, 10), vec![7]);
        assert_eq!(loaded.latest(org), 7);
    }
}
