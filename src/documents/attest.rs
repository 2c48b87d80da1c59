//! Document attestations: the node signs `{documentId, documentRevision, integrity}` with its
//! Ed25519 key (a compact JWS, `alg` EdDSA), so that anyone holding the document can check it
//! was not altered since the node received it — with the public key alone.
//!
//! The key pair is generated on first start and kept in `<data-dir>/secrets/node-ed25519-key`.

use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use rand::RngCore;
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::secrets;

pub struct Attestor {
    key: SigningKey,
    issuer: String,
}

/// What an attestation states.
pub struct Claims<'a> {
    pub id: &'a str,
    pub document_id: &'a str,
    pub revision: i64,
    pub integrity: &'a str,
    pub issued: i64,
}

impl Attestor {
    pub fn load_or_create(secrets_dir: &Path, issuer: String) -> Result<Self> {
        let (seed, created) = secrets::load_or_create(secrets_dir, "node-ed25519-key", || {
            let mut seed = [0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut seed);
            URL_SAFE_NO_PAD.encode(seed)
        })?;
        let seed: [u8; 32] = URL_SAFE_NO_PAD
            .decode(seed.trim())
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| Error::internal("secrets/node-ed25519-key is not a 32-byte seed"))?;
        if created.is_some() {
            tracing::info!("generated the node's Ed25519 key pair");
        }
        Ok(Self {
            key: SigningKey::from_bytes(&seed),
            issuer,
        })
    }

    /// The node's Ed25519 key: it also signs the node's calls to other nodes.
    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }

    pub fn key_id(&self) -> String {
        format!("{}#attestation-key", self.issuer)
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The public key as a JWK (RFC 8037).
    pub fn public_jwk(&self) -> Value {
        json!({
            "kty": "OKP",
            "crv": "Ed25519",
            "x": URL_SAFE_NO_PAD.encode(self.key.verifying_key().to_bytes()),
            "kid": self.key_id(),
        })
    }

    /// The compact JWS of `claims`.
    pub fn sign(&self, claims: &Claims<'_>) -> String {
        let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": self.key_id()});
        let payload = json!({
            "iss": self.issuer,
            "jti": claims.id,
            "iat": claims.issued,
            "documentId": claims.document_id,
            "documentRevision": claims.revision,
            "integrity": claims.integrity,
        });
        compact_jws(&self.key, &header, &payload)
    }
}

/// `header.payload.signature`, each base64url without padding, signed with Ed25519 (RFC 8037).
pub fn compact_jws(key: &SigningKey, header: &Value, payload: &Value) -> String {
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(payload.to_string())
    );
    let signature = key.sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
}

/// The claims of a compact JWS this node issued (already trusted: read from the store).
pub use crate::store::activities::claims as payload;

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};

    #[test]
    fn attestations_verify_with_the_public_key_only_and_the_key_persists() {
        let dir = tempfile::tempdir().unwrap();
        let a = Attestor::load_or_create(dir.path(), "did:web:node.test".into()).unwrap();
        let jws = a.sign(&Claims {
            id: "abc",
            document_id: "INV-1",
            revision: 2,
            integrity: "sha256-xyz",
            issued: 1,
        });
        let jwk = a.public_jwk();
        let x: [u8; 32] = URL_SAFE_NO_PAD
            .decode(jwk["x"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let key = VerifyingKey::from_bytes(&x).unwrap();
        let (input, sig) = jws.rsplit_once('.').unwrap();
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(sig).unwrap()).unwrap();
        key.verify(input.as_bytes(), &sig).unwrap();
        let claims = payload(&jws).unwrap();
        assert_eq!(claims["documentRevision"], 2);
        assert_eq!(claims["integrity"], "sha256-xyz");
        let tampered = input.replacen('.', ".e30", 1);
        assert!(key.verify(tampered.as_bytes(), &sig).is_err());
        let again = Attestor::load_or_create(dir.path(), "did:web:node.test".into()).unwrap();
        assert_eq!(again.public_jwk(), jwk);
    }
}
