//! The trust credential: the node's attestation of which actor published which activity, a
//! compact JWS (`alg` EdDSA) signed with the node's Ed25519 key — the key of the node's DID
//! document (`/.well-known/did.json`, verification method `#node-key`), so anyone can check it
//! with the public key alone. Injected into every activity it stores and served with the
//! activity's log entry and the consignment's history.

use ed25519_dalek::SigningKey;
use serde_json::json;

use crate::documents::attest::compact_jws;
use crate::federation::did::KEY_FRAGMENT;

/// What one revision's attestation states.
pub struct Attested<'a> {
    /// The actor (organisation DID) that published the activity.
    pub actor: &'a str,
    pub activity_type: &'a str,
    /// SHA-256 of the activity as received.
    pub activity_hash: &'a str,
    /// The activity log entry (also the revision's id).
    pub entry_id: &'a str,
    /// `aig:<hex>`.
    pub consignment: &'a str,
    /// When the node applied it (RFC 3339).
    pub applied: &'a str,
}

pub struct Credentials {
    key: SigningKey,
    issuer: String,
}

impl Credentials {
    pub fn new(key: SigningKey, issuer: String) -> Self {
        Self { key, issuer }
    }

    /// The node's DID, the credential's issuer and the activity's generator.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn issue(&self, a: &Attested<'_>) -> String {
        let header = json!({
            "alg": "EdDSA",
            "typ": "JWT",
            "kid": format!("{}#{KEY_FRAGMENT}", self.issuer),
        });
        let claims = json!({
            "iss": self.issuer,
            "sub": a.actor,
            "jti": a.entry_id,
            "iat": chrono::Utc::now().timestamp(),
            "activityType": a.activity_type,
            "activityHash": a.activity_hash,
            "consignment": a.consignment,
            "applied": a.applied,
        });
        compact_jws(&self.key, &header, &claims)
    }
}
