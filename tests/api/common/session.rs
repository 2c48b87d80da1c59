//! Accounts and logged-in sessions: what every request of an organisation's user carries.

use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

use super::{as_org, assert_completed, example, json_body, TestNode, INBOX, OPERATOR_KEY};

pub struct Account {
    pub email: String,
    pub password: String,
    pub identity: String,
    pub organization: String,
    pub api_key: String,
    pub token: String,
}

impl TestNode {
    pub async fn create_account(&self, key: &str, email: &str, org: Option<&str>) -> Account {
        let password = "correct horse battery".to_string();
        let mut body = json!({"email": email, "password": password});
        if let Some(org) = org {
            body["organizationId"] = json!(org);
        }
        let r = self
            .post_json("/authentication/login/create", Some(key), &body)
            .await;
        assert_eq!(r.status(), StatusCode::CREATED, "create {email}");
        let v: Value = r.json().await.unwrap();
        Account {
            email: email.into(),
            password,
            identity: v["identity"].as_str().unwrap().into(),
            organization: v["organizationId"].as_str().unwrap().into(),
            api_key: v["apiKey"].as_str().unwrap().into(),
            token: v["token"].as_str().unwrap().into(),
        }
    }

    /// Logs in and returns the session token from the Set-Cookie header.
    pub async fn login(&self, key: &str, email: &str, password: &str) -> String {
        let r = self
            .post_json(
                "/authentication/login",
                Some(key),
                &json!({"email": email, "password": password}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::OK, "login {email}");
        session_cookie(&r).expect("access_token cookie")
    }

    /// GET with the api key and a session token sent as a cookie.
    pub async fn get_with_cookie(&self, path: &str, key: &str, token: &str) -> Response {
        self.client
            .get(self.url(path))
            .header("x-api-key", key)
            .header("cookie", format!("access_token={token}"))
            .send()
            .await
            .unwrap()
    }

    pub async fn get_with_bearer(&self, path: &str, key: &str, token: &str) -> Response {
        self.client
            .get(self.url(path))
            .header("x-api-key", key)
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }
}

/// The session token of a login answer's `Set-Cookie`, if it set one.
pub fn session_cookie(r: &Response) -> Option<String> {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.strip_prefix("access_token="))
        .map(|rest| rest.split(';').next().unwrap().to_string())
}

/// A user of an organisation of its own, logged in.
pub struct Session {
    pub account: Account,
    pub token: String,
}

impl Session {
    pub async fn new(node: &TestNode, email: &str) -> Self {
        let account = node.create_account(OPERATOR_KEY, email, None).await;
        let token = node
            .login(&account.api_key, &account.email, &account.password)
            .await;
        Self { account, token }
    }

    /// The same account logged in again on `node` (after a restart, say).
    pub async fn logged_in_again(self, node: &TestNode) -> Self {
        let token = node
            .login(
                &self.account.api_key,
                &self.account.email,
                &self.account.password,
            )
            .await;
        Self {
            account: self.account,
            token,
        }
    }

    pub fn org(&self) -> &str {
        &self.account.organization
    }

    pub async fn post(&self, node: &TestNode, activity: &Value) -> reqwest::Response {
        node.client
            .post(node.url(INBOX))
            .header("x-api-key", &self.account.api_key)
            .header("cookie", format!("access_token={}", self.token))
            .json(activity)
            .send()
            .await
            .unwrap()
    }

    pub async fn client_post_with(
        &self,
        node: &TestNode,
        activity: &Value,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut req = node
            .client
            .post(node.url(INBOX))
            .header("x-api-key", &self.account.api_key)
            .bearer_auth(&self.token)
            .json(activity);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.unwrap()
    }

    pub async fn post_raw(&self, node: &TestNode, body: Vec<u8>) -> reqwest::Response {
        node.client
            .post(node.url(INBOX))
            .header("x-api-key", &self.account.api_key)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap()
    }

    /// Posts and expects an entry (201); returns it.
    pub async fn publish(&self, node: &TestNode, activity: &Value) -> Value {
        let r = self.post(node, activity).await;
        assert_eq!(r.status(), StatusCode::CREATED, "{activity}");
        json_body(r).await
    }

    /// Publishes a fixture example as this organisation and expects it applied.
    pub async fn publish_example(&self, node: &TestNode, name: &str) {
        assert_completed(&self.publish(node, &as_org(example(name), self.org())).await);
    }

    pub async fn get(&self, node: &TestNode, path: &str) -> reqwest::Response {
        node.get_with_cookie(path, &self.account.api_key, &self.token)
            .await
    }

    /// POSTs `body` as JSON to `path` as this user.
    pub async fn post_to(&self, node: &TestNode, path: &str, body: &Value) -> reqwest::Response {
        node.client
            .post(node.url(path))
            .header("x-api-key", &self.account.api_key)
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .unwrap()
    }
}
