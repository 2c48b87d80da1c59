//! Argon2id password hashing. Each hash or verify costs ~45 ms of CPU, so it runs on the
//! blocking pool behind a semaphore sized to the cores: a burst of logins queues up instead of
//! starving the threads that serve everything else.

use std::sync::Arc;

use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::Argon2;
use tokio::sync::Semaphore;

use crate::error::{Error, Result};

pub struct Passwords {
    permits: Arc<Semaphore>,
    /// Verified against when the email is unknown, so both failures cost the same time.
    dummy_hash: String,
}

impl Passwords {
    pub fn new() -> Result<Self> {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(Self {
            permits: Arc::new(Semaphore::new(cores)),
            dummy_hash: hash_blocking("not-a-real-password-only-for-timing")?,
        })
    }

    pub async fn hash(&self, password: String) -> Result<String> {
        let _permit = self.permits.acquire().await.map_err(Error::internal)?;
        tokio::task::spawn_blocking(move || hash_blocking(&password)).await?
    }

    /// Verifies `password` against `hash`; with no hash (unknown account) it still does the
    /// same work and answers `false`.
    pub async fn verify(&self, password: String, hash: Option<String>) -> Result<bool> {
        let _permit = self.permits.acquire().await.map_err(Error::internal)?;
        let known = hash.is_some();
        let hash = hash.unwrap_or_else(|| self.dummy_hash.clone());
        let ok = tokio::task::spawn_blocking(move || {
            PasswordHash::new(&hash)
                .map(|parsed| {
                    Argon2::default()
                        .verify_password(password.as_bytes(), &parsed)
                        .is_ok()
                })
                .unwrap_or(false)
        })
        .await?;
        Ok(ok && known)
    }
}

fn hash_blocking(password: &str) -> Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| Error::internal(format!("argon2: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hash_verifies_only_the_right_password() {
        let p = Passwords::new().unwrap();
        let h = p.hash("correct horse".into()).await.unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(p
            .verify("correct horse".into(), Some(h.clone()))
            .await
            .unwrap());
        assert!(!p.verify("wrong horse".into(), Some(h)).await.unwrap());
        assert!(!p
            .verify("not-a-real-password-only-for-timing".into(), None)
            .await
            .unwrap());
    }
}
