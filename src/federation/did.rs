//! did:web: the documents this node publishes and the resolution of other nodes' DIDs.
//!
//! A node's DID is `did:web:<host>[%3Aport][:path]` (its base URL); each organisation's is the
//! node's plus `:org:<id>`, resolved at `<base>/org/<id>/did.json`. Both documents carry the
//! node's Ed25519 key and a service entry of type [`SERVICE_TYPE`] pointing at the node's
//! federation endpoint, which is where notices are sent and datasets pulled.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::VerifyingKey;
use percent_encoding::percent_decode_str;
use serde_json::{json, Value};
use url::Url;

/// The `type` of the service entry naming a node's federation endpoint.
pub const SERVICE_TYPE: &str = "DataspaceNodeFederation";
/// The fragment of the node key's verification method.
pub const KEY_FRAGMENT: &str = "node-key";
/// DID documents larger than this are not read (the rest of the body is never received).
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;
/// How long a resolved document is reused.
const CACHE_TTL: Duration = Duration::from_secs(300);

/// The node DID an organisation DID belongs to (`did:web:<node>:org:<id>` → `did:web:<node>`).
pub fn node_of(org_did: &str) -> Option<&str> {
    let (node, id) = org_did.rsplit_once(":org:")?;
    (node.starts_with("did:web:")
        && node.len() > "did:web:".len()
        && !id.is_empty()
        && id.chars().all(|c| c.is_ascii_alphanumeric()))
    .then_some(node)
}

/// The host (with port) a did:web names, as the allow-list writes it.
pub fn host_of(did: &str) -> Option<String> {
    let id = did.strip_prefix("did:web:")?;
    let host = id.split(':').next()?;
    Some(
        percent_decode_str(host)
            .decode_utf8()
            .ok()?
            .to_ascii_lowercase(),
    )
}

/// Where a did:web's document is: `https://host/.well-known/did.json` for a bare host,
/// `https://host/a/b/did.json` for `did:web:host:a:b`; plain HTTP only for allowed hosts.
pub fn document_url(did: &str, allow_http: &HashSet<String>) -> Result<Url, String> {
    let id = did
        .strip_prefix("did:web:")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| format!("{did:?} is not a did:web"))?;
    let mut parts = id.split(':');
    let host = host_of(did).ok_or_else(|| format!("{did:?} has no host"))?;
    parts.next();
    let path: Vec<&str> = parts.collect();
    if path.iter().any(|p| p.is_empty() || *p == "." || *p == "..") {
        return Err(format!("{did:?} has an empty or relative path segment"));
    }
    let scheme = if allow_http.contains(&host) {
        "http"
    } else {
        "https"
    };
    let path = if path.is_empty() {
        "/.well-known/did.json".to_owned()
    } else {
        format!("/{}/did.json", path.join("/"))
    };
    Url::parse(&format!("{scheme}://{host}{path}")).map_err(|e| format!("{did:?}: {e}"))
}

fn verification_method(controller: &str, key: &VerifyingKey) -> Value {
    json!({
        "id": format!("{controller}#{KEY_FRAGMENT}"),
        "type": "JsonWebKey2020",
        "controller": controller,
        "publicKeyJwk": {
            "kty": "OKP",
            "crv": "Ed25519",
            "x": URL_SAFE_NO_PAD.encode(key.to_bytes()),
        },
    })
}

