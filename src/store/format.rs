//! The data dir's format: one number in the layout graph (`dsn:dataDirFormat`), written by the
//! first start. A node refuses a data dir of a newer format than its own, naming both (an
//! older node would misread it); an older one is brought up to date by the upgrades
//! registered in [`UPGRADES`], in order, each in one step, the number written after it. This
//! release's layout is format 1, the first: no upgrade is registered yet.

use oxigraph::model::{GraphName, Literal, NamedNode, Quad, Term};

use super::{graphs, Store};
use crate::error::{Error, Result};

/// The format this node writes.
pub const FORMAT: u32 = 1;

/// An upgrade from format `from` to `from + 1`.
pub struct Upgrade {
    pub from: u32,
    pub run: fn(&Store) -> Result<()>,
}

/// The registered upgrades, by the format they start from.
pub const UPGRADES: &[Upgrade] = &[];

fn predicate() -> NamedNode {
    crate::vocab::dsn("dataDirFormat")
}

fn quad(format: u32) -> Quad {
    Quad::new(
        graphs::layout(),
        predicate(),
        Literal::from(i64::from(format)),
        GraphName::NamedNode(graphs::layout()),
    )
}

/// The format `db` records; `None` for a store no node has started on.
pub fn recorded(db: &oxigraph::store::Store) -> Result<Option<u32>> {
    Ok(match graphs::layout_value(db, &predicate())? {
        Some(Term::Literal(l)) => l.value().parse().ok(),
        _ => None,
    })
}

impl Store {
    /// Checks the data dir's format at start-up: a newer one is refused, an older one
    /// upgraded step by step, none (a new store) recorded as this node's. Returns the format.
    /// Blocking.
    pub fn check_format(&self) -> Result<u32> {
        let mut at = match recorded(&self.db)? {
            None => {
                self.rewrite(&[], &[quad(FORMAT)])?;
                return Ok(FORMAT);
            }
            Some(f) if f > FORMAT => {
                return Err(Error::Unavailable(format!(
                    "this data dir has format {f}, newer than this node's {FORMAT}: run a node \
                     of the release that wrote it, or a newer one"
                )))
            }
            Some(f) => f,
        };
        while at < FORMAT {
            let upgrade = UPGRADES.iter().find(|u| u.from == at).ok_or_else(|| {
                Error::Unavailable(format!(
                    "no upgrade from data dir format {at} to {}",
                    at + 1
                ))
            })?;
            tracing::info!(from = at, to = at + 1, "upgrading the data dir");
            (upgrade.run)(self)?;
            self.rewrite(&[quad(at)], &[quad(at + 1)])?;
            at += 1;
        }
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_store_is_recorded_and_a_newer_format_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.check_format().unwrap(), FORMAT);
        assert_eq!(recorded(store.db()).unwrap(), Some(FORMAT));
        assert_eq!(store.check_format().unwrap(), FORMAT);
        store.rewrite(&[quad(FORMAT)], &[quad(FORMAT + 1)]).unwrap();
        let e = store.check_format().unwrap_err().to_string();
        assert!(
            e.contains(&format!("format {}", FORMAT + 1)) && e.contains(&FORMAT.to_string()),
            "{e}"
        );
    }
}
