//! Sharing: the node operator who manages policies, ODRL rules, and the Kenya circle.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{form_encoded, json_body, Session, TestNode, OPERATOR_KEY, POLICIES};

/// The operator account's session, presented with the node operator's key: what manages
/// policies and organisations.
pub struct Operator {
    pub token: String,
}

/// The operator account's login.
pub const OPERATOR_EMAIL: &str = "operator@node.example";
pub const OPERATOR_PASSWORD: &str = "correct horse battery";

impl Operator {
    /// Creates the node's operator account (unless an earlier call did) and signs in with it.
    pub async fn new(node: &TestNode) -> Self {
        let r = node
            .post_json(
                "/operations/operator",
                Some(OPERATOR_KEY),
                &json!({"email": OPERATOR_EMAIL, "password": OPERATOR_PASSWORD}),
            )
            .await;
        assert!(
            r.status() == StatusCode::CREATED || r.status() == StatusCode::CONFLICT,
            "operator account: {}",
            r.status()
        );
        let token = node
            .login(OPERATOR_KEY, OPERATOR_EMAIL, OPERATOR_PASSWORD)
            .await;
        Self { token }
    }

    /// A request as the operator, with `body` as JSON if there is one.
    pub async fn send(
        &self,
        node: &TestNode,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> reqwest::Response {
        let mut req = node
            .client
            .request(method, node.url(path))
            .header("x-api-key", OPERATOR_KEY)
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(b);
        }
        req.send().await.unwrap()
    }

    /// Posts a policy and returns the answer, whatever it is.
    pub async fn try_policy(&self, node: &TestNode, body: Value) -> reqwest::Response {
        self.send(node, Method::POST, POLICIES, Some(&body)).await
    }

    /// Stores a policy and returns it as the node answered.
    pub async fn policy(&self, node: &TestNode, body: Value) -> Value {
        let r = self.try_policy(node, body.clone()).await;
        assert_eq!(r.status(), StatusCode::CREATED, "{body}");
        json_body(r).await
    }

    /// Deletes a policy (revoking the access it alone gave).
    pub async fn delete(&self, node: &TestNode, uid: &str) {
        let path = format!("{POLICIES}/{}", form_encoded(uid));
        let r = self.send(node, Method::DELETE, &path, None).await;
        assert!(r.status().is_success(), "{}", r.status());
    }
}

fn target(node: &TestNode) -> String {
    format!("{}/supply-chain/data-space/consignments", node.base)
}

/// An ODRL set letting `assignee` read the consignments where `operand operator right`.
pub fn rule(node: &TestNode, assignee: &str, operand: &str, operator: &str, right: Value) -> Value {
    json!({
        "@context": "http://www.w3.org/ns/odrl.jsonld",
        "@type": "Set",
        "permission": [{
            "action": "read", "assignee": assignee, "target": target(node),
            "constraint": [{"leftOperand": operand, "operator": operator, "rightOperand": right}]
        }]
    })
}

/// The operator, a trader and the Kenyan border agency, with the operator's rule sharing every
/// consignment that enters Kenya with the agency.
pub async fn kenya_circle(node: &TestNode) -> (Operator, Session, Session) {
    let (operator, trader, agency, _) = kenya_circle_with_policy(node).await;
    (operator, trader, agency)
}

/// [`kenya_circle`], and the stored rule (to delete it).
pub async fn kenya_circle_with_policy(node: &TestNode) -> (Operator, Session, Session, Value) {
    let operator = Operator::new(node).await;
    let trader = Session::new(node, "trader@forwarder.example").await;
    let agency = Session::new(node, "officer@kra.example").await;
    let policy = operator
        .policy(
            node,
            rule(node, agency.org(), "portOfEntryCountry", "eq", json!("KE")),
        )
        .await;
    (operator, trader, agency, policy)
}
