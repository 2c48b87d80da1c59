//! Routing a consignment: the sharing policies matched against its ports.

use oxigraph::store::Transaction;

use super::lookup::Record;
use super::Apply;
use crate::consignment::ports::{Port, Ports};
use crate::error::Result;
use crate::sharing::policy::Facts;
use crate::sharing::Routed;
use crate::store::Events;

impl Apply<'_> {
    /// Shares the consignment as the policies say for its (new) ports.
    pub(super) fn route(
        &self,
        tx: &mut Transaction<'_>,
        record: &Record,
        created: &str,
        now: &str,
        events: &mut Events,
    ) -> Result<()> {
        let routed = self.routed(record, created);
        self.sharing
            .route(tx, &routed, &facts(self.ports), now, events)
    }

    pub(super) fn routed<'r>(&'r self, record: &'r Record, created: &'r str) -> Routed<'r> {
        Routed {
            consignment: record,
            created,
        }
    }
}

/// The facts routing matches on, from freshly derived ports.
pub(super) fn facts(ports: &Ports) -> Facts {
    let code = |p: &Option<Port>| p.as_ref().and_then(|p| p.code.clone());
    let country = |p: &Option<Port>| p.as_ref().and_then(|p| p.country.clone());
    Facts {
        entry_country: country(&ports.entry),
        exit_country: country(&ports.exit),
        entry: code(&ports.entry),
        exit: code(&ports.exit),
    }
}
