//! The SPARQL the node runs. Each query is a file in `queries/`, compiled into the binary,
//! parsed once at start-up, and run with its inputs bound as variables (never spliced in).

use std::collections::HashMap;

use oxigraph::model::{Term, Variable};
use oxigraph::sparql::{PreparedSparqlQuery, QueryResults, QuerySolution, SparqlEvaluator};
use oxigraph::store::Transaction;

use super::Store;
use crate::error::{Error, Result};

macro_rules! queries {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// The node's queries, one per file of `queries/`: callers name them by this type, so a
        /// misspelt or missing query is a compile error, not a failure at run time.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Query {
            $($variant),*
        }

        impl Query {
            pub const ALL: &'static [Query] = &[$(Query::$variant),*];

            /// The file name in `queries/`, without `.rq`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Query::$variant => $name),*
                }
            }

            fn text(self) -> &'static str {
                match self {
                    $(Query::$variant => include_str!(concat!("../../queries/", $name, ".rq"))),*
                }
            }
        }
    };
}

queries! {
    UserByEmail => "user_by_email",
    OrganizationKeys => "organization_keys",
    OrganizationExists => "organization_exists",
    OrganizationUsers => "organization_users",
    ConsignmentByKey => "consignment_by_key",
    ConsignmentSharedByKey => "consignment_shared_by_key",
    ConsignmentRecords => "consignment_records",
    ConsignmentSummary => "consignment_summary",
    DocumentsPage => "documents_page",
    SharedDocumentsPage => "shared_documents_page",
    DocumentById => "document_by_id",
    SharedDocumentById => "shared_document_by_id",
    BlobReadable => "blob_readable",
    Policies => "policies",
    GrantsOfPolicy => "grants_of_policy",
    GrantRemains => "grant_remains",
    SharedRecords => "shared_records",
    NotificationNumbers => "notification_numbers",
    DocumentCurrent => "document_current",
    Attestation => "attestation",
    ConsignmentHistory => "consignment_history",
    RevisionAt => "revision_at",
    ConsignmentPartsAt => "consignment_parts_at",
    NewestUpdate => "newest_update",
}

pub struct Queries {
    prepared: HashMap<Query, PreparedSparqlQuery>,
}

impl Queries {
    /// Parses every query; a syntax error names the file.
    pub fn load() -> Result<Self> {
        let mut prepared = HashMap::new();
        for &q in Query::ALL {
            let parsed = SparqlEvaluator::new()
                .parse_query(q.text())
                .map_err(|e| Error::internal(format!("queries/{}.rq: {e}", q.name())))?;
            prepared.insert(q, parsed);
        }
        Ok(Self { prepared })
    }

    /// The named query with `bindings` substituted, ready to run on a store or transaction.
    pub fn bind(&self, name: Query, bindings: &[(&str, Term)]) -> Result<PreparedSparqlQuery> {
        let mut query = self
            .prepared
            .get(&name)
            .ok_or_else(|| Error::internal(format!("query {} not loaded", name.name())))?
            .clone();
        for (var, term) in bindings {
            query = query.substitute_variable(Variable::new_unchecked(*var), term.clone());
        }
        Ok(query)
    }

    /// Runs a SELECT query on the committed store and hands each solution to `visit` until it
    /// answers `false` (so a page stops reading once it is full). Blocking.
    pub fn each(
        &self,
        store: &Store,
        name: Query,
        bindings: &[(&str, Term)],
        mut visit: impl FnMut(QuerySolution) -> bool,
    ) -> Result<()> {
        match self.bind(name, bindings)?.on_store(store.db()).execute()? {
            QueryResults::Solutions(solutions) => {
                for solution in solutions {
                    if !visit(solution?) {
                        break;
                    }
                }
                Ok(())
            }
            _ => Err(Error::internal(format!(
                "query {} is not a SELECT",
                name.name()
            ))),
        }
    }

    /// Runs a SELECT query with `bindings` on the committed store. Blocking.
    pub fn select(
        &self,
        store: &Store,
        name: Query,
        bindings: &[(&str, Term)],
    ) -> Result<Vec<QuerySolution>> {
        solutions(self.bind(name, bindings)?.on_store(store.db()).execute()?)
    }

    /// Runs an ASK query with `bindings` on the committed store. Blocking.
    pub fn ask(&self, store: &Store, name: Query, bindings: &[(&str, Term)]) -> Result<bool> {
        boolean(self.bind(name, bindings)?.on_store(store.db()).execute()?)
    }

    /// Runs an ASK query with `bindings` inside a write transaction (sees its own writes).
    pub fn ask_in(
        &self,
        tx: &Transaction<'_>,
        name: Query,
        bindings: &[(&str, Term)],
    ) -> Result<bool> {
        boolean(self.bind(name, bindings)?.on_transaction(tx).execute()?)
    }

    /// Runs a SELECT query with `bindings` inside a write transaction.
    pub fn select_in(
        &self,
        tx: &Transaction<'_>,
        name: Query,
        bindings: &[(&str, Term)],
    ) -> Result<Vec<QuerySolution>> {
        solutions(self.bind(name, bindings)?.on_transaction(tx).execute()?)
    }
}

fn solutions(results: QueryResults<'_>) -> Result<Vec<QuerySolution>> {
    match results {
        QueryResults::Solutions(solutions) => Ok(solutions.collect::<Result<Vec<_>, _>>()?),
        _ => Err(Error::internal("expected a SELECT query")),
    }
}

fn boolean(results: QueryResults<'_>) -> Result<bool> {
    match results {
        QueryResults::Boolean(b) => Ok(b),
        _ => Err(Error::internal("expected an ASK query")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Substituted variables are seen by FILTERs, but `BOUND(?v)` of a variable the pattern
    /// never binds is folded to false by the optimizer: queries must not test for it.
    #[test]
    fn substituted_variables_reach_filters() {
        use oxigraph::model::{GraphNameRef, Literal, LiteralRef, NamedNodeRef, QuadRef};
        let store = oxigraph::store::Store::new().unwrap();
        for i in 0..5 {
            let s = format!("urn:r{i}");
            let v = i.to_string();
            store
                .insert(QuadRef::new(
                    NamedNodeRef::new(&s).unwrap(),
                    NamedNodeRef::new("urn:p").unwrap(),
                    LiteralRef::new_typed_literal(&v, oxigraph::model::vocab::xsd::INTEGER),
                    GraphNameRef::DefaultGraph,
                ))
                .unwrap();
        }
        let count = |q: &str| match SparqlEvaluator::new()
            .parse_query(q)
            .unwrap()
            .substitute_variable(Variable::new_unchecked("after"), Literal::from(2))
            .on_store(&store)
            .execute()
            .unwrap()
        {
            QueryResults::Solutions(s) => s.count(),
            _ => unreachable!(),
        };
        assert_eq!(
            count("SELECT ?after ?v WHERE { ?s <urn:p> ?v FILTER(?v < ?after) }"),
            2
        );
        assert_eq!(
            count("SELECT ?after ?v WHERE { ?s <urn:p> ?v FILTER(!BOUND(?after) || ?v < ?after) }"),
            5
        );
    }

    #[test]
    fn every_query_file_is_registered_and_parses() {
        Queries::load().expect("all queries parse");
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/queries");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                name.strip_suffix(".rq").map(str::to_owned)
            })
            .collect();
        on_disk.sort();
        let mut registered: Vec<String> = Query::ALL.iter().map(|q| q.name().to_string()).collect();
        registered.sort();
        assert_eq!(on_disk, registered);
    }
}
