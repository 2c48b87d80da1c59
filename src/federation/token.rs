//! Node-to-node authentication: every call between nodes carries a short-lived EdDSA JWT the
//! calling node signs, naming itself (`iss`, its did:web), the organisation it acts for
//! (`sub`, one of its own), the receiving node (`aud`), a unique `jti` and an `exp` at most
//! [`MAX_LIFETIME_SECS`] after `iat`. The receiver checks the signature against the key in the
//! caller's resolved DID document, refuses a token issued ahead of its clock by more than the
//! leeway (it could be kept for later), and one whose `jti` it has already seen — before a
//! restart too (`seen`).

use std::path::Path;
use std::sync::Mutex;

use ed25519_dalek::pkcs8::EncodePrivateKey;
use ed25519_dalek::SigningKey;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use super::did::{self, Resolver};
use super::seen::Seen;
use crate::error::{Error, Result};

/// How long a token this node issues is valid.
const LIFETIME_SECS: i64 = 60;
/// The longest lifetime a received token may claim.
pub const MAX_LIFETIME_SECS: i64 = 300;
/// Clock difference tolerated between nodes (and with Dataspace Protocol participants).
pub(super) const LEEWAY_SECS: u64 = 30;

/// What a received token's times and id must be, whoever signed it: issued no later than the
/// clock allows, valid at most [`MAX_LIFETIME_SECS`], a `jti` of up to 200 characters without
/// spaces; else why not.
pub(super) fn fresh(
    iat: i64,
    exp: i64,
    jti: &str,
    now: i64,
) -> std::result::Result<(), &'static str> {
    if iat > now + LEEWAY_SECS as i64 {
        return Err("iat is ahead of this node's clock");
    }
    // Checked: an `iat` far in the past with an `exp` far ahead must not wrap around.
    let lifetime = exp.checked_sub(iat);
    if lifetime.is_none_or(|l| !(0..=MAX_LIFETIME_SECS).contains(&l)) {
        return Err("lifetime too long");
    }
    if jti.is_empty() || jti.len() > 200 || jti.contains(char::is_whitespace) {
        return Err("bad jti");
    }
    Ok(())
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub iat: i64,
    pub exp: i64,
    pub jti: String,
}

/// A verified caller: which node, acting for which of its organisations.
#[derive(Debug, Clone)]
pub struct NodeCaller {
    pub node: String,
    pub organization: String,
}

pub struct Tokens {
    node_did: String,
    key: EncodingKey,
    /// `jti`s seen, with their expiry, until they expire.
    seen: Mutex<Seen>,
}

fn rejected(why: &str) -> Error {
    Error::Unauthorized(format!("node token rejected: {why}"))
}

impl Tokens {
    pub fn new(node_did: String, key: &SigningKey) -> Result<Self> {
        let der = key.to_pkcs8_der().map_err(Error::internal)?;
        Ok(Self {
            node_did,
            key: EncodingKey::from_ed_der(der.as_bytes()),
            seen: Mutex::new(Seen::in_memory()),
        })
    }

    /// Keeps the seen `jti`s in the file `path` as well, so a restart forgets none.
    pub fn persist_in(&mut self, path: &Path) -> Result<()> {
        let now = chrono::Utc::now().timestamp();
        self.seen = Mutex::new(Seen::open(path, now, LEEWAY_SECS as i64)?);
        Ok(())
    }

    /// Records `key` (a token's issuer and `jti`) as used until `exp`: `false` when it was
    /// already, before a restart too.
    pub(super) fn first_use(&self, key: String, exp: i64, now: i64) -> Result<bool> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.insert(key, exp, now, LEEWAY_SECS as i64)
    }

    /// A token for a call to node `aud` on behalf of `organization` (one of this node's).
    pub fn issue(&self, organization: &str, aud: &str) -> Result<String> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            iss: self.node_did.clone(),
            sub: organization.to_owned(),
            aud: aud.to_owned(),
            iat: now,
            exp: now + LIFETIME_SECS,
            jti: uuid::Uuid::new_v4().to_string(),
        };
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(format!("{}#{}", self.node_did, did::KEY_FRAGMENT));
        jsonwebtoken::encode(&header, &claims, &self.key).map_err(Error::internal)
    }

    /// Checks a received token: signature by the key of the node it names (resolved), this
    /// node as audience, lifetime, an organisation of the calling node as subject, and a `jti`
    /// never seen before.
    pub async fn verify(&self, token: &str, resolver: &Resolver) -> Result<NodeCaller> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| rejected("malformed"))?;
        if header.alg != Algorithm::EdDSA {
            return Err(rejected("alg must be EdDSA"));
        }
        // The issuer is read before the signature is checked only to know whose key checks it.
        let unverified = jsonwebtoken::dangerous::insecure_decode::<Claims>(token)
            .map_err(|_| rejected("malformed claims"))?
            .claims;
        let issuer = unverified.iss;
        if !issuer.starts_with("did:web:") || did::node_of(&issuer).is_some() {
            return Err(rejected("iss must be a node's did:web"));
        }
        let kid = format!("{issuer}#{}", did::KEY_FRAGMENT);
        if header.kid.as_deref().is_some_and(|k| k != kid) {
            return Err(rejected("unknown kid"));
        }
        let document = resolver.resolve(&issuer).await.map_err(|e| {
            tracing::warn!(issuer, error = %e, "could not resolve a calling node's DID");
            rejected("the issuer's DID document could not be resolved")
        })?;
        let key = did::key_of(&document, &kid).ok_or_else(|| rejected("no such key"))?;
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.set_audience(&[&self.node_did]);
        validation.set_issuer(&[&issuer]);
        validation.set_required_spec_claims(&["exp", "iat", "aud", "iss", "sub"]);
        validation.leeway = LEEWAY_SECS;
        let claims = jsonwebtoken::decode::<Claims>(
            token,
            &DecodingKey::from_ed_der(key.as_bytes()),
            &validation,
        )
        .map_err(|e| rejected(&e.to_string()))?
        .claims;
        let now = chrono::Utc::now().timestamp();
        fresh(claims.iat, claims.exp, &claims.jti, now).map_err(rejected)?;
        if did::node_of(&claims.sub) != Some(issuer.as_str()) {
            return Err(rejected("sub must be an organisation of the calling node"));
        }
        let replay_key = format!("{issuer} {}", claims.jti);
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if !seen.insert(replay_key, claims.exp, now, LEEWAY_SECS as i64)? {
            return Err(rejected("replayed"));
        }
        drop(seen);
        Ok(NodeCaller {
            node: issuer,
            organization: claims.sub,
        })
    }
}
