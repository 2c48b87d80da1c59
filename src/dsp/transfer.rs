//! The transfer process, provider side, HTTP pull only. A transfer needs a finalized
//! agreement of the participant's whose dataset is still shared with it; its
//! `TransferStartMessage` (queued, sent by `deliver`) hands the consumer the pull endpoint and
//! a bearer token. The token reads that transfer's consignment only, only while the transfer
//! is `STARTED` and the consignment still shared with the participant — a revoked share stops
//! it at once, and its transfers are terminated with a message to the consumer. Suspension,
//! completion and termination from the consumer's side; the node stores only the token's hash.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::message::{check, required_str};
use super::negotiation::state_body;
use super::process::{uuid_of, Outgoing, Process};
use super::{Dsp, FORMAT};
use crate::consignment::{listing, now};
use crate::error::{Error, Result};
use crate::secrets::random_token;

pub(super) fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The termination of transfer `p`, told to the consumer.
pub fn termination(p: &Process, code: &str, reason: &str) -> Outgoing {
    Outgoing {
        path: format!("transfers/{}/termination", p.consumer_pid),
        body: p.message(
            "TransferTerminationMessage",
            json!({"code": code, "reason": [reason]}),
        ),
        then: "TERMINATED".into(),
        attempts: 0,
    }
}

impl Dsp {
    /// `GET transfers/{pid}`. Blocking.
    pub fn transfer(&self, participant: &str, pid: &str) -> Result<Value> {
        Ok(state_body(
            "TransferProcess",
            &self.own("transfer", participant, pid)?,
        ))
    }

    /// Where a transfer's consignment is pulled from.
    fn pull_endpoint(&self, p: &Process) -> String {
        let uuid = uuid_of(&p.provider_pid).unwrap_or_default();
        format!("{}/data/{uuid}", self.identity.dsp_base())
    }

    /// `POST transfers/request`: a new transfer, `REQUESTED`, its start (or termination)
    /// queued. Blocking.
    pub fn request_transfer(&self, participant: &str, body: &Value) -> Result<Value> {
        let m = check(body, "TransferRequestMessage")?;
        let consumer_pid = required_str(m, "consumerPid")?;
        let agreement_id = required_str(m, "agreementId")?;
        if required_str(m, "format")? != FORMAT {
            return Err(Error::invalid_field(
                "format",
                format!("only {FORMAT} is offered"),
            ));
        }
        if m.contains_key("dataAddress") {
            return Err(Error::invalid_field(
                "dataAddress",
                "push transfers are not offered: the consumer pulls",
            ));
        }
        let callback = required_str(m, "callbackAddress")?;
        self.federation
            .callback_of(participant, &callback)
            .map_err(|why| Error::invalid_field("callbackAddress", why))?;
        let negotiation = agreement_id
            .strip_prefix("urn:dataspace-node:agreement:")
            .map(|uuid| Process::load(&self.store, uuid))
            .transpose()?
            .flatten()
            .filter(|n| {
                n.kind == "negotiation" && n.participant == participant && n.state == "FINALIZED"
            })
            .ok_or_else(|| {
                Error::invalid_field("agreementId", "no finalized agreement of yours")
            })?;
        let stamp = now();
        let mut p = Process {
            kind: "transfer".into(),
            provider_pid: format!("urn:uuid:{}", uuid::Uuid::new_v4()),
            consumer_pid,
            participant: participant.to_owned(),
            callback,
            dataset: negotiation.dataset,
            state: "REQUESTED".into(),
            agreement: None,
            agreement_id: Some(agreement_id),
            token_hash: None,
            outgoing: None,
            created: stamp.clone(),
            updated: stamp,
        };
        p.outgoing = Some(if self.still_shared(&p) {
            let token = random_token("dsp_");
            p.token_hash = Some(hash(&token));
            self.start(&p, &token)
        } else {
            termination(&p, "not-shared", "the dataset is no longer shared with you")
        });
        self.store.commit(|tx, events| p.save(tx, events))?;
        Ok(state_body("TransferProcess", &p))
    }

