//! The provider's side of a transfer: the publishing organisation sees the transfers of its
//! consignments and may suspend, resume, complete or terminate one. The change holds at once
//! (a suspended, completed or terminated transfer's token reads nothing from then on) and the
//! consumer is told by the matching message, sent by the delivery task; a resumed transfer
//! gets a new token in a new `TransferStartMessage` and reads again once that is
//! acknowledged. A change while the previous message is still unsent replaces that message.

use oxigraph::model::Term;
use serde_json::{json, Value};

use super::process::{Outgoing, Process};
use super::transfer::termination;
use super::Dsp;
use crate::consignment::now;
use crate::error::{Error, Result};
use crate::secrets::random_token;
use crate::store::graphs;
use crate::vocab::dsn;

impl Dsp {
    /// Does `org` publish the consignment `hex`? Blocking.
    fn publishes(&self, org: &str, hex: &str) -> Result<bool> {
        let publisher = self.store.value(
            &graphs::consignment(hex),
            &dsn("publisher"),
            &graphs::consignment_index(),
        )?;
        Ok(matches!(publisher, Some(Term::NamedNode(p)) if p.as_str() == org))
    }

    /// The transfers of `org`'s consignments, newest first: who pulls what, in which state.
    /// Blocking.
    pub fn provided_transfers(&self, org: &str) -> Result<Vec<Value>> {
        let mut mine = Vec::new();
        for p in Process::all(&self.store)? {
            if p.kind == "transfer" && self.publishes(org, &p.dataset)? {
                mine.push(p);
            }
        }
        mine.sort_by(|a, b| b.created.cmp(&a.created));
        Ok(mine
            .iter()
            .map(|p| {
                json!({
                    "providerPid": p.provider_pid, "consumerPid": p.consumer_pid,
                    "participant": p.participant, "consignment": format!("aig:{}", p.dataset),
                    "agreementId": p.agreement_id, "state": p.state,
                    "created": p.created, "updated": p.updated,
                })
            })
            .collect())
    }

    /// `org` (the publisher) suspends, resumes, completes or terminates transfer `pid`.
    /// Blocking.
    pub fn provider_step(&self, org: &str, pid: &str, step: &str) -> Result<Value> {
        let not_found = || Error::NotFound(format!("no transfer {pid} of your consignments"));
        let (done, _) = self.store.commit(|tx, events| {
            let mut p = Process::load_in(tx, pid)?
                .filter(|p| p.kind == "transfer")
                .ok_or_else(not_found)?;
            if !self.publishes(org, &p.dataset)? {
                return Err(not_found());
            }
            // A message still unsent is replaced: the consumer is told the state as it is now.
            let told = |kind: &str, then: &str, path: &str, p: &Process| Outgoing {
                path: format!("transfers/{}/{path}", p.consumer_pid),
                body: p.message(
                    kind,
                    json!({"code": "provider", "reason": ["by the provider"]}),
                ),
                then: then.into(),
                attempts: 0,
            };
            let out = match (step, p.state.as_str()) {
                ("suspend", "STARTED") => {
                    told("TransferSuspensionMessage", "SUSPENDED", "suspension", &p)
                }
                ("complete", "STARTED") => Outgoing {
                    path: format!("transfers/{}/completion", p.consumer_pid),
                    body: p.message("TransferCompletionMessage", json!({})),
                    then: "COMPLETED".into(),
                    attempts: 0,
                },
                ("resume", "SUSPENDED") if self.still_shared(&p) => {
                    let token = random_token("dsp_");
                    p.token_hash = Some(super::transfer::hash(&token));
                    self.start(&p, &token)
                }
                ("terminate", _) if !p.is_final() => {
                    termination(&p, "provider", "ended by the provider")
                }
                _ => return Err(p.out_of_order(step)),
            };
            // Holds at once: the token reads nothing but in STARTED, which a resumption
            // reaches when the consumer acknowledges its new start.
            if step != "resume" {
                p.state = out.then.clone();
                // The token reads nothing again: a consumer's `start` cannot undo a provider's
                // suspension, only the provider's resumption (a new token) can.
                p.token_hash = None;
            }
            p.outgoing = Some(out);
            p.updated = now();
            p.save(tx, events)?;
            Ok(json!({"providerPid": p.provider_pid, "state": p.state}))
        })?;
        Ok(done)
    }
}
