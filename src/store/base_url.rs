//! The node's identity kept with its data: the first start records the base URL in the layout
//! graph (`dsn:baseUrl`). Every DID the node and its organisations have derives from it, and
//! stored policies, grants, notices and partners' records name those DIDs, so a node started
//! on the same data dir under another URL would write under DIDs nobody routes to. `serve`,
//! `load` and `import` refuse a different one unless `--change-base-url` says it is meant.

use oxigraph::model::{GraphName, Literal, NamedNode, Quad, Term};

use super::{graphs, Store};
use crate::error::{Error, Result};

fn predicate() -> NamedNode {
    crate::vocab::dsn("baseUrl")
}

fn quad(base_url: &str) -> Quad {
    Quad::new(
        graphs::layout(),
        predicate(),
        Literal::new_simple_literal(base_url),
        GraphName::NamedNode(graphs::layout()),
    )
}

/// The base URL recorded in `db`, if any.
pub fn recorded(db: &oxigraph::store::Store) -> Result<Option<String>> {
    Ok(match graphs::layout_value(db, &predicate())? {
        Some(Term::Literal(l)) => Some(l.value().to_owned()),
        _ => None,
    })
}

/// What to do when the data dir names another base URL than the one given.
fn refused(recorded: &str, given: &str) -> Error {
    Error::Unavailable(format!(
        "this data dir belongs to the node at {recorded}, not {given}: the DIDs of the node and \
         its organisations derive from the base URL, and stored policies, grants and partners \
         name them. Start with --base-url {recorded}, or pass --change-base-url to move the \
         node to {given} (its DIDs change: partners' policies and tokens naming the old ones \
         stop matching)"
    ))
}

/// Whether `given` must be recorded: there is none yet, or another is and `change` says the
/// move is meant; another without `change` is refused.
fn decide(recorded: Option<&str>, given: &str, change: bool) -> Result<bool> {
    match recorded {
        Some(r) if r == given => Ok(false),
        Some(r) if !change => Err(refused(r, given)),
        Some(r) => {
            tracing::warn!(from = %r, to = %given, "the node's base URL changes (--change-base-url): its DIDs change");
            Ok(true)
        }
        None => Ok(true),
    }
}

/// The quads that replace what `db` records by `base_url`.
fn old_quads(db: &oxigraph::store::Store) -> Result<Vec<Quad>> {
    let layout = graphs::layout();
    Ok(db
        .quads_for_pattern(
            Some(layout.as_ref().into()),
            Some(predicate().as_ref()),
            None,
            Some(layout.as_ref().into()),
        )
        .collect::<std::result::Result<_, _>>()?)
}

/// Checks `base_url` against what a store opened alone (`import`) records, as
/// [`Store::check_base_url`] does.
pub fn check_in(db: &oxigraph::store::Store, base_url: &str, change: bool) -> Result<()> {
    if decide(recorded(db)?.as_deref(), base_url, change)? {
        let mut tx = db.start_transaction()?;
        for q in old_quads(db)? {
            tx.remove(&q);
        }
        tx.insert(&quad(base_url));
        tx.commit()?;
    }
    Ok(())
}

impl Store {
    /// Checks `base_url` against the one the data dir records: the same, or recorded now when
    /// there is none; another → refused, unless `change` (then recorded, and logged).
    /// Blocking; at start-up, before anything writes under the node's DIDs.
    pub fn check_base_url(&self, base_url: &str, change: bool) -> Result<()> {
        if decide(recorded(&self.db)?.as_deref(), base_url, change)? {
            self.rewrite(&old_quads(&self.db)?, &[quad(base_url)])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_base_url_is_kept_and_another_refused_unless_meant() {
        let db = oxigraph::store::Store::new().unwrap();
        check_in(&db, "https://a.example", false).unwrap();
        check_in(&db, "https://a.example", false).unwrap();
        let e = check_in(&db, "https://b.example", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("https://a.example") && e.contains("https://b.example"),
            "{e}"
        );
        assert_eq!(recorded(&db).unwrap().as_deref(), Some("https://a.example"));
        check_in(&db, "https://b.example", true).unwrap();
        assert_eq!(recorded(&db).unwrap().as_deref(), Some("https://b.example"));
        assert_eq!(db.len().unwrap(), 1);
    }
}
