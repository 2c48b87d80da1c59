//! Session tokens: HS256 JWTs signed with the node's persisted secret. Every other algorithm,
//! `none` included, is rejected.

use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    /// User DID.
    pub sub: String,
    /// Organisation DID.
    pub org: String,
    pub iat: i64,
    pub exp: i64,
    pub jti: String,
    /// The id of the API key the session was made with (`operator` for the operator's);
    /// revoking the key ends the session. Empty in sessions from before keys had ids.
    #[serde(default)]
    pub key: String,
    /// The user's session generation when it was issued (`accounts::people`).
    #[serde(default)]
    pub gen: u64,
    /// A console session (`POST /console/session`): it authenticates from its HttpOnly cookie
    /// without the key, which the console's sign-in checked and the session names (`key`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub con: bool,
}

pub struct Session {
    pub token: String,
    /// Milliseconds since the Unix epoch.
    pub expiry_ms: i64,
}

pub struct Sessions {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    lifetime: Duration,
}

impl Sessions {
    pub fn new(secret: &[u8], lifetime: Duration) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.validate_exp = true;
        validation.set_required_spec_claims(&["exp", "iat", "sub"]);
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            lifetime,
        }
    }

    /// A session of `user` of `org`, made with key `key` at the user's generation `gen`.
    pub fn issue(&self, user: &str, org: &str, key: &str, gen: u64) -> Result<Session> {
        self.issue_as(user, org, key, gen, false)
    }

    /// As `issue`; `console` marks a console session (`Claims::con`).
    pub fn issue_as(
        &self,
        user: &str,
        org: &str,
        key: &str,
        gen: u64,
        console: bool,
    ) -> Result<Session> {
        let now = chrono::Utc::now().timestamp();
        let exp = now + self.lifetime.as_secs() as i64;
        let claims = Claims {
            sub: user.to_owned(),
            org: org.to_owned(),
            iat: now,
            exp,
            jti: uuid::Uuid::new_v4().simple().to_string(),
            key: key.to_owned(),
            gen,
            con: console,
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|e| Error::internal(format!("jwt: {e}")))?;
        Ok(Session {
            token,
            expiry_ms: exp * 1000,
        })
    }

    pub fn verify(&self, token: &str) -> Result<Claims> {
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map(|data| data.claims)
            .map_err(|e| {
                use jsonwebtoken::errors::ErrorKind;
                Error::Unauthorized(match e.kind() {
                    ErrorKind::ExpiredSignature => "session expired".into(),
                    _ => "invalid session token".into(),
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;

    fn sessions() -> Sessions {
        Sessions::new(b"0123456789abcdef0123456789abcdef", Duration::from_secs(60))
    }

    #[test]
    fn issued_token_verifies_and_carries_claims() {
        let s = sessions();
        let session = s
            .issue("did:web:x:user:1", "did:web:x:org:1", "k", 3)
            .unwrap();
        let claims = s.verify(&session.token).unwrap();
        assert_eq!(claims.sub, "did:web:x:user:1");
        assert_eq!(claims.org, "did:web:x:org:1");
        assert_eq!(claims.exp * 1000, session.expiry_ms);
        assert_eq!((claims.key.as_str(), claims.gen), ("k", 3));
    }

    #[test]
    fn alg_none_and_other_secrets_are_rejected() {
        let s = sessions();
        let session = s.issue("u", "o", "k", 0).unwrap();
        let payload = session.token.split('.').nth(1).unwrap();
        let none_header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        assert!(s.verify(&format!("{none_header}.{payload}.")).is_err());
        let other = Sessions::new(b"another-secret-another-secret-xx", Duration::from_secs(60));
        assert!(s
            .verify(&other.issue("u", "o", "k", 0).unwrap().token)
            .is_err());
    }
}
