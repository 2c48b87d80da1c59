//! A Dataspace Protocol consumer written in the tests, not the node's code: a connector whose
//! participant DID (`did:web:127.0.0.1%3A<port>:org:connector`) is served from its own server
//! on loopback with its own Ed25519 key, which signs its DCP self-issued ID tokens.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode as Status;
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::pkcs8::EncodePrivateKey;
use ed25519_dalek::SigningKey;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::common::TestNode;

pub const CONTEXT: &str = "https://w3id.org/dspace/2025/1/context.jsonld";

/// A P-256 key of the connector (`#ec-1`), for ES256 tokens: generated for these tests with
/// `openssl ecparam -genkey -name prime256v1`, its public point below as a JWK's `x` and `y`.
const EC_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgwOoXx5AO2il9utu/
BqLzmlfszT7Z7qhOYh9stPRdT9ehRANCAARIro3humb9j4TovCwkN/Kl9SnssQbY
BNnd3fnZGylo11SR6XiTKh8W6U4467MYKGSXw/X1/QMZjVWOaYyFcbKA
-----END PRIVATE KEY-----
";
const EC_X: &str = "SK6N4bpm_Y-E6LwsJDfypfUp7LEG2ATZ3d352RspaNc";
const EC_Y: &str = "VJHpeJMqHxbpTjjrsxgoZJfD9fX9AxmNVY5pjIVxsoA";

struct Served {
    /// The connector's host DID prefix: `did:web:127.0.0.1%3A<port>`.
    host_did: String,
    x: String,
    base: String,
    /// The messages the provider sent to the callback: path under it, body.
    received: Mutex<Vec<(String, Value)>>,
    /// The status the callback answers.
    answer: AtomicU16,
}

pub struct Consumer {
    /// The participant DID.
    pub did: String,
    /// Where the provider calls back (`<base>/callback`).
    pub callback: String,
    /// `host:port`, which the node lists as a partner.
    pub host: String,
    key: SigningKey,
    served: Arc<Served>,
    server: tokio::task::JoinHandle<()>,
}

/// Claims of a self-issued ID token, each settable by a test.
pub struct Claims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub iat: i64,
    pub exp: i64,
    pub jti: String,
    pub kid: Option<String>,
}

