//! Which consignment a path id names for the caller, and which of its graphs the scope reads.

use super::*;

impl Views {
    /// Resolves a path id (globalId, identifier or `aig:` id) to a consignment the caller may
    /// read in `scope`: its own first (the spec: "the caller's own copy wins"), else the one
    /// consignment shared with it under that id. When several publishers' consignments shared
    /// with it carry the id, choosing one would let any of them take over the id (an agency
    /// reading, or adding its report to, another publisher's consignment): 409 listing them,
    /// to be named by aig id. 404 otherwise, with the same message whether or not the
    /// consignment exists.
    pub fn resolve(&self, caller: &Caller, scope: Scope, id: &str) -> Result<Visible> {
        let org = caller.organization.as_str();
        let mut rows = crate::store::index::by_any_id(&self.store, id)?;
        // Own records first, then those of this node's organisations, then those partner
        // nodes announced (their ids are the partner's word, and a partner may announce any
        // number under one id: they must not crowd this node's out of the answer); the index
        // answers each group newest first.
        rows.sort_by_key(|row| (row.publisher != org, self.sharing.is_remote(&row.publisher)));
        let mut visible: Vec<(Visible, String)> = Vec::new();
        for row in rows {
            let (graphs, remote) = self.scope_graphs(
                org,
                scope,
                &row.record,
                &row.aig,
                &row.publisher,
                &row.graph,
            )?;
            if graphs.is_empty() && remote.is_empty() {
                continue;
            }
            let own = row.publisher == org;
            visible.push((
                Visible {
                    record: row.record,
                    aig: row.aig,
                    graph: row.graph,
                    created: row.created,
                    updated: row.updated,
                    graphs,
                    remote,
                },
                row.publisher,
            ));
            if own || visible.len() == crate::store::index::MAX_MATCHES {
                break;
            }
        }
        let own = visible.first().is_some_and(|(_, p)| p == org);
        match visible.len() {
            0 => Err(Error::NotFound(NOT_FOUND.into())),
            1 => Ok(visible.remove(0).0),
            _ if own => Ok(visible.remove(0).0),
            _ => Err(ambiguous(
                id,
                visible.iter().map(|(v, p)| (v.aig.as_str(), p.as_str())),
            )),
        }
    }

    /// The contribution graphs of one consignment that `org` reads in `scope` (see the module
    /// docs), those held here and those partner nodes hold; both empty when it may read none.
    pub(super) fn scope_graphs(
        &self,
        org: &str,
        scope: Scope,
        record: &NamedNode,
        aig: &str,
        publisher: &str,
        publisher_graph: &NamedNode,
    ) -> Result<(Vec<NamedNode>, Vec<RemoteDataset>)> {
        let hex = aig.strip_prefix("aig:").unwrap_or(aig);
        let is_publisher = publisher == org;
        let contributors = self.sharing.contributors(record)?;
        let mut out = Vec::new();
        let mut remote = Vec::new();
        if scope.includes_own() && (is_publisher || contributors.iter().any(|c| c == org)) {
            out.push(graphs::contribution(hex, org));
        }
        if scope.includes_shared() && (is_publisher || self.sharing.is_shared_with(record, org)?) {
            let others = (!is_publisher)
                .then(|| (publisher, publisher_graph.clone()))
                .into_iter()
                .chain(
                    contributors
                        .iter()
                        .filter(|c| *c != org)
                        .map(|c| (c.as_str(), graphs::contribution(hex, c))),
                );
            for (owner, graph) in others {
                if self.sharing.is_remote(owner) {
                    remote.push(RemoteDataset {
                        provider: owner.to_owned(),
                        dataset: graph.into_string(),
                    });
                } else {
                    out.push(graph);
                }
            }
        }
        Ok((out, remote))
    }
}

/// The 409 for an id that names several publishers' consignments the caller may read.
pub fn ambiguous<'a>(id: &str, candidates: impl Iterator<Item = (&'a str, &'a str)>) -> Error {
    Error::Ambiguous {
        message: format!(
            "{id:?} names consignments of more than one publisher shared with your organisation; \
             name one by its aig id"
        ),
        candidates: candidates
            .map(|(aig, publisher)| serde_json::json!({"aigId": aig, "publisher": publisher}))
            .collect(),
    }
}
