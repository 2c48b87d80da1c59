//! Pre-signed download links: `{base}/supply-chain/data-space/blobs/{hex}?type=…&expires=…&signature=…`.
//!
//! The signature is an HMAC-SHA256, under a key only this node has, of the blob, the media
//! type the download is served with and the expiry; a link therefore needs no session, and
//! cannot be bent to another blob, another type or a later expiry.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use sha2::Sha256;

pub const PATH: &str = "/supply-chain/data-space/blobs";

pub struct Links {
    key: Vec<u8>,
    base: String,
}

/// Why a link was refused (all answered 403).
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    Unsigned,
    Expired,
    BadSignature,
}

impl Refused {
    pub fn message(&self) -> &'static str {
        match self {
            Refused::Unsigned => "a blob is served only through a signed link (expires, signature)",
            Refused::Expired => {
                "this download link has expired; read the document again for a new one"
            }
            Refused::BadSignature => "this download link's signature is not valid",
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Links {
    pub fn new(key: &[u8], base_url: &str) -> Self {
        Self {
            key: key.to_vec(),
            base: format!("{}{PATH}", base_url.trim_end_matches('/')),
        }
    }

    fn mac(&self, hex: &str, media_type: &str, expires: u64) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        mac.update(format!("{hex}\n{media_type}\n{expires}").as_bytes());
        mac
    }

    /// A link to blob `hex`, served as `media_type`, valid for `ttl`.
    pub fn sign(&self, hex: &str, media_type: &str, ttl: Duration) -> String {
        let expires = unix_now() + ttl.as_secs();
        let signature =
            URL_SAFE_NO_PAD.encode(self.mac(hex, media_type, expires).finalize().into_bytes());
        format!(
            "{}/{hex}?type={}&expires={expires}&signature={signature}",
            self.base,
            utf8_percent_encode(media_type, NON_ALPHANUMERIC)
        )
    }

    /// Checks a link's query parameters for blob `hex`.
    pub fn verify(
        &self,
        hex: &str,
        media_type: Option<&str>,
        expires: Option<&str>,
        signature: Option<&str>,
    ) -> Result<(), Refused> {
        let (Some(media_type), Some(expires), Some(signature)) = (media_type, expires, signature)
        else {
            return Err(Refused::Unsigned);
        };
        let expires: u64 = expires.parse().map_err(|_| Refused::BadSignature)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| Refused::BadSignature)?;
        // Checked before the expiry: an altered expiry is a forgery, not an old link.
        self.mac(hex, media_type, expires)
            .verify_slice(&signature)
            .map_err(|_| Refused::BadSignature)?;
        if expires < unix_now() {
            return Err(Refused::Expired);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(link: &str) -> Vec<(String, String)> {
        let url = url::Url::parse(link).unwrap();
        url.query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    fn get<'a>(p: &'a [(String, String)], k: &str) -> Option<&'a str> {
        p.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn signed_links_verify_and_resist_tampering() {
        let links = Links::new(b"k", "http://node.test/");
        let hex = "ab".repeat(32);
        let link = links.sign(&hex, "application/pdf", Duration::from_secs(60));
        assert!(link.starts_with(&format!(
            "http://node.test{PATH}/{hex}?type=application%2Fpdf&expires="
        )));
        let p = params(&link);
        let (t, e, s) = (get(&p, "type"), get(&p, "expires"), get(&p, "signature"));
        assert_eq!(links.verify(&hex, t, e, s), Ok(()));
        assert_eq!(
            links.verify(&"cd".repeat(32), t, e, s),
            Err(Refused::BadSignature)
        );
        assert_eq!(
            links.verify(&hex, Some("text/html"), e, s),
            Err(Refused::BadSignature)
        );
        let later = (e.unwrap().parse::<u64>().unwrap() + 1).to_string();
        assert_eq!(
            links.verify(&hex, t, Some(&later), s),
            Err(Refused::BadSignature)
        );
        assert_eq!(links.verify(&hex, t, e, None), Err(Refused::Unsigned));
        assert_eq!(
            Links::new(b"other", "http://node.test").verify(&hex, t, e, s),
            Err(Refused::BadSignature)
        );
        let old = links.sign(&hex, "application/pdf", Duration::ZERO);
        let p = params(&old);
        let expired_at = get(&p, "expires").unwrap().parse::<u64>().unwrap() - 1;
        let sig = URL_SAFE_NO_PAD.encode(
            links
                .mac(&hex, "application/pdf", expired_at)
                .finalize()
                .into_bytes(),
        );
        assert_eq!(
            links.verify(
                &hex,
                Some("application/pdf"),
                Some(&expired_at.to_string()),
                Some(&sig)
            ),
            Err(Refused::Expired)
        );
    }
}
