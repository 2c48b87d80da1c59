//! Contract negotiation, provider side. An offer this node gave the participant, for a dataset
//! still shared with it, is agreed without a person: the `ContractAgreementMessage` is queued
//! in the transaction that records the request and sent by the delivery task (`deliver`);
//! after the consumer's verification the `FINALIZED` event follows the same way. An offer it
//! did not give, or whose share went meanwhile, ends `TERMINATED` with the reason sent to the
//! consumer. The node makes no offers of its own, so a consumer's counter-request or
//! `ACCEPTED` event is always out of order here.

use serde_json::{json, Map, Value};

use super::catalog::{dataset_id, offer_id, offer_parts};
use super::message::{check, pids, required_str};
use super::process::{Outgoing, Process};
use super::{Dsp, CONTEXT};
use crate::consignment::listing;
use crate::consignment::now;
use crate::error::{Error, Result};

fn termination(p: &Process, code: &str, reason: &str) -> Outgoing {
    Outgoing {
        path: format!("negotiations/{}/termination", p.consumer_pid),
        body: p.message(
            "ContractNegotiationTerminationMessage",
            json!({"code": code, "reason": [reason]}),
        ),
        then: "TERMINATED".into(),
        attempts: 0,
    }
}

impl Dsp {
    /// `GET negotiations/{pid}`. Blocking.
    pub fn negotiation(&self, participant: &str, pid: &str) -> Result<Value> {
        let p = self.own("negotiation", participant, pid)?;
        Ok(state_body("ContractNegotiation", &p))
    }

    /// `POST negotiations/request`: a new negotiation, `REQUESTED`; its agreement or
    /// termination queued. Blocking.
    pub fn request_negotiation(&self, participant: &str, body: &Value) -> Result<Value> {
        let m = check(body, "ContractRequestMessage")?;
        if m.contains_key("providerPid") {
            return Err(Error::invalid_field(
                "providerPid",
                "a first request has none: a counter-request goes to negotiations/{providerPid}/request",
            ));
        }
        let consumer_pid = required_str(m, "consumerPid")?;
        let callback = required_str(m, "callbackAddress")?;
        self.federation
            .callback_of(participant, &callback)
            .map_err(|why| Error::invalid_field("callbackAddress", why))?;
        let offer = m
            .get("offer")
            .and_then(Value::as_object)
            .ok_or_else(|| Error::invalid_field("offer", "required: the offer of a dataset"))?;
        let offer_id_sent = offer
            .get("@id")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid_field("offer", "its @id is required"))?;
        let (hex, _) = offer_parts(offer_id_sent)
            .ok_or_else(|| Error::invalid_field("offer", "not an offer of this node's catalog"))?;
        let stamp = now();
        let mut p = Process {
            kind: "negotiation".into(),
            provider_pid: format!("urn:uuid:{}", uuid::Uuid::new_v4()),
            consumer_pid,
            participant: participant.to_owned(),
            callback,
            dataset: hex.to_owned(),
            state: "REQUESTED".into(),
            agreement: None,
            agreement_id: None,
            token_hash: None,
            outgoing: None,
            created: stamp.clone(),
            updated: stamp,
        };
        p.outgoing = Some(self.decide(&mut p, offer_id_sent, offer)?);
        self.store.commit(|tx, events| p.save(tx, events))?;
        Ok(state_body("ContractNegotiation", &p))
    }

    /// The agreement to an offer this node gave `p`'s participant for a dataset still shared
    /// with it, or the termination that says why not.
    fn decide(&self, p: &mut Process, sent: &str, offer: &Map<String, Value>) -> Result<Outgoing> {
        let hex = p.dataset.clone();
        if sent != offer_id(&hex, &p.participant) {
            return Ok(termination(
                p,
                "offer-not-given",
                "this offer was not made to you",
            ));
        }
        if let Some(target) = offer.get("target").and_then(Value::as_str) {
            if target != dataset_id(&hex) {
                return Ok(termination(
                    p,
                    "wrong-target",
                    "the offer is for another dataset",
                ));
            }
        }
        let shared = listing::id_bits(&hex)
            .is_some_and(|bits| self.sharing.shares_with(&p.participant, bits));
        let offered = if shared {
            self.offered(&p.participant, &hex)?
        } else {
            None
        };
        let Some(offered) = offered else {
            return Ok(termination(
                p,
                "not-shared",
                "the dataset is not shared with you (any more)",
            ));
        };
        let uuid = super::process::uuid_of(&p.provider_pid).unwrap_or_default();
        let agreement = json!({
            "@id": format!("urn:dataspace-node:agreement:{uuid}"),
            "@type": "Agreement",
            "target": dataset_id(&hex),
            "assigner": offered.publisher.as_str(),
            "assignee": p.participant,
            "timestamp": now(),
            "permission": offered.permission,
        });
        p.agreement = Some(agreement.clone());
        Ok(Outgoing {
            path: format!("negotiations/{}/agreement", p.consumer_pid),
            body: p.message("ContractAgreementMessage", json!({"agreement": agreement})),
            then: "AGREED".into(),
            attempts: 0,
        })
    }

    /// `POST negotiations/{pid}/agreement/verification`: `AGREED` → `VERIFIED`, and the
    /// `FINALIZED` event queued (or the termination, should the share have gone). Blocking.
    pub fn verify_agreement(&self, participant: &str, pid: &str, body: &Value) -> Result<()> {
        let m = check(body, "ContractAgreementVerificationMessage")?;
        self.change("negotiation", participant, pid, m, |dsp, p| {
            if p.state != "AGREED" {
                return Err(p.out_of_order("a verification"));
            }
            let shared = listing::id_bits(&p.dataset)
                .is_some_and(|bits| dsp.sharing.shares_with(&p.participant, bits));
            p.state = "VERIFIED".into();
            p.outgoing = Some(if shared {
                Outgoing {
                    path: format!("negotiations/{}/events", p.consumer_pid),
                    body: p.message(
                        "ContractNegotiationEventMessage",
                        json!({"eventType": "FINALIZED"}),
                    ),
                    then: "FINALIZED".into(),
                    attempts: 0,
                }
            } else {
                termination(p, "not-shared", "the dataset is no longer shared with you")
            });
            Ok(())
        })
    }

    /// `POST negotiations/{pid}/termination`: any state but a final one → `TERMINATED`.
    /// Blocking.
    pub fn terminate_negotiation(&self, participant: &str, pid: &str, body: &Value) -> Result<()> {
        let m = check(body, "ContractNegotiationTerminationMessage")?;
        self.change("negotiation", participant, pid, m, |_, p| {
            if p.is_final() {
                return Err(p.out_of_order("a termination"));
            }
            p.state = "TERMINATED".into();
            p.outgoing = None;
            Ok(())
        })
    }

    /// `POST negotiations/{pid}/request` and `…/events`: the node makes no offers, so neither
    /// a counter-request nor `ACCEPTED` ever fits. Blocking.
    pub fn negotiation_out_of_order(
        &self,
        participant: &str,
        pid: &str,
        body: &Value,
        kind: &str,
    ) -> Result<()> {
        let m = check(body, kind)?;
        let p = self.own("negotiation", participant, pid)?;
        pids(m, &p)?;
        Err(p.out_of_order(&format!("a {kind}")))
    }
}

/// `ContractNegotiation` / `TransferProcess`: the pids and the state.
pub fn state_body(kind: &str, p: &Process) -> Value {
    json!({
        "@context": [CONTEXT],
        "@type": kind,
        "providerPid": p.provider_pid,
        "consumerPid": p.consumer_pid,
        "state": p.state,
    })
}
