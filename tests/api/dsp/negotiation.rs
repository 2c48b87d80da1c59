//! Contract negotiation with the node as provider: agreed without a person for an offer it
//! made, finalized after the consumer's verification, terminated for an offer it did not make
//! or a share that went; out-of-order and malformed messages refused; continued after a
//! restart. Every message either side sends is checked against its schema.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::consumer::CONTEXT;
use super::schemas::assert_valid;
use super::{assert_dsp_error, World};

const NEGOTIATION_ERROR: &str = "ContractNegotiationError";

impl World {
    /// A DSP request as the participant `who` (the consumer's own DID when `None`).
    pub async fn dsp_as(
        &self,
        who: Option<&str>,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> reqwest::Response {
        let token = match who {
            Some(did) => self.consumer.token_as(&self.node, did),
            None => self.consumer.token(&self.node),
        };
        let mut req = self
            .node
            .client
            .request(method, self.node.url(&format!("/dsp/2025-1/{path}")))
            .header("authorization", token);
        if let Some(b) = body {
            req = req.json(b);
        }
        req.send().await.unwrap()
    }

    pub async fn dsp(&self, method: Method, path: &str, body: Option<&Value>) -> reqwest::Response {
        self.dsp_as(None, method, path, body).await
    }

    /// The first dataset of the consumer's catalog.
    pub async fn first_dataset(&self) -> Value {
        let (catalog, _) = self.catalog_page(&self.catalog_url()).await;
        catalog["dataset"][0].clone()
    }

    /// A `ContractRequestMessage` for `offer` of `dataset`, as consumer pid `cpid`.
    pub fn contract_request(&self, cpid: &str, dataset: &Value, offer: &Value) -> Value {
        let mut offer = offer.clone();
        offer["target"] = dataset["@id"].clone();
        let m = json!({
            "@context": [CONTEXT],
            "@type": "ContractRequestMessage",
            "consumerPid": cpid,
            "offer": offer,
            "callbackAddress": self.consumer.callback,
        });
        assert_valid("negotiation/contract-request-message-schema.json", &m);
        m
    }

    /// Requests a negotiation; its `providerPid` (the answer is 201 `REQUESTED`).
    pub async fn negotiate(&self, request: &Value) -> String {
        let r = self
            .dsp(Method::POST, "negotiations/request", Some(request))
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        let n = super::super::common::json_body(r).await;
        assert_valid("negotiation/contract-negotiation-schema.json", &n);
        assert_eq!(n["state"], "REQUESTED");
        assert_eq!(n["consumerPid"], request["consumerPid"]);
        n["providerPid"].as_str().unwrap().to_owned()
    }

    /// The negotiation's state, once it is `state` (the bound is only against a hang).
    pub async fn negotiation_reaches(&self, pid: &str, state: &str) -> Value {
        for _ in 0..2400 {
            let r = self
                .dsp(Method::GET, &format!("negotiations/{pid}"), None)
                .await;
            assert_eq!(r.status(), StatusCode::OK);
            let n = super::super::common::json_body(r).await;
            assert_valid("negotiation/contract-negotiation-schema.json", &n);
            if n["state"] == state {
                return n;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("negotiation {pid} never reached {state}");
    }

    pub fn pids(&self, pid: &str, cpid: &str, kind: &str) -> Value {
        json!({"@context": [CONTEXT], "@type": kind, "providerPid": pid, "consumerPid": cpid})
    }
}

#[tokio::test]
async fn an_offer_the_node_made_is_agreed_verified_and_finalized() {
    let w = World::new().await;
    w.publish(1, "KEMBA").await;
    let dataset = w.first_dataset().await;
    let offer = dataset["hasPolicy"][0].clone();
    let cpid = "urn:uuid:2f1c7a4e-0c1b-4c8e-9a55-7f3f1d2a0001";
    let pid = w
        .negotiate(&w.contract_request(cpid, &dataset, &offer))
        .await;

    let agreed = w
        .consumer
        .wait_for(&format!("negotiations/{cpid}/agreement"))
        .await;
    assert_valid(
        "negotiation/contract-agreement-message-schema.json",
        &agreed,
    );
    assert_eq!(
        (
            agreed["providerPid"].as_str(),
            agreed["consumerPid"].as_str()
        ),
        (Some(pid.as_str()), Some(cpid))
    );
    let agreement = &agreed["agreement"];
    assert_eq!(agreement["target"], dataset["@id"]);
    assert_eq!(agreement["assignee"], w.consumer.did.as_str());
    assert_eq!(agreement["assigner"], w.trader.org());
    assert_eq!(agreement["permission"], offer["permission"]);
    w.negotiation_reaches(&pid, "AGREED").await;

    let verification = w.pids(&pid, cpid, "ContractAgreementVerificationMessage");
    assert_valid(
        "negotiation/contract-agreement-verification-message-schema.json",
        &verification,
    );
    let path = format!("negotiations/{pid}/agreement/verification");
    let r = w.dsp(Method::POST, &path, Some(&verification)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let event = w
        .consumer
        .wait_for(&format!("negotiations/{cpid}/events"))
        .await;
    assert_valid(
        "negotiation/contract-negotiation-event-message-schema.json",
        &event,
    );
    assert_eq!(event["eventType"], "FINALIZED");
    w.negotiation_reaches(&pid, "FINALIZED").await;

    // Final: neither a second verification nor a termination fits any more.
    let r = w.dsp(Method::POST, &path, Some(&verification)).await;
    assert_dsp_error(r, StatusCode::BAD_REQUEST, NEGOTIATION_ERROR).await;
    let mut end = w.pids(&pid, cpid, "ContractNegotiationTerminationMessage");
    end["code"] = json!("done");
    end["reason"] = json!(["changed my mind"]);
    assert_valid(
        "negotiation/contract-negotiation-termination-message-schema.json",
        &end,
    );
    let r = w
        .dsp(
            Method::POST,
            &format!("negotiations/{pid}/termination"),
            Some(&end),
        )
        .await;
    assert_dsp_error(r, StatusCode::BAD_REQUEST, NEGOTIATION_ERROR).await;
}

#[tokio::test]
async fn an_offer_not_made_or_a_share_gone_meanwhile_ends_terminated() {
    let w = World::new().await;
    w.publish(1, "KEMBA").await;
    let dataset = w.first_dataset().await;
    let offer = dataset["hasPolicy"][0].clone();
    // An offer of a consignment not shared with the participant.
    let mut other = offer.clone();
    let hex = "0123456789abcdef0123456789abcdef";
    other["@id"] = json!(format!("urn:dataspace-node:offer:{hex}:00"));
    let mut elsewhere = dataset.clone();
    elsewhere["@id"] = json!(format!("urn:dataspace-node:dataset:{hex}"));
    let cpid = "urn:uuid:2f1c7a4e-0c1b-4c8e-9a55-7f3f1d2a0002";
    let pid = w
        .negotiate(&w.contract_request(cpid, &elsewhere, &other))
        .await;
    let end = w
        .consumer
        .wait_for(&format!("negotiations/{cpid}/termination"))
        .await;
    assert_valid(
        "negotiation/contract-negotiation-termination-message-schema.json",
        &end,
    );
    assert!(
        end["reason"][0]
            .as_str()
            .unwrap()
            .contains("not made to you"),
        "{end}"
    );
    w.negotiation_reaches(&pid, "TERMINATED").await;

    // Agreed, then the policy goes before the verification: terminated, not finalized.
    let cpid = "urn:uuid:2f1c7a4e-0c1b-4c8e-9a55-7f3f1d2a0003";
    let pid = w
        .negotiate(&w.contract_request(cpid, &dataset, &offer))
        .await;
    w.negotiation_reaches(&pid, "AGREED").await;
    w.operator.delete(&w.node, &w.policy).await;
    let verification = w.pids(&pid, cpid, "ContractAgreementVerificationMessage");
    let path = format!("negotiations/{pid}/agreement/verification");
    assert_eq!(
        w.dsp(Method::POST, &path, Some(&verification))
            .await
            .status(),
        StatusCode::OK
    );
    let end = w
        .consumer
        .wait_for(&format!("negotiations/{cpid}/termination"))
        .await;
    assert_valid(
        "negotiation/contract-negotiation-termination-message-schema.json",
        &end,
    );
    w.negotiation_reaches(&pid, "TERMINATED").await;
}

#[tokio::test]
async fn out_of_order_malformed_and_foreign_negotiation_messages_are_refused() {
    let w = World::new().await;
    w.publish(1, "KEMBA").await;
    let dataset = w.first_dataset().await;
    let offer = dataset["hasPolicy"][0].clone();
    let cpid = "urn:uuid:2f1c7a4e-0c1b-4c8e-9a55-7f3f1d2a0004";
    let request = w.contract_request(cpid, &dataset, &offer);
    let pid = w.negotiate(&request).await;
    w.negotiation_reaches(&pid, "AGREED").await;
    // The node makes no offers: a counter-request and ACCEPTED never fit.
    let mut counter = request.clone();
    counter.as_object_mut().unwrap().remove("callbackAddress");
    counter["providerPid"] = json!(pid);
    assert_valid("negotiation/contract-request-message-schema.json", &counter);
    let r = w
        .dsp(
            Method::POST,
            &format!("negotiations/{pid}/request"),
            Some(&counter),
        )
        .await;
    assert_dsp_error(r, StatusCode::BAD_REQUEST, NEGOTIATION_ERROR).await;
    let mut accepted = w.pids(&pid, cpid, "ContractNegotiationEventMessage");
    accepted["eventType"] = json!("ACCEPTED");
    let r = w
        .dsp(
            Method::POST,
            &format!("negotiations/{pid}/events"),
            Some(&accepted),
        )
        .await;
    assert_dsp_error(r, StatusCode::BAD_REQUEST, NEGOTIATION_ERROR).await;
    // Another participant does not see it; an unknown pid is 404 too.
    let other = w.consumer.other("rival");
    let r = w
        .dsp_as(
            Some(&other),
            Method::GET,
            &format!("negotiations/{pid}"),
            None,
        )
        .await;
    assert_dsp_error(r, StatusCode::NOT_FOUND, NEGOTIATION_ERROR).await;
    let verification = w.pids(&pid, cpid, "ContractAgreementVerificationMessage");
    let path = format!("negotiations/{pid}/agreement/verification");
    let r = w
        .dsp_as(Some(&other), Method::POST, &path, Some(&verification))
        .await;
    assert_dsp_error(r, StatusCode::NOT_FOUND, NEGOTIATION_ERROR).await;
    let r = w
        .dsp(
            Method::GET,
            "negotiations/urn:uuid:00000000-0000-4000-8000-000000000000",
            None,
        )
        .await;
    assert_dsp_error(r, StatusCode::NOT_FOUND, NEGOTIATION_ERROR).await;
    // Another consumer pid in a message about it: 400.
    let wrong = w.pids(
        &pid,
        "urn:uuid:someone-else",
        "ContractAgreementVerificationMessage",
    );
    let r = w.dsp(Method::POST, &path, Some(&wrong)).await;
    assert_dsp_error(r, StatusCode::BAD_REQUEST, NEGOTIATION_ERROR).await;
    // Malformed first requests: nothing stored, each a 400.
    let bad = |change: &dyn Fn(&mut Value)| {
        let mut m = request.clone();
        change(&mut m);
        m
    };
    for m in [
        bad(&|m| {
            m.as_object_mut().unwrap().remove("consumerPid");
        }),
        bad(&|m| m["@type"] = json!("ContractOfferMessage")),
        bad(&|m| {
            m.as_object_mut().unwrap().remove("@context");
        }),
        bad(&|m| m["callbackAddress"] = json!("http://169.254.169.254/latest")),
        bad(&|m| m["callbackAddress"] = json!("not a url")),
        bad(&|m| m["offer"] = json!({"@type": "Offer"})),
        bad(&|m| m["offer"]["@id"] = json!("urn:uuid:not-ours")),
        bad(&|m| m["providerPid"] = json!(pid)),
    ] {
        let r = w.dsp(Method::POST, "negotiations/request", Some(&m)).await;
        assert_dsp_error(r, StatusCode::BAD_REQUEST, NEGOTIATION_ERROR).await;
    }
}

#[tokio::test]
async fn a_negotiation_goes_on_after_a_restart() {
    let mut w = World::new().await;
    w.publish(1, "KEMBA").await;
    let dataset = w.first_dataset().await;
    let offer = dataset["hasPolicy"][0].clone();
    // The consumer is down: the agreement waits.
    w.consumer.answer(503);
    let cpid = "urn:uuid:2f1c7a4e-0c1b-4c8e-9a55-7f3f1d2a0005";
    let pid = w
        .negotiate(&w.contract_request(cpid, &dataset, &offer))
        .await;
    w.consumer
        .wait_for(&format!("negotiations/{cpid}/agreement"))
        .await;
    w.node = w.node.restart().await;
    let r = w
        .dsp(Method::GET, &format!("negotiations/{pid}"), None)
        .await;
    assert_eq!(
        super::super::common::json_body(r).await["state"],
        "REQUESTED"
    );
    let tried = w.consumer.received_count();
    w.consumer.answer(200);
    w.negotiation_reaches(&pid, "AGREED").await;
    assert!(w.consumer.received_count() > tried);
}