/// A DID document of this node (`did` = the node's DID) or of one of its organisations; the
/// key is the node's in both, since the node signs for its organisations.
pub fn document(did: &str, node_did: &str, key: &VerifyingKey, endpoint: &str) -> Value {
    let method = verification_method(node_did, key);
    let mut doc = json!({
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"],
        "id": did,
        "verificationMethod": [method],
        "authentication": [format!("{node_did}#{KEY_FRAGMENT}")],
        // What signs a Dataspace Protocol participant's self-issued ID tokens (DCP 1.0).
        "capabilityInvocation": [format!("{node_did}#{KEY_FRAGMENT}")],
        "assertionMethod": [format!("{node_did}#{KEY_FRAGMENT}"), format!("{node_did}#attestation-key")],
        "service": [{
            "id": format!("{did}#federation"),
            "type": SERVICE_TYPE,
            "serviceEndpoint": endpoint,
        }],
    });
    if did == node_did {
        // The attestation key id documents have always named: the same key.
        let mut attestation = verification_method(node_did, key);
        attestation["id"] = json!(format!("{node_did}#attestation-key"));
        doc["verificationMethod"]
            .as_array_mut()
            .expect("literal array")
            .push(attestation);
    } else {
        doc["controller"] = json!(node_did);
    }
    doc
}

/// The Ed25519 key of verification method `kid` (a full DID URL) in `doc`.
pub fn key_of(doc: &Value, kid: &str) -> Option<VerifyingKey> {
    let method = doc
        .get("verificationMethod")?
        .as_array()?
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(kid))?;
    let jwk = method.get("publicKeyJwk")?;
    if jwk.get("kty")?.as_str()? != "OKP" || jwk.get("crv")?.as_str()? != "Ed25519" {
        return None;
    }
    let x: [u8; 32] = URL_SAFE_NO_PAD
        .decode(jwk.get("x")?.as_str()?)
        .ok()?
        .try_into()
        .ok()?;
    VerifyingKey::from_bytes(&x).ok()
}

/// The federation endpoint a DID document names.
pub fn endpoint_of(doc: &Value) -> Option<String> {
    doc.get("service")?
        .as_array()?
        .iter()
        .find(|s| s.get("type").and_then(Value::as_str) == Some(SERVICE_TYPE))?
        .get("serviceEndpoint")?
        .as_str()
        .map(str::to_owned)
}

/// Resolves other nodes' did:web documents over HTTPS (HTTP for allowed hosts), keeping them
/// for a few minutes.
pub struct Resolver {
    client: reqwest::Client,
    /// Partner hosts; `None`: any host.
    partners: Option<HashSet<String>>,
    allow_http: HashSet<String>,
    cache: Mutex<HashMap<String, (Instant, Arc<Value>)>>,
}

