//! Consignment records in the system index, as the write transaction sees them.

use oxigraph::model::{GraphNameRef, NamedNode, NamedOrBlankNode, QuadRef, Term};
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
    /// One of the caller organisation's own consignments, by globalId, identifier or aig id
    /// (`aig:<hex>`): what `queries/consignment_by_key.rq` answers first, read as quad
    /// patterns because every Create and Update looks up two or three keys in its
    /// transaction and the SPARQL engine's evaluation was ~0.4 ms of each look-up (measured
    /// with the inbox; the patterns take a fraction of that). The record must carry every
    /// fact the query asks for.
    pub(super) fn lookup(&self, tx: &Transaction<'_>, key: &str) -> Result<Option<Record>> {
        let index = graphs::consignment_index();
        let graph = GraphNameRef::NamedNode(index.as_ref());
        let key_text = key;
        let key = literal(key);
        let org = NamedNode::new_unchecked(self.org());
        let publisher = dsn("publisher");
        let ids: &[&str] = if graphs::is_aig_id(key_text) {
            &["aigId"]
        } else {
            &["globalId", "identifier", "aigId"]
        };
        for by in ids {
            let by = dsn(by);
            let matches =
                tx.quads_for_pattern(None, Some(by.as_ref()), Some(key.as_ref()), Some(graph));
            for quad in matches {
                let NamedOrBlankNode::NamedNode(record) = quad?.subject else {
                    continue;
                };
                let own = QuadRef::new(&record, &publisher, &org, graph);
                if !tx.contains(own)? {
                    continue;
                }
                if let Some(found) = self.record_facts(tx, &record, graph)? {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    }

    /// The record's ids, when it has all the index facts a record is written with.
    fn record_facts(
        &self,
        tx: &Transaction<'_>,
        record: &NamedNode,
        graph: GraphNameRef<'_>,
    ) -> Result<Option<Record>> {
        let (mut aig, mut global_id, mut identifier, mut has_graph) = (None, None, None, false);
        for quad in tx.quads_for_pattern(Some(record.as_ref().into()), None, None, Some(graph)) {
            let quad = quad?;
            let Some(name) = quad.predicate.as_str().strip_prefix(crate::vocab::DSN) else {
                continue;
            };
            let value = match &quad.object {
                Term::Literal(l) => l.value().to_owned(),
                Term::NamedNode(n) => n.as_str().to_owned(),
                _ => continue,
            };
            match name {
                "aigId" => aig = Some(value),
                "globalId" => global_id = Some(value),
                "identifier" => identifier = Some(value),
                "graph" => has_graph = true,
                _ => {}
            }
        }
        let (Some(aig), Some(global_id), Some(identifier), true) =
            (aig, global_id, identifier, has_graph)
        else {
            return Ok(None);
        };
        Ok(Some(Record {
            publisher: self.org().to_owned(),
            aig_hex: aig.strip_prefix("aig:").unwrap_or(&aig).to_owned(),
            global_id,
            identifier,
        }))
    }

    /// The consignments other organisations shared with the caller's, by globalId, identifier
    /// or aig id (at most one per record), of the first rank that holds any: this node's
    /// organisations', else those partner nodes announced (a partner may announce any number
    /// under one id: they must neither crowd the real one out of the candidates nor make it
    /// ambiguous), newest first; at most 50, as the reads answer.
    pub(super) fn lookup_shared(&self, tx: &Transaction<'_>, key: &str) -> Result<Vec<Record>> {
        let rows = self.queries.select_in(
            tx,
            Query::ConsignmentSharedByKey,
            &[
                ("org", NamedNode::new_unchecked(self.org()).into()),
                ("key", literal(key)),
            ],
        )?;
        let mut found: Vec<(bool, std::cmp::Reverse<i64>, Record)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for row in &rows {
            let Some(record) = self.record_of(row) else {
                continue;
            };
            if seen.insert(record.aig_hex.clone()) {
                let created = text(row, "created")
                    .as_deref()
                    .and_then(crate::consignment::listing::millis)
                    .unwrap_or(i64::MIN);
                let remote = self.sharing.is_remote(&record.publisher);
                found.push((remote, std::cmp::Reverse(created), record));
            }
        }
        found.sort_by(|a, b| (a.0, a.1, &a.2.aig_hex).cmp(&(b.0, b.1, &b.2.aig_hex)));
        if let Some(first_rank) = found.first().map(|f| f.0) {
            found.retain(|f| f.0 == first_rank);
        }
        found.truncate(crate::store::index::MAX_MATCHES);
        Ok(found.into_iter().map(|(_, _, record)| record).collect())
    }

    /// A record of a look-up's answer (its publisher the caller when the query leaves it out).
    fn record_of(&self, row: &oxigraph::sparql::QuerySolution) -> Option<Record> {
        let aig = text(row, "aig")?;
        Some(Record {
            publisher: text(row, "publisher").unwrap_or_else(|| self.org().to_owned()),
            aig_hex: aig.strip_prefix("aig:").unwrap_or(&aig).to_owned(),
            global_id: text(row, "globalId")?,
            identifier: text(row, "identifier")?,
        })
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
