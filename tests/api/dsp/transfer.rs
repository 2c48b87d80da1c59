//! Transfer processes with the node as provider, HTTP pull: started on a finalized agreement,
//! the consignment pulled with the bearer token the start message hands over, suspended,
//! resumed, completed; a revoked share stops the token at once and terminates the transfer;
//! another transfer's token, a wrong one and malformed requests are refused.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::consumer::CONTEXT;
use super::schemas::assert_valid;
use super::{assert_dsp_error, World};
use crate::common::{assert_error, get_json, json_body, Session};

const TRANSFER_ERROR: &str = "TransferError";

impl World {
    /// A finalized negotiation of the first dataset as consumer pid `cpid`: the agreement id.
    async fn agreed(&self, cpid: &str) -> String {
        let dataset = self.first_dataset().await;
        let offer = dataset["hasPolicy"][0].clone();
        let pid = self
            .negotiate(&self.contract_request(cpid, &dataset, &offer))
            .await;
        let agreed = self
            .consumer
            .wait_for(&format!("negotiations/{cpid}/agreement"))
            .await;
        self.negotiation_reaches(&pid, "AGREED").await;
        let verification = self.pids(&pid, cpid, "ContractAgreementVerificationMessage");
        let path = format!("negotiations/{pid}/agreement/verification");
        assert_eq!(
            self.dsp(Method::POST, &path, Some(&verification))
                .await
                .status(),
            StatusCode::OK
        );
        self.negotiation_reaches(&pid, "FINALIZED").await;
        agreed["agreement"]["@id"].as_str().unwrap().to_owned()
    }

    fn transfer_request(&self, cpid: &str, agreement: &str) -> Value {
        let m = json!({
            "@context": [CONTEXT],
            "@type": "TransferRequestMessage",
            "consumerPid": cpid,
            "agreementId": agreement,
            "format": "HttpData-PULL",
            "callbackAddress": self.consumer.callback,
        });
        assert_valid("transfer/transfer-request-message-schema.json", &m);
        m
    }

    /// Requests a transfer: its provider pid (201 `REQUESTED`).
    async fn transfer(&self, request: &Value) -> String {
        let r = self
            .dsp(Method::POST, "transfers/request", Some(request))
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        let t = json_body(r).await;
        assert_valid("transfer/transfer-process-schema.json", &t);
        assert_eq!(t["state"], "REQUESTED");
        t["providerPid"].as_str().unwrap().to_owned()
    }