impl Resolver {
    /// `partners` lists the hosts whose DIDs may be resolved (`*` for any); hosts in
    /// `allow_http` are partners reached over plain HTTP.
    pub fn new(client: reqwest::Client, partners: &[String], allow_http: &[String]) -> Self {
        let hosts = |list: &[String]| -> HashSet<String> {
            list.iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect()
        };
        let allow_http = hosts(allow_http);
        let partners = hosts(partners);
        let partners =
            (!partners.contains("*")).then(|| partners.union(&allow_http).cloned().collect());
        Self {
            client,
            partners,
            allow_http,
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub fn allow_http(&self) -> &HashSet<String> {
        &self.allow_http
    }

    /// Is `did` (a node's or an organisation's did:web) on a partner node?
    pub fn is_partner(&self, did: &str) -> bool {
        host_of(did).is_some_and(|host| self.is_partner_host(&host))
    }

    /// Is `host` (`host` or `host:port`, lower case) a partner node's?
    pub fn is_partner_host(&self, host: &str) -> bool {
        !host.is_empty() && self.partners.as_ref().is_none_or(|p| p.contains(host))
    }

    /// Are the partner hosts listed one by one (not `*`, not none)? What a Dataspace Protocol
    /// participant needs: it is called back on its own host.
    pub fn lists_partners(&self) -> bool {
        self.partners.as_ref().is_some_and(|p| !p.is_empty())
    }

    /// Is federation configured at all?
    pub fn has_partners(&self) -> bool {
        self.partners.as_ref().is_none_or(|p| !p.is_empty())
    }

    /// The document of `did`, whose `id` must be `did`. `Err` says why not (for logs).
    pub async fn resolve(&self, did: &str) -> Result<Arc<Value>, String> {
        if let Some((at, doc)) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(did)
        {
            if at.elapsed() < CACHE_TTL {
                return Ok(doc.clone());
            }
        }
        // Only partners' DIDs are fetched: a token or notice names them, and nothing a
        // caller names is fetched unless configuration allows it.
        if !self.is_partner(did) {
            return Err(format!(
                "{did} is not on a partner node (--federation-partners)"
            ));
        }
        let url = document_url(did, &self.allow_http)?;
        let response = self
            .client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{url}: status {}", response.status()));
        }
        let bytes = crate::capped::bytes(response, MAX_DOCUMENT_BYTES)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let doc: Value = serde_json::from_slice(&bytes).map_err(|e| format!("{url}: {e}"))?;
        if doc.get("id").and_then(Value::as_str) != Some(did) {
            return Err(format!("{url}: the document is not about {did}"));
        }
        let doc = Arc::new(doc);
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(did.to_owned(), (Instant::now(), doc.clone()));
        Ok(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn did_web_urls() {
        let none = HashSet::new();
        assert_eq!(
            document_url("did:web:node.example", &none)
                .unwrap()
                .as_str(),
            "https://node.example/.well-known/did.json"
        );
        assert_eq!(
            document_url("did:web:node.example:org:ab12", &none)
                .unwrap()
                .as_str(),
            "https://node.example/org/ab12/did.json"
        );
        let loopback: HashSet<String> = ["127.0.0.1:9000".to_owned()].into();
        assert_eq!(
            document_url("did:web:127.0.0.1%3A9000:org:x", &loopback)
                .unwrap()
                .as_str(),
            "http://127.0.0.1:9000/org/x/did.json"
        );
        // Another port of an allowed host is not allowed.
        assert!(document_url("did:web:127.0.0.1%3A9001", &loopback)
            .unwrap()
            .as_str()
            .starts_with("https://"));
        for bad in [
            "did:key:z6Mk",
            "did:web:",
            "did:web:host::x",
            "did:web:host:..:x",
        ] {
            assert!(document_url(bad, &none).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn only_partners_are_resolved() {
        let client = reqwest::Client::new();
        let none = Resolver::new(client.clone(), &[], &[]);
        assert!(!none.has_partners());
        let err = none.resolve("did:web:evil.example").await.unwrap_err();
        assert!(err.contains("partner"), "{err}");
        let some = Resolver::new(
            client.clone(),
            &["A.example".into()],
            &["127.0.0.1:9".into()],
        );
        assert!(some.is_partner("did:web:a.example:org:x"));
        assert!(some.is_partner("did:web:127.0.0.1%3A9"));
        assert!(!some.is_partner("did:web:127.0.0.1%3A10"));
        assert!(!some.is_partner("did:web:b.example"));
        let any = Resolver::new(client, &["*".into()], &[]);
        assert!(any.is_partner("did:web:b.example"));
    }

    #[test]
    fn organisations_belong_to_their_node() {
        assert_eq!(
            node_of("did:web:a.example%3A8443:org:ab12"),
            Some("did:web:a.example%3A8443")
        );
        assert_eq!(node_of("did:web:a.example:user:ab12"), None);
        assert_eq!(node_of("did:web::org:ab"), None);
        assert_eq!(node_of("did:web:a.example:org:a/b"), None);
    }

    #[test]
    fn documents_carry_the_key_and_the_endpoint() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let node = "did:web:a.example";
        let doc = document(
            "did:web:a.example:org:x1",
            node,
            &key.verifying_key(),
            "https://a.example/federation",
        );
        assert_eq!(
            key_of(&doc, "did:web:a.example#node-key"),
            Some(key.verifying_key())
        );
        assert_eq!(key_of(&doc, "did:web:b.example#node-key"), None);
        assert_eq!(
            endpoint_of(&doc).as_deref(),
            Some("https://a.example/federation")
        );
        assert_eq!(doc["controller"], node);
    }
}
