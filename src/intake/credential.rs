//! The trust credential: the node's signed statement of which actor published which activity,
//! injected into every activity it stores.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

use crate::error::{Error, Result};

/// Signs the trust credential: the node attests which actor published which activity.
pub struct Credentials {
    key: EncodingKey,
    issuer: String,
}

impl Credentials {
    pub fn new(secret: &[u8], issuer: String) -> Self {
        Self {
            key: EncodingKey::from_secret(secret),
            issuer,
        }
    }

    /// The node's DID, the credential's issuer and the activity's generator.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn issue(&self, actor: &str, activity_hash: &str, entry_id: &str) -> Result<String> {
        let claims = json!({
            "iss": self.issuer,
            "sub": actor,
            "activityHash": activity_hash,
            "jti": entry_id,
            "iat": chrono::Utc::now().timestamp(),
        });
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.key)
            .map_err(|e| Error::internal(format!("credential: {e}")))
    }
}
