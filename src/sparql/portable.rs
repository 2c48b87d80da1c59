//! The query as the replica gets it: isolated exactly as for the store, in standard SPARQL.

use super::{isolate, markers, readable_markers, refused, Graphs, Parsed, Protocol, Sparql};
use crate::auth::Caller;
use crate::consignment::Scope;
use crate::error::Result;

impl Sparql {
    /// `parsed` isolated for `caller` as [`Sparql::run`] isolates it, in standard SPARQL for
    /// the replica: graph checks against the markers (or the `FROM` lists) instead of the
    /// node's functions, no guard functions (the replica has its own limits; the caller's
    /// time limit is the request's), and a SELECT cut one row past the cap.
    pub fn portable(
        &self,
        caller: &Caller,
        scope: Scope,
        parsed: &Parsed,
        protocol: &Protocol,
    ) -> Result<String> {
        let (default, named) = self.datasets(caller, scope, &parsed.query, protocol);
        let check = |set: &Graphs| match set {
            Graphs::Readable(r) => isolate::Portable::Markers(markers(r)),
            Graphs::Listed(list) => {
                let mut list: Vec<&String> = list.iter().collect();
                list.sort();
                isolate::Portable::Listed(
                    list.into_iter()
                        .map(spargebra::term::NamedNode::new_unchecked)
                        .collect(),
                )
            }
        };
        let sources = isolate::Sources {
            default: readable_markers(&default),
            named: readable_markers(&named),
            portable: Some((check(&default), check(&named))),
        };
        let query = isolate::rewrite(parsed.query.clone(), &|g| named.contains(g), &sources)
            .map_err(refused)?;
        Ok(capped(query, self.max_rows + 1).to_string())
    }
}

/// Virtuoso's default `MaxSortedTopRows`: it refuses to sort for a larger LIMIT.
const MAX_SORTED_TOP_ROWS: usize = 10_000;

/// A SELECT answering at most `limit` rows (its own LIMIT kept when smaller). An ordered one
/// only when `limit` is within Virtuoso's `MaxSortedTopRows`; above, its rows are counted as
/// they come, and the answer read under a byte cap (`replica::query`).
fn capped(query: spargebra::Query, limit: usize) -> spargebra::Query {
    use spargebra::algebra::GraphPattern;
    fn ordered(p: &GraphPattern) -> bool {
        match p {
            GraphPattern::OrderBy { .. } => true,
            GraphPattern::Slice { inner, .. }
            | GraphPattern::Distinct { inner }
            | GraphPattern::Reduced { inner }
            | GraphPattern::Project { inner, .. } => ordered(inner),
            _ => false,
        }
    }
    let spargebra::Query::Select {
        dataset,
        pattern,
        base_iri,
    } = query
    else {
        return query;
    };
    if ordered(&pattern) && limit > MAX_SORTED_TOP_ROWS {
        return spargebra::Query::Select {
            dataset,
            pattern,
            base_iri,
        };
    }
    let pattern = match pattern {
        GraphPattern::Slice {
            inner,
            start,
            length,
        } => GraphPattern::Slice {
            inner,
            start,
            length: Some(length.map_or(limit, |l| l.min(limit))),
        },
        other => GraphPattern::Slice {
            inner: Box::new(other),
            start: 0,
            length: Some(limit),
        },
    };
    spargebra::Query::Select {
        dataset,
        pattern,
        base_iri,
    }
}
