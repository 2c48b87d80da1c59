//! A partner node written here, not the node's code: it publishes did:web documents with a key
//! of its own, takes any notice, signs its own node tokens and answers dataset pulls with
//! whatever a test gives it — what a partner that does not keep to the rules can send.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode as Status};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::SigningKey;

use super::*;

struct Served {
    did: String,
    endpoint: String,
    /// The public key, as a JWK's `x`.
    x: String,
    datasets: Mutex<HashMap<String, Value>>,
}

pub(super) struct FakePartner {
    /// The node's did:web (`did:web:127.0.0.1%3A<port>`).
    pub did: String,
    /// Its one organisation.
    pub org: String,
    key: SigningKey,
    served: Arc<Served>,
    server: tokio::task::JoinHandle<()>,
}

impl FakePartner {
    /// Serves on `listener`, whose address the node under test lists as a partner.
    pub async fn serve(listener: TcpListener) -> Self {
        let host = listener.local_addr().unwrap().to_string();
        let did = format!("did:web:{}", host.replace(':', "%3A"));
        let key = SigningKey::from_bytes(&[42; 32]);
        let served = Arc::new(Served {
            did: did.clone(),
            endpoint: format!("http://{host}/federation"),
            x: URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes()),
            datasets: Mutex::new(HashMap::new()),
        });
        let app = Router::new()
            .route("/.well-known/did.json", get(node_document))
            .route("/org/{id}/did.json", get(organization_document))
            .route("/federation/inbox", post(inbox))
            .route("/federation/datasets", get(dataset))
            .with_state(served.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            org: format!("{did}:org:0fa4e1"),
            did,
            key,
            served,
            server,
        }
    }

    /// A user of the partner node.
    pub fn user(&self) -> String {
        format!("{}:user:0fa4e2", self.did)
    }

    /// What the partner answers a pull of dataset `id` with.
    pub fn serve_dataset(&self, id: &str, dataset: Value) {
        self.served
            .datasets
            .lock()
            .unwrap()
            .insert(id.to_owned(), dataset);
    }

    /// POSTs `notice` to `to`'s federation inbox as the partner's organisation, with a node
    /// token signed by the partner's key.
    pub async fn notify(&self, to: &TestNode, notice: &Value) -> reqwest::Response {
        let token = Tokens::new(self.did.clone(), &self.key)
            .unwrap()
            .issue(&self.org, &did_of(to))
            .unwrap();
        to.client
            .post(to.url("/federation/inbox"))
            .bearer_auth(token)
            .json(notice)
            .send()
            .await
            .unwrap()
    }
}

impl Drop for FakePartner {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// A DID document as did:web and the node's federation expect it: the node's key as a JWK
/// (`#node-key`) and the federation service.
fn document(served: &Served, id: &str) -> Json<Value> {
    let node = &served.did;
    Json(json!({
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": id,
        "controller": node,
        "verificationMethod": [{
            "id": format!("{node}#node-key"),
            "type": "JsonWebKey2020",
            "controller": node,
            "publicKeyJwk": {"kty": "OKP", "crv": "Ed25519", "x": served.x},
        }],
        "service": [{
            "id": format!("{id}#federation"),
            "type": "DataspaceNodeFederation",
            "serviceEndpoint": served.endpoint,
        }],
    }))
}

async fn node_document(State(served): State<Arc<Served>>) -> Json<Value> {
    document(&served, &served.did)
}

async fn organization_document(
    State(served): State<Arc<Served>>,
    Path(id): Path<String>,
) -> Json<Value> {
    document(&served, &format!("{}:org:{id}", served.did))
}

async fn inbox() -> impl IntoResponse {
    (Status::ACCEPTED, Json(json!({"status": "accepted"})))
}

/// The dataset a test gave for `id` to any caller with a bearer token; 404 otherwise.
async fn dataset(
    State(served): State<Arc<Served>>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> axum::response::Response {
    let found = params
        .get("id")
        .and_then(|id| served.datasets.lock().unwrap().get(id).cloned());
    match found {
        Some(dataset) if headers.contains_key("authorization") => Json(dataset).into_response(),
        _ => Status::NOT_FOUND.into_response(),
    }
}
