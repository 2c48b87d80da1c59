//! A document found by its identifier across the caller's consignments
//! (`GET /documents/{documentId}` without `consignmentId`).
//!
//! Whoever adds a document chooses its identifier, so an organisation routed to the same
//! agency as another can add a document under the other's identifier. As with consignment ids
//! (`scope`), the node never chooses between publishers: the caller's own documents come
//! first (all of one publisher, the caller: the newest answers); without them, the documents
//! the caller reads in its circles — on each consignment the one that consignment's own read
//! answers, the consignment publisher's before other members' — answer only when one
//! organisation added them all. Several organisations' are a 409 listing each consignment
//! with the organisation whose document it holds there, to be named with `consignmentId`.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::documents::{document_part, NO_DOCUMENT};
use super::{instant, org_term, Part, Views};
use crate::auth::Caller;
use crate::consignment::Scope;
use crate::documents::LinkUse;
use crate::error::{Error, Result};
use crate::rdf::{literal, text};
use crate::store::Query;

/// A document under the id, on one consignment (its aig id).
struct Found {
    aig: String,
    part: Part,
}

impl Found {
    /// The organisation that added the document.
    fn publisher(&self) -> &str {
        self.part.contributor.as_deref().unwrap_or_default()
    }
}

/// What one rank of documents under an id answers.
enum Answer {
    Nothing,
    One(Box<Found>),
    /// Newest first, at most [`crate::store::index::MAX_MATCHES`].
    Several(Vec<Found>),
}

/// `found` in its query's order (on each consignment, the document its own read answers
/// first): one per consignment, newest first; the newest when one organisation added them
/// all, else every one.
fn answer(found: Vec<Found>) -> Answer {
    let mut consignments = HashSet::new();
    let mut kept: Vec<Found> = found
        .into_iter()
        .filter(|f| consignments.insert(f.aig.clone()))
        .collect();
    kept.sort_by_key(|f| std::cmp::Reverse(instant(&f.part.at)));
    let Some(newest) = kept.first() else {
        return Answer::Nothing;
    };
    if kept.iter().all(|f| f.publisher() == newest.publisher()) {
        return Answer::One(Box::new(kept.swap_remove(0)));
    }
    kept.truncate(crate::store::index::MAX_MATCHES);
    Answer::Several(kept)
}

/// The 409 for a document id that names documents of several organisations the caller reads.
fn ambiguous(document_id: &str, candidates: &[Found]) -> Error {
    Error::Ambiguous {
        message: format!(
            "{document_id:?} names documents of more than one organisation shared with yours; \
             name the consignment with consignmentId"
        ),
        candidates: candidates
            .iter()
            .map(|f| json!({"consignmentId": f.aig, "publisher": f.publisher()}))
            .collect(),
    }
}

impl Views {
    /// `GET /documents/{documentId}`: on one consignment, or searched across the caller's.
    pub fn find_document(
        &self,
        caller: &Caller,
        scope: Scope,
        document_id: &str,
        consignment: Option<&str>,
    ) -> Result<Value> {
        if let Some(id) = consignment {
            return self.document(caller, scope, id, document_id);
        }
        let ranks = [
            (scope.includes_own(), Query::DocumentById),
            (scope.includes_shared(), Query::SharedDocumentById),
        ];
        for (_, query) in ranks.into_iter().filter(|(wanted, _)| *wanted) {
            let bindings = [
                ("org", org_term(caller)),
                ("documentId", literal(document_id)),
            ];
            let found = self
                .queries
                .select(&self.store, query, &bindings)?
                .iter()
                .map(|row| Found {
                    aig: text(row, "aig").unwrap_or_default(),
                    part: document_part(row),
                })
                .collect();
            match answer(found) {
                Answer::Nothing => continue,
                Answer::One(found) => {
                    let Found { aig, part } = *found;
                    let org = caller.organization.as_str();
                    return Ok(self.attachment(&part, Some(aig), LinkUse::Single, org));
                }
                Answer::Several(all) => return Err(ambiguous(document_id, &all)),
            }
        }
        Err(Error::NotFound(NO_DOCUMENT.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(aig: &str, publisher: &str, at: &str) -> Found {
        Found {
            aig: aig.into(),
            part: Part {
                id: format!("urn:dataspace-node:document:{aig}-{publisher}"),
                at: at.into(),
                json: Value::Null,
                contributor: Some(publisher.into()),
                partner: None,
            },
        }
    }

    fn one(found: Vec<Found>) -> (String, String) {
        match answer(found) {
            Answer::One(f) => (f.aig.clone(), f.publisher().to_owned()),
            Answer::Nothing => panic!("nothing"),
            Answer::Several(all) => panic!("{} candidates", all.len()),
        }
    }

    fn several(found: Vec<Found>) -> Vec<(String, String)> {
        match answer(found) {
            Answer::Several(all) => all
                .iter()
                .map(|f| (f.aig.clone(), f.publisher().to_owned()))
                .collect(),
            _ => panic!("not ambiguous"),
        }
    }

    const T1: &str = "2026-11-27T10:00:00Z";
    const T2: &str = "2026-11-27T11:00:00Z";
    /// 11:30Z: later than both, though its text sorts first.
    const T3: &str = "2026-11-27T09:30:00-02:00";

    #[test]
    fn nothing_found_answers_nothing() {
        assert!(matches!(answer(Vec::new()), Answer::Nothing));
    }

    #[test]
    fn one_organisations_documents_answer_with_the_newest() {
        assert_eq!(one(vec![doc("c1", "a", T1)]), ("c1".into(), "a".into()));
        // The same organisation on two consignments: its newest, not a conflict.
        let found = vec![doc("c1", "a", T1), doc("c2", "a", T2)];
        assert_eq!(one(found), ("c2".into(), "a".into()));
    }

    #[test]
    fn several_organisations_documents_are_candidates_newest_first() {
        // The newer one is the squatter's: it is listed, never chosen.
        let found = vec![doc("ca", "a", T1), doc("cx", "x", T2)];
        assert_eq!(
            several(found),
            [("cx".into(), "x".into()), ("ca".into(), "a".into())]
        );
    }

    #[test]
    fn each_consignment_counts_with_the_document_its_own_read_answers() {
        // On c1 the publisher's document comes first in the query's order and hides the
        // other member's, as the consignment's own read does: one organisation, no conflict.
        let found = vec![doc("c1", "a", T1), doc("c1", "m", T2)];
        assert_eq!(one(found), ("c1".into(), "a".into()));
        // A consignment where only the other member added one stands beside it.
        let found = vec![doc("c1", "a", T1), doc("c1", "m", T2), doc("c2", "m", T3)];
        assert_eq!(
            several(found),
            [("c2".into(), "m".into()), ("c1".into(), "a".into())]
        );
    }

    #[test]
    fn candidates_are_capped() {
        let many = (0..80)
            .map(|i| doc(&format!("c{i}"), &format!("org{i}"), T1))
            .collect();
        assert_eq!(several(many).len(), crate::store::index::MAX_MATCHES);
    }
}
