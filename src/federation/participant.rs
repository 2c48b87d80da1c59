//! Dataspace Protocol callers: a participant proves who it is with a self-issued ID token as
//! the Decentralized Claims Protocol 1.0 defines it (`specifications/base.protocol.md`): a JWT
//! with `iss` = `sub` = the participant's DID, `aud` = this node's DID, `jti`, `iat` and a
//! short `exp`, signed (EdDSA with an Ed25519 key, or ES256 with a P-256 one) by a key its DID
//! document lists under `capabilityInvocation`, chosen by `kid`. DID documents are fetched for partner hosts only (`--federation-partners`),
//! as for node tokens, and a `jti` is accepted once, before a restart too. The presentation
//! query of DCP (asking the participant's credential service for verifiable credentials) is
//! not made: what a participant may read is what the sharing policies grant its DID.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value;

use super::did;
use super::token::{fresh, LEEWAY_SECS};
use super::Federation;
use crate::error::{Error, Result};

#[derive(Debug, Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    iat: i64,
    exp: i64,
    jti: String,
}

fn rejected(why: &str) -> Error {
    Error::Unauthorized(format!("DSP token rejected: {why}"))
}

/// The verification method `kid` names in `doc`, if `capabilityInvocation` lists it; without
/// a `kid`, the only one listed there.
fn invocation_key(doc: &Value, kid: Option<&str>) -> Option<String> {
    let id = doc.get("id")?.as_str()?;
    let listed: Vec<String> = doc
        .get("capabilityInvocation")?
        .as_array()?
        .iter()
        .filter_map(|m| match m {
            Value::String(s) => Some(s.clone()),
            other => other.get("id")?.as_str().map(str::to_owned),
        })
        .map(|m| {
            if m.starts_with('#') {
                format!("{id}{m}")
            } else {
                m
            }
        })
        .collect();
    match kid {
        Some(kid) => {
            let kid = if kid.starts_with('#') {
                format!("{id}{kid}")
            } else {
                kid.to_owned()
            };
            listed.contains(&kid).then_some(kid)
        }
        None if listed.len() == 1 => listed.into_iter().next(),
        None => None,
    }
}

/// The key of verification method `kid` in `doc` for `alg`: an Ed25519 JWK for EdDSA, a
/// P-256 one for ES256.
fn decoding_key(doc: &Value, kid: &str, alg: Algorithm) -> Option<DecodingKey> {
    match alg {
        Algorithm::EdDSA => did::key_of(doc, kid).map(|k| DecodingKey::from_ed_der(k.as_bytes())),
        Algorithm::ES256 => {
            let jwk = doc
                .get("verificationMethod")?
                .as_array()?
                .iter()
                .find(|m| m.get("id").and_then(Value::as_str) == Some(kid))?
                .get("publicKeyJwk")?;
            if jwk.get("kty")?.as_str()? != "EC" || jwk.get("crv")?.as_str()? != "P-256" {
                return None;
            }
            let (x, y) = (jwk.get("x")?.as_str()?, jwk.get("y")?.as_str()?);
            DecodingKey::from_ec_components(x, y).ok()
        }
        _ => None,
    }
}

