//! Which consignment a path id names for the caller, and which of its graphs the scope reads.

use super::*;

impl Views {
    /// Resolves a path id (globalId, identifier or `aig:` id) to a consignment the caller may
    /// read in `scope`. Candidates rank the caller's own first (the spec: "the caller's own
    /// copy wins"), then those of this node's organisations, then those partner nodes
    /// announced — a partner's ids are its word, and it may announce any number under an id
    /// this node's publishers use: they must neither crowd the real one out nor make it
    /// ambiguous. The id names the first rank holding any: its one consignment (the newest of
    /// the caller's own); several publishers' in that rank are a 409 listing them, to be named
    /// by aig id — choosing one would let any of them take over the id. 404 otherwise, with
    /// the same message whether or not the consignment exists.
    pub fn resolve(&self, caller: &Caller, scope: Scope, id: &str) -> Result<Visible> {
        let org = caller.organization.as_str();
        let rank = |publisher: &str| match publisher {
            p if p == org => 0,
            p if !self.sharing.is_remote(p) => 1,
            _ => 2,
        };
        let mut rows = crate::store::index::by_any_id(&self.store, id)?;
        // Stable: the index answers each rank newest first.
        rows.sort_by_key(|row| rank(&row.publisher));
        let mut found: Option<usize> = None;
        let mut visible: Vec<(Visible, String)> = Vec::new();
        for row in rows {
            let row_rank = rank(&row.publisher);
            if found.is_some_and(|r| r < row_rank) {
                break;
            }
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
            found = Some(row_rank);
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
            if row_rank == 0 || visible.len() == crate::store::index::MAX_MATCHES {
                break;
            }
        }
        match visible.len() {
            0 => Err(Error::NotFound(NOT_FOUND.into())),
            1 => Ok(visible.remove(0).0),
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