impl Consumer {
    pub async fn serve(listener: TcpListener) -> Self {
        let host = listener.local_addr().unwrap().to_string();
        let host_did = format!("did:web:{}", host.replace(':', "%3A"));
        let did = format!("{host_did}:org:connector");
        let key = SigningKey::from_bytes(&[7; 32]);
        let served = Arc::new(Served {
            host_did,
            x: URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes()),
            base: format!("http://{host}"),
            received: Mutex::new(Vec::new()),
            answer: AtomicU16::new(200),
        });
        let app = Router::new()
            .route("/org/{name}/did.json", get(document))
            // The node tells a partner's organisation of its shares; a connector ignores them.
            .route("/federation/inbox", post(|| async { Status::ACCEPTED }))
            .route("/callback/{*rest}", post(callback))
            .with_state(served.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            callback: format!("http://{host}/callback"),
            did,
            host,
            key,
            served,
            server,
        }
    }

    /// Another participant of the same connector host (its own DID, the same key).
    pub fn other(&self, name: &str) -> String {
        format!("{}:org:{name}", self.served.host_did)
    }

    /// Makes the callback answer `status` from now on.
    pub fn answer(&self, status: u16) {
        self.served.answer.store(status, Ordering::SeqCst);
    }

    /// Every message that arrived at `path` under the callback so far, in order.
    pub fn all_at(&self, path: &str) -> Vec<Value> {
        self.served
            .received
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, b)| b.clone())
            .collect()
    }

    /// How many messages arrived at the callback so far.
    pub fn received_count(&self) -> usize {
        self.served.received.lock().unwrap().len()
    }

    /// The first message that arrived at `path` under the callback, waiting for it (the bound
    /// is only against a hang).
    pub async fn wait_for(&self, path: &str) -> Value {
        for _ in 0..2400 {
            let found = self
                .served
                .received
                .lock()
                .unwrap()
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, b)| b.clone());
            if let Some(body) = found {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("nothing arrived at {path}");
    }

    /// Good claims for a request to `node`.
    pub fn claims(&self, node: &TestNode) -> Claims {
        let now = chrono::Utc::now().timestamp();
        Claims {
            iss: self.did.clone(),
            sub: self.did.clone(),
            aud: node_did(node),
            iat: now,
            exp: now + 120,
            jti: uuid::Uuid::new_v4().to_string(),
            kid: Some(format!("{}#key-1", self.did)),
        }
    }

    /// The same claims signed ES256 with the connector's P-256 key.
    pub fn sign_es256(&self, claims: &Claims) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = claims.kid.clone();
        let body = json!({
            "iss": claims.iss, "sub": claims.sub, "aud": claims.aud,
            "iat": claims.iat, "exp": claims.exp, "jti": claims.jti,
        });
        let der: String = EC_KEY.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(der)
            .unwrap();
        let key = EncodingKey::from_ec_der(&der);
        jsonwebtoken::encode(&header, &body, &key).unwrap()
    }

    /// A self-issued ID token with `claims`, signed by the connector's key.
    pub fn sign(&self, claims: &Claims) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = claims.kid.clone();
        let der = self.key.to_pkcs8_der().unwrap();
        let body = json!({
            "iss": claims.iss, "sub": claims.sub, "aud": claims.aud,
            "iat": claims.iat, "exp": claims.exp, "jti": claims.jti,
        });
        jsonwebtoken::encode(&header, &body, &EncodingKey::from_ed_der(der.as_bytes())).unwrap()
    }

    /// A fresh token of participant `did` (of this connector's host) for `node`.
    pub fn token_as(&self, node: &TestNode, did: &str) -> String {
        let mut claims = self.claims(node);
        claims.iss = did.to_owned();
        claims.sub = did.to_owned();
        claims.kid = Some(format!("{did}#key-1"));
        self.sign(&claims)
    }

    /// A fresh token for `node`, sent as the raw JWT (as EDC sends it).
    pub fn token(&self, node: &TestNode) -> String {
        self.sign(&self.claims(node))
    }

    /// `POST <dsp>/catalog/request` with `message` and the `Authorization` value `auth`.
    pub async fn catalog_with(
        &self,
        node: &TestNode,
        url: &str,
        auth: Option<&str>,
        message: &Value,
    ) -> reqwest::Response {
        let mut req = node.client.post(url).json(message);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        req.send().await.unwrap()
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub fn node_did(node: &TestNode) -> String {
    format!(
        "did:web:{}",
        node.base.trim_start_matches("http://").replace(':', "%3A")
    )
}

/// What the provider sends to the callback, kept; answered with the status set.
async fn callback(
    State(served): State<Arc<Served>>,
    Path(rest): Path<String>,
    Json(body): Json<Value>,
) -> Status {
    let status = served.answer.load(Ordering::SeqCst);
    served.received.lock().unwrap().push((rest, body));
    Status::from_u16(status).unwrap()
}

/// A participant's DID document: the connector's key, usable for capability invocation (what
/// signs DCP self-issued tokens), and a second one that is not.
async fn document(State(served): State<Arc<Served>>, Path(name): Path<String>) -> Json<Value> {
    let did = &format!("{}:org:{name}", served.host_did);
    let method = |id: &str| {
        json!({
            "id": format!("{did}#{id}"),
            "type": "JsonWebKey2020",
            "controller": did,
            "publicKeyJwk": {"kty": "OKP", "crv": "Ed25519", "x": served.x},
        })
    };
    Json(json!({
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": did,
        "verificationMethod": [method("key-1"), method("auth-only"), {
            "id": format!("{did}#ec-1"),
            "type": "JsonWebKey2020",
            "controller": did,
            "publicKeyJwk": {"kty": "EC", "crv": "P-256", "x": EC_X, "y": EC_Y},
        }],
        "capabilityInvocation": [format!("{did}#key-1"), format!("{did}#ec-1")],
        "authentication": [format!("{did}#auth-only")],
        "service": [{
            "id": format!("{did}#federation"),
            "type": "DataspaceNodeFederation",
            "serviceEndpoint": format!("{}/federation", served.base),
        }],
    }))
}