impl Federation {
    /// The DID of the participant whose self-issued ID token `authorization` carries (the raw
    /// JWT, or `Bearer <JWT>`: both are in use).
    pub async fn participant(&self, authorization: &str) -> Result<String> {
        let token = authorization
            .strip_prefix("Bearer ")
            .unwrap_or(authorization)
            .trim();
        let header = jsonwebtoken::decode_header(token).map_err(|_| rejected("malformed"))?;
        if !matches!(header.alg, Algorithm::EdDSA | Algorithm::ES256) {
            return Err(rejected("alg must be EdDSA or ES256"));
        }
        // Read before the signature is checked only to know whose key checks it.
        let unverified = jsonwebtoken::dangerous::insecure_decode::<Claims>(token)
            .map_err(|_| rejected("malformed claims"))?
            .claims;
        // Participants come from the hosts the operator listed: with `*`, any host could
        // call and be called back.
        if !self.resolver.lists_partners() {
            return Err(rejected(
                "participants need partner hosts listed one by one (--federation-partners)",
            ));
        }
        let issuer = unverified.iss;
        if !issuer.starts_with("did:web:") || unverified.sub != issuer {
            return Err(rejected("iss and sub must be the participant's did:web"));
        }
        let document = self.resolver.resolve(&issuer).await.map_err(|e| {
            tracing::warn!(participant = issuer, error = %e, "could not resolve a DSP participant");
            rejected("the participant's DID document could not be resolved")
        })?;
        let kid = invocation_key(&document, header.kid.as_deref())
            .ok_or_else(|| rejected("kid names no capabilityInvocation key of the participant"))?;
        let key = decoding_key(&document, &kid, header.alg)
            .ok_or_else(|| rejected("no key of that kid for that alg"))?;
        let mut validation = Validation::new(header.alg);
        validation.set_audience(&[self.identity.node_did()]);
        validation.set_issuer(&[&issuer]);
        validation.set_required_spec_claims(&["exp", "iat", "aud", "iss", "sub"]);
        validation.leeway = LEEWAY_SECS;
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| rejected(&e.to_string()))?
            .claims;
        let now = chrono::Utc::now().timestamp();
        fresh(claims.iat, claims.exp, &claims.jti, now).map_err(rejected)?;
        let replay_key = format!("dsp {issuer} {}", claims.jti);
        if !self.tokens.first_use(replay_key, claims.exp, now)? {
            return Err(rejected("replayed"));
        }
        Ok(claims.sub)
    }
}

impl Federation {
    /// `url` parsed, if the provider may call participant `participant` back there: on the
    /// host of its DID (a partner host), over HTTPS unless that host is allowed plain HTTP.
    /// A connector names its callback address; nothing else is ever called.
    pub fn callback_of(
        &self,
        participant: &str,
        url: &str,
    ) -> std::result::Result<url::Url, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        let host = match (parsed.host_str(), parsed.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            _ => return Err("no host".into()),
        };
        let own = did::host_of(participant).unwrap_or_default();
        let listed = self.resolver.lists_partners() && self.resolver.is_partner_host(&own);
        if host.to_ascii_lowercase() != own || !listed {
            return Err(format!("not on the participant's own host {own}"));
        }
        let http_ok = self.resolver.allow_http().contains(&own);
        match parsed.scheme() {
            "https" => Ok(parsed),
            "http" if http_ok => Ok(parsed),
            _ => Err("https only".into()),
        }
    }

    /// POSTs a protocol message to a participant's callback, with the node's own self-issued
    /// ID token (`iss` = `sub` = the node's DID, `aud` the participant). No redirects; the
    /// answer's body is not read.
    pub async fn call_back(
        &self,
        url: &url::Url,
        body: &Value,
        participant: &str,
    ) -> std::result::Result<(), String> {
        let node = self.identity.node_did();
        let token = self
            .tokens
            .issue(&node, participant)
            .map_err(|e| e.to_string())?;
        let response = self
            .client
            .post(url.clone())
            .header("authorization", format!("Bearer {token}"))
            .json(body)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("{url}: status {status}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_capability_invocation_keys_sign() {
        let doc = json!({
            "id": "did:web:c.example",
            "verificationMethod": [{"id": "did:web:c.example#a"}, {"id": "did:web:c.example#b"}],
            "capabilityInvocation": ["#a"],
            "authentication": ["did:web:c.example#b"],
        });
        let key = |kid| invocation_key(&doc, kid);
        assert_eq!(
            key(Some("did:web:c.example#a")).as_deref(),
            Some("did:web:c.example#a")
        );
        assert_eq!(key(Some("#a")).as_deref(), Some("did:web:c.example#a"));
        assert_eq!(key(None).as_deref(), Some("did:web:c.example#a"));
        assert_eq!(key(Some("did:web:c.example#b")), None);
        let mut two = doc.clone();
        two["capabilityInvocation"] = json!(["#a", {"id": "did:web:c.example#b"}]);
        assert_eq!(invocation_key(&two, None), None);
        assert!(invocation_key(&two, Some("#b")).is_some());
    }
}