    pub(super) fn still_shared(&self, p: &Process) -> bool {
        listing::id_bits(&p.dataset)
            .is_some_and(|bits| self.sharing.shares_with(&p.participant, bits))
    }

    /// The `TransferStartMessage` handing the consumer the pull endpoint and `token`.
    pub(super) fn start(&self, p: &Process, token: &str) -> Outgoing {
        let property = |name: &str, value: &str| json!({"@type": "EndpointProperty", "name": name, "value": value});
        Outgoing {
            path: format!("transfers/{}/start", p.consumer_pid),
            body: p.message(
                "TransferStartMessage",
                json!({"dataAddress": {
                    "@type": "DataAddress",
                    "endpointType": "https://w3id.org/idsa/v4.1/HTTP",
                    "endpoint": self.pull_endpoint(p),
                    "endpointProperties": [
                        property("authorization", token),
                        property("authType", "bearer"),
                    ],
                }}),
            ),
            then: "STARTED".into(),
            attempts: 0,
        }
    }

    /// A consumer's message about its transfer `pid`: `start` (resuming a suspended one),
    /// `completion`, `suspension` or `termination`. Blocking.
    pub fn transfer_step(
        &self,
        participant: &str,
        pid: &str,
        step: &str,
        body: &Value,
    ) -> Result<()> {
        let kind = match step {
            "start" => "TransferStartMessage",
            "completion" => "TransferCompletionMessage",
            "suspension" => "TransferSuspensionMessage",
            _ => "TransferTerminationMessage",
        };
        let m = check(body, kind)?;
        self.change("transfer", participant, pid, m, |dsp, p| {
            let next = match (step, p.state.as_str()) {
                // Only a suspension of the consumer's own (the token kept) is the consumer's to
                // end; the provider's dropped the token.
                ("start", "SUSPENDED") if p.token_hash.is_some() && dsp.still_shared(p) => {
                    "STARTED"
                }
                ("completion", "STARTED") => "COMPLETED",
                ("suspension", "STARTED") => "SUSPENDED",
                ("termination", _) if !p.is_final() => "TERMINATED",
                _ => return Err(p.out_of_order(&format!("a {kind}"))),
            };
            p.state = next.into();
            Ok(())
        })
    }

    /// What bearer `token` may pull from transfer `uuid`: its participant and consignment (aig
    /// hex) — only while the transfer is `STARTED` and the consignment still shared with the
    /// participant. Blocking.
    pub fn pull_target(&self, uuid: &str, token: &str) -> Result<(String, String)> {
        let refused = || Error::Unauthorized("not a token of a started transfer".into());
        let p = Process::load(&self.store, uuid)?
            .filter(|p| p.kind == "transfer")
            .ok_or_else(refused)?;
        let held = p.token_hash.as_deref().unwrap_or_default().as_bytes();
        let given = hash(token);
        // Compared in constant time.
        let same = held.len() == given.len()
            && held
                .iter()
                .zip(given.as_bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        if !same || p.state != "STARTED" {
            return Err(refused());
        }
        if !self.still_shared(&p) {
            return Err(Error::Forbidden(
                "the consignment is no longer shared with the participant".into(),
            ));
        }
        Ok((p.participant, p.dataset))
    }

    /// A share withdrawn from `org`: its live transfers of that consignment terminate, the
    /// consumer told. Blocking.
    pub fn share_withdrawn(&self, org: &str, hex: &str) -> Result<()> {
        let live: Vec<Process> = Process::all(&self.store)?
            .into_iter()
            .filter(|p| p.kind == "transfer" && p.participant == org && p.dataset == hex)
            .filter(|p| !p.is_final())
            .collect();
        for p in live {
            self.store.commit(|tx, events| {
                let Some(mut now_p) = Process::load_in(tx, &p.provider_pid)? else {
                    return Ok(());
                };
                if now_p.is_final() {
                    return Ok(());
                }
                now_p.outgoing = Some(termination(&now_p, "revoked", "the share was revoked"));
                now_p.token_hash = None;
                now_p.updated = now();
                now_p.save(tx, events)
            })?;
        }
        Ok(())
    }
}