    async fn transfer_reaches(&self, pid: &str, state: &str) {
        for _ in 0..2400 {
            let r = self
                .dsp(Method::GET, &format!("transfers/{pid}"), None)
                .await;
            let t = json_body(r).await;
            assert_valid("transfer/transfer-process-schema.json", &t);
            if t["state"] == state {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("transfer {pid} never reached {state}");
    }

    /// The start message's endpoint and bearer token.
    async fn started(&self, cpid: &str) -> (String, String) {
        let start = self
            .consumer
            .wait_for(&format!("transfers/{cpid}/start"))
            .await;
        assert_valid("transfer/transfer-start-message-schema.json", &start);
        let address = &start["dataAddress"];
        assert_eq!(address["endpointType"], "https://w3id.org/idsa/v4.1/HTTP");
        let property = |name: &str| {
            address["endpointProperties"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == name)
                .map(|p| p["value"].as_str().unwrap().to_owned())
                .unwrap()
        };
        assert_eq!(property("authType"), "bearer");
        (
            address["endpoint"].as_str().unwrap().to_owned(),
            property("authorization"),
        )
    }

    async fn pull(&self, endpoint: &str, token: Option<&str>, accept: &str) -> reqwest::Response {
        let mut req = self.node.client.get(endpoint).header("accept", accept);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.unwrap()
    }

    /// The status of a JSON-LD pull with `token`.
    async fn pulled(&self, endpoint: &str, token: &str) -> StatusCode {
        self.pull(endpoint, Some(token), "application/ld+json")
            .await
            .status()
    }

    async fn step(&self, pid: &str, cpid: &str, step: &str, kind: &str) -> reqwest::Response {
        let mut m = self.pids(pid, cpid, kind);
        if kind != "TransferCompletionMessage" && kind != "TransferStartMessage" {
            m["code"] = json!("consumer");
            m["reason"] = json!(["asked by the consumer"]);
        }
        let schema = match kind {
            "TransferStartMessage" => "transfer/transfer-start-message-schema.json",
            "TransferCompletionMessage" => "transfer/transfer-completion-message-schema.json",
            "TransferSuspensionMessage" => "transfer/transfer-suspension-message-schema.json",
            _ => "transfer/transfer-termination-message-schema.json",
        };
        assert_valid(schema, &m);
        self.dsp(Method::POST, &format!("transfers/{pid}/{step}"), Some(&m))
            .await
    }
}

#[tokio::test]
async fn a_finalized_agreement_starts_a_pull_that_reads_the_consignment_while_started() {
    let w = World::new().await;
    w.publish(1, "KEMBA").await;
    let agreement = w
        .agreed("urn:uuid:7a0c0000-0000-4000-8000-000000000001")
        .await;
    let cpid = "urn:uuid:7a0c0000-0000-4000-8000-0000000000a1";
    let pid = w.transfer(&w.transfer_request(cpid, &agreement)).await;
    let (endpoint, token) = w.started(cpid).await;
    w.transfer_reaches(&pid, "STARTED").await;

    let r = w.pull(&endpoint, Some(&token), "application/ld+json").await;
    assert_eq!(r.status(), StatusCode::OK);
    let text = r.text().await.unwrap();
    let pulled: Value = serde_json::from_str(&text).unwrap();
    assert!(pulled.get("@context").is_some(), "{pulled}");
    assert!(
        text.contains("urn:uuid:00000000-0000-4000-8000-000000000001"),
        "{text}"
    );
    let r = w.pull(&endpoint, Some(&token), "text/turtle").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("00000000-0000-4000-8000-000000000001"));
    // Without the token, with a wrong one: 401.
    for t in [None, Some("dsp_wrong")] {
        assert_eq!(
            w.pull(&endpoint, t, "application/ld+json").await.status(),
            StatusCode::UNAUTHORIZED
        );
    }
    // Another transfer's token does not open this one.
    let cpid2 = "urn:uuid:7a0c0000-0000-4000-8000-0000000000a2";
    let pid2 = w.transfer(&w.transfer_request(cpid2, &agreement)).await;
    let (endpoint2, token2) = w.started(cpid2).await;
    w.transfer_reaches(&pid2, "STARTED").await;
    assert_eq!(w.pulled(&endpoint, &token2).await, StatusCode::UNAUTHORIZED);
    assert_eq!(w.pulled(&endpoint2, &token2).await, StatusCode::OK);

    // Suspended: no pull; resumed: again; completed: never again.
    assert_eq!(
        w.step(&pid, cpid, "suspension", "TransferSuspensionMessage")
            .await
            .status(),
        StatusCode::OK
    );
    w.transfer_reaches(&pid, "SUSPENDED").await;
    assert_eq!(w.pulled(&endpoint, &token).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        w.step(&pid, cpid, "start", "TransferStartMessage")
            .await
            .status(),
        StatusCode::OK
    );
    assert_eq!(w.pulled(&endpoint, &token).await, StatusCode::OK);
    assert_eq!(
        w.step(&pid, cpid, "completion", "TransferCompletionMessage")
            .await
            .status(),
        StatusCode::OK
    );
    w.transfer_reaches(&pid, "COMPLETED").await;
    assert_eq!(w.pulled(&endpoint, &token).await, StatusCode::UNAUTHORIZED);
    let r = w
        .step(&pid, cpid, "completion", "TransferCompletionMessage")
        .await;
    assert_dsp_error(r, StatusCode::BAD_REQUEST, TRANSFER_ERROR).await;
    // Terminated by the consumer: the token stops.
    assert_eq!(
        w.step(&pid2, cpid2, "termination", "TransferTerminationMessage")
            .await
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        w.pulled(&endpoint2, &token2).await,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn a_revoked_share_stops_the_token_at_once_and_terminates_the_transfer() {
    let w = World::new().await;
    w.publish(1, "KEMBA").await;
    let agreement = w
        .agreed("urn:uuid:7a0c0000-0000-4000-8000-000000000003")
        .await;
    let cpid = "urn:uuid:7a0c0000-0000-4000-8000-0000000000a3";
    let pid = w.transfer(&w.transfer_request(cpid, &agreement)).await;
    let (endpoint, token) = w.started(cpid).await;
    w.transfer_reaches(&pid, "STARTED").await;
    w.operator.delete(&w.node, &w.policy).await;
    // At once: the pull checks the share itself.
    let r = w.pull(&endpoint, Some(&token), "application/ld+json").await;
    assert!(
        r.status() == StatusCode::FORBIDDEN || r.status() == StatusCode::UNAUTHORIZED,
        "{}",
        r.status()
    );
    let end = w
        .consumer
        .wait_for(&format!("transfers/{cpid}/termination"))
        .await;
    assert_valid("transfer/transfer-termination-message-schema.json", &end);
    w.transfer_reaches(&pid, "TERMINATED").await;
    assert_eq!(w.pulled(&endpoint, &token).await, StatusCode::UNAUTHORIZED);
    // A new transfer on the old agreement is refused a start: terminated at once.
    let cpid = "urn:uuid:7a0c0000-0000-4000-8000-0000000000a4";
    let pid = w.transfer(&w.transfer_request(cpid, &agreement)).await;
    let end = w
        .consumer
        .wait_for(&format!("transfers/{cpid}/termination"))
        .await;
    assert_valid("transfer/transfer-termination-message-schema.json", &end);
    w.transfer_reaches(&pid, "TERMINATED").await;
}

#[tokio::test]
async fn malformed_and_foreign_transfer_requests_are_refused() {
    let w = World::new().await;
    w.publish(1, "KEMBA").await;
    let agreement = w
        .agreed("urn:uuid:7a0c0000-0000-4000-8000-000000000005")
        .await;
    let cpid = "urn:uuid:7a0c0000-0000-4000-8000-0000000000a5";
    let good = w.transfer_request(cpid, &agreement);
    let bad = |change: &dyn Fn(&mut Value)| {
        let mut m = good.clone();
        change(&mut m);
        m
    };
    for m in [
        bad(&|m| {
            m["agreementId"] =
                json!("urn:dataspace-node:agreement:00000000-0000-4000-8000-000000000000")
        }),
        bad(&|m| m["agreementId"] = json!("urn:uuid:whatever")),
        bad(&|m| m["format"] = json!("HttpData-PUSH")),
        bad(&|m| {
            m["dataAddress"] =
                json!({"@type": "DataAddress", "endpointType": "https://w3id.org/idsa/v4.1/HTTP"})
        }),
        bad(&|m| m["callbackAddress"] = json!("https://elsewhere.example/cb")),
        bad(&|m| {
            m.as_object_mut().unwrap().remove("consumerPid");
        }),
        bad(&|m| m["@type"] = json!("TransferStartMessage")),
    ] {
        let r = w.dsp(Method::POST, "transfers/request", Some(&m)).await;
        assert_dsp_error(r, StatusCode::BAD_REQUEST, TRANSFER_ERROR).await;
    }
    // Another participant's agreement is not theirs; its transfers are not theirs either.
    let other = w.consumer.other("rival");
    let r = w
        .dsp_as(Some(&other), Method::POST, "transfers/request", Some(&good))
        .await;
    assert_dsp_error(r, StatusCode::BAD_REQUEST, TRANSFER_ERROR).await;
    let pid = w.transfer(&good).await;
    let r = w
        .dsp_as(Some(&other), Method::GET, &format!("transfers/{pid}"), None)
        .await;
    assert_dsp_error(r, StatusCode::NOT_FOUND, TRANSFER_ERROR).await;
    // Out of order: completing what has not started (the start not acknowledged yet or
    // acknowledged: either way a completion of a REQUESTED or a second one is refused).
    w.transfer_reaches(&pid, "STARTED").await;
    let r = w.step(&pid, cpid, "start", "TransferStartMessage").await;
    assert_dsp_error(r, StatusCode::BAD_REQUEST, TRANSFER_ERROR).await;
}

#[tokio::test]
async fn the_publisher_suspends_resumes_and_completes_a_transfer_and_the_consumer_is_told() {
    let w = World::new().await;
    w.publish(1, "KEMBA").await;
    let agreement = w
        .agreed("urn:uuid:7a0c0000-0000-4000-8000-000000000006")
        .await;
    let cpid = "urn:uuid:7a0c0000-0000-4000-8000-0000000000a6";
    let pid = w.transfer(&w.transfer_request(cpid, &agreement)).await;
    let (endpoint, token) = w.started(cpid).await;
    w.transfer_reaches(&pid, "STARTED").await;
    let provider = |step: &str| format!("/supply-chain/data-space/transfers/{pid}/{step}");
    // The publisher lists it; another organisation sees nothing and changes nothing.
    let listed = get_json(&w.trader, &w.node, "/supply-chain/data-space/transfers").await;
    assert_eq!(listed["entities"][0]["providerPid"], pid.as_str());
    assert_eq!(
        listed["entities"][0]["participant"],
        w.consumer.did.as_str()
    );
    let other = Session::new(&w.node, "other@forwarder.example").await;
    let mine = get_json(&other, &w.node, "/supply-chain/data-space/transfers").await;
    assert_eq!(mine["entities"], json!([]));
    let r = other
        .post_to(&w.node, &provider("suspend"), &json!({}))
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;

    // Suspended: at once no pull, and the consumer told.
    let r = w
        .trader
        .post_to(&w.node, &provider("suspend"), &json!({}))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(w.pulled(&endpoint, &token).await, StatusCode::UNAUTHORIZED);
    let told = w
        .consumer
        .wait_for(&format!("transfers/{cpid}/suspension"))
        .await;
    assert_valid("transfer/transfer-suspension-message-schema.json", &told);
    w.transfer_reaches(&pid, "SUSPENDED").await;
    // The consumer cannot undo the provider's suspension.
    let r = w.step(&pid, cpid, "start", "TransferStartMessage").await;
    assert_dsp_error(r, StatusCode::BAD_REQUEST, TRANSFER_ERROR).await;
    // Resumed: a new start with a new token; the old one stays refused.
    let r = w
        .trader
        .post_to(&w.node, &provider("resume"), &json!({}))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    w.transfer_reaches(&pid, "STARTED").await;
    let starts: Vec<Value> = w.consumer.all_at(&format!("transfers/{cpid}/start"));
    assert_eq!(starts.len(), 2);
    assert_valid("transfer/transfer-start-message-schema.json", &starts[1]);
    let renewed = starts[1]["dataAddress"]["endpointProperties"][0]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(renewed, token);
    assert_eq!(w.pulled(&endpoint, &token).await, StatusCode::UNAUTHORIZED);
    assert_eq!(w.pulled(&endpoint, &renewed).await, StatusCode::OK);
    // Completed by the provider: told, and over.
    let r = w
        .trader
        .post_to(&w.node, &provider("complete"), &json!({}))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        w.pulled(&endpoint, &renewed).await,
        StatusCode::UNAUTHORIZED
    );
    let told = w
        .consumer
        .wait_for(&format!("transfers/{cpid}/completion"))
        .await;
    assert_valid("transfer/transfer-completion-message-schema.json", &told);
    w.transfer_reaches(&pid, "COMPLETED").await;
    let r = w
        .trader
        .post_to(&w.node, &provider("terminate"), &json!({}))
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "GeneralError").await;
    let r = w
        .trader
        .post_to(&w.node, &provider("pause"), &json!({}))
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "GeneralError").await;
}
