//! Consignment records in the system index, as the write transaction sees them.

use oxigraph::model::{NamedNode, Term};
use oxigraph::store::Transaction;

use super::writer::subject_quads;
use super::Apply;
use crate::consignment::ConsignmentRef;
use crate::error::Result;
use crate::rdf::{literal, text};
use crate::store::graphs;
use crate::store::Query;
use crate::vocab::dsn;

/// A consignment record from the system index.
pub(super) type Record = ConsignmentRef;

impl Apply<'_> {
    /// One of the caller organisation's own consignments, by globalId or identifier.
    pub(super) fn lookup(&self, tx: &Transaction<'_>, key: &str) -> Result<Option<Record>> {
        Ok(self
            .find(tx, Query::ConsignmentByKey, key)?
            .into_iter()
            .next())
    }

    /// The consignments other organisations shared with the caller's, by globalId, identifier
    /// or aig id (at most one per record).
    pub(super) fn lookup_shared(&self, tx: &Transaction<'_>, key: &str) -> Result<Vec<Record>> {
        let mut found: Vec<Record> = Vec::new();
        for record in self.find(tx, Query::ConsignmentSharedByKey, key)? {
            if !found.iter().any(|r| r.aig_hex == record.aig_hex) {
                found.push(record);
            }
        }
        Ok(found)
    }

    fn find(&self, tx: &Transaction<'_>, query: Query, key: &str) -> Result<Vec<Record>> {
        let rows = self.queries.select_in(
            tx,
            query,
            &[
                ("org", NamedNode::new_unchecked(self.org()).into()),
                ("key", literal(key)),
            ],
        )?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let aig = text(row, "aig")?;
                Some(Record {
                    publisher: text(row, "publisher").unwrap_or_else(|| self.org().to_owned()),
                    aig_hex: aig.strip_prefix("aig:").unwrap_or(&aig).to_owned(),
                    global_id: text(row, "globalId")?,
                    identifier: text(row, "identifier")?,
                })
            })
            .collect())
    }

    pub(super) fn created_of(&self, tx: &Transaction<'_>, record: &Record) -> Result<String> {
        let found = subject_quads(
            tx,
            &record.node(),
            Some(&dsn("created")),
            &graphs::consignment_index(),
        )?
        .into_iter()
        .next();
        Ok(match found.map(|q| q.object) {
            Some(Term::Literal(l)) => l.value().to_owned(),
            _ => crate::consignment::now(),
        })
    }
}
