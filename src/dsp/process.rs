//! A negotiation or a transfer as the node keeps it: one JSON state in the DSP system graph
//! (`<urn:dataspace-node:dsp:<uuid>> dsn:dspProcess`), written in the transaction of each
//! change, with the message still to send to the consumer — so a restart continues where it
//! was, and a message is sent only after the change that calls for it committed.

use oxigraph::model::{NamedNode, NamedOrBlankNode, Term};
use oxigraph::store::Transaction;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::message::pids;
use super::{Dsp, CONTEXT};
use crate::consignment::now;
use crate::error::{Error, Result};
use crate::store::{graphs, replace_value, Committed, Events, Store};
use crate::vocab::{dsn, json_literal};

const PREFIX: &str = "urn:dataspace-node:dsp:";

/// A message for the consumer, and the state its acknowledgement brings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outgoing {
    /// Under the consumer's callback address.
    pub path: String,
    pub body: Value,
    pub then: String,
    #[serde(default)]
    pub attempts: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Process {
    /// `negotiation` or `transfer`.
    pub kind: String,
    pub provider_pid: String,
    pub consumer_pid: String,
    /// The participant DID it is with.
    pub participant: String,
    pub callback: String,
    /// The dataset's consignment (aig hex).
    pub dataset: String,
    pub state: String,
    /// A negotiation's agreement, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<Value>,
    /// A transfer's agreement id, and the SHA-256 of the bearer token its pull takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outgoing: Option<Outgoing>,
    pub created: String,
    pub updated: String,
}

/// The uuid of a provider pid (`urn:uuid:<uuid>`, or the bare uuid in a path).
pub fn uuid_of(pid: &str) -> Option<&str> {
    let id = pid.strip_prefix("urn:uuid:").unwrap_or(pid);
    uuid::Uuid::parse_str(id).ok().map(|_| id)
}

fn node(uuid: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{PREFIX}{uuid}"))
}

fn parse(term: &Term) -> Option<Process> {
    match term {
        Term::Literal(l) => serde_json::from_str(l.value()).ok(),
        _ => None,
    }
}

impl Process {
    /// A message to the consumer about this process: its pids and `extra`'s members.
    pub fn message(&self, kind: &str, extra: Value) -> Value {
        let mut body = serde_json::json!({
            "@context": [CONTEXT],
            "@type": kind,
            "providerPid": self.provider_pid,
            "consumerPid": self.consumer_pid,
        });
        if let (Some(b), Value::Object(more)) = (body.as_object_mut(), extra) {
            b.extend(more);
        }
        body
    }

    /// The 400 of a message that does not fit this process's state.
    pub fn out_of_order(&self, what: &str) -> Error {
        Error::bad_request(format!(
            "{what} is out of order: the {} is {}",
            self.kind, self.state
        ))
    }

    pub fn is_final(&self) -> bool {
        matches!(
            self.state.as_str(),
            "FINALIZED" | "TERMINATED" | "COMPLETED"
        )
    }

    /// The process as its provider pid's uuid names it, as the store has it now.
    pub fn load(store: &Store, pid: &str) -> Result<Option<Process>> {
        let Some(uuid) = uuid_of(pid) else {
            return Ok(None);
        };
        Ok(store
            .value(&node(uuid), &dsn("dspProcess"), &graphs::dsp())?
            .as_ref()
            .and_then(parse))
    }

    /// The same, in a transaction.
    pub fn load_in(tx: &Transaction<'_>, pid: &str) -> Result<Option<Process>> {
        let Some(uuid) = uuid_of(pid) else {
            return Ok(None);
        };
        let (n, p, g) = (node(uuid), dsn("dspProcess"), graphs::dsp());
        for q in tx.quads_for_pattern(
            Some(n.as_ref().into()),
            Some(p.as_ref()),
            None,
            Some(g.as_ref().into()),
        ) {
            if let Some(found) = parse(&q?.object) {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// Writes this state in place of the stored one; a message to send wakes the sender.
    pub fn save(&self, tx: &mut Transaction<'_>, events: &mut Events) -> Result<()> {
        let uuid = uuid_of(&self.provider_pid)
            .ok_or_else(|| Error::internal("a process without a uuid"))?
            .to_owned();
        let json = serde_json::to_string(self).map_err(Error::internal)?;
        let state = json_literal(json);
        replace_value(tx, &node(&uuid), &dsn("dspProcess"), state, &graphs::dsp())?;
        if self.outgoing.is_some() {
            events.push(Committed::DspQueued {
                pid: self.provider_pid.clone(),
            });
        }
        Ok(())
    }

    /// Every stored process (start-up: the messages still to send; a revocation: the
    /// transfers it ends). Blocking.
    pub fn all(store: &Store) -> Result<Vec<Process>> {
        let (p, g) = (dsn("dspProcess"), graphs::dsp());
        let mut out = Vec::new();
        for q in store
            .db()
            .quads_for_pattern(None, Some(p.as_ref()), None, Some(g.as_ref().into()))
        {
            let q = q?;
            if let (NamedOrBlankNode::NamedNode(_), Some(process)) = (&q.subject, parse(&q.object))
            {
                out.push(process);
            }
        }
        Ok(out)
    }
}

impl Dsp {
    /// `participant`'s process `pid` of `kind` (404 for anyone else's, as the bindings ask).
    /// Blocking.
    pub(super) fn own(&self, kind: &str, participant: &str, pid: &str) -> Result<Process> {
        match Process::load(&self.store, pid)? {
            Some(p) if p.kind == kind && p.participant == participant => Ok(p),
            _ => Err(Error::NotFound(format!("no {kind} {pid} of yours"))),
        }
    }

    /// Applies `f` to `participant`'s process `pid` of `kind` under the writer lock (so two
    /// of the consumer's messages cannot both take it from one state), once the message's
    /// pids match. Blocking.
    pub(super) fn change(
        &self,
        kind: &str,
        participant: &str,
        pid: &str,
        m: &serde_json::Map<String, Value>,
        f: impl FnOnce(&Dsp, &mut Process) -> Result<()>,
    ) -> Result<()> {
        self.store.commit(|tx, events| {
            let mut p = match Process::load_in(tx, pid)? {
                Some(p) if p.kind == kind && p.participant == participant => p,
                _ => return Err(Error::NotFound(format!("no {kind} {pid} of yours"))),
            };
            pids(m, &p)?;
            // A consumer that answers has our last message, whether or not the delivery task
            // has recorded its acknowledgement yet (it answers before our sender reads its
            // status): the state that message announced holds.
            if let Some(sent) = p.outgoing.take() {
                p.state = sent.then;
            }
            f(self, &mut p)?;
            p.updated = now();
            p.save(tx, events)
        })?;
        Ok(())
    }
}
