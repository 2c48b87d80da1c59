//! Pre-signed download links:
//! `{base}/supply-chain/data-space/blobs/{hex}?type=…&expires=…&org=…&signature=…`.
//!
//! The signature is an HMAC-SHA256, under a key only this node has, of the blob, the media
//! type the download is served with, the expiry and the organisation the link was handed to;
//! a link therefore needs no session, and cannot be bent to another blob, another type, a
//! later expiry or another organisation. The organisation is named so that the download can
//! ask whether it may still read the document (a grant revoked after the read ends the link).

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

/// What a verified link grants: a blob, to an organisation.
#[derive(Debug, PartialEq, Eq)]
pub struct Granted {
    pub org: String,
}

impl Refused {
    pub fn message(&self) -> &'static str {
        match self {
            Refused::Unsigned => {
                "a blob is served only through a signed link (type, expires, org, signature)"
            }
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

    fn mac(&self, hex: &str, media_type: &str, expires: u64, org: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        // As a JSON array: each field quoted and escaped, so no two links' fields make the same
        // text (joined by line breaks, a media type holding one could shift into the org).
        let fields = serde_json::json!([hex, media_type, expires, org]);
        mac.update(fields.to_string().as_bytes());
        mac
    }

    /// A link to blob `hex`, served as `media_type`, for organisation `org`, valid for `ttl`.
    pub fn sign(&self, hex: &str, media_type: &str, org: &str, ttl: Duration) -> String {
        let expires = unix_now() + ttl.as_secs();
        let signature = URL_SAFE_NO_PAD.encode(
            self.mac(hex, media_type, expires, org)
                .finalize()
                .into_bytes(),
        );
        format!(
            "{}/{hex}?type={}&expires={expires}&org={}&signature={signature}",
            self.base,
            utf8_percent_encode(media_type, NON_ALPHANUMERIC),
            utf8_percent_encode(org, NON_ALPHANUMERIC)
        )
    }

    /// Checks a link's query parameters for blob `hex`; on success, whom it was signed for
    /// (the caller still has to ask whether that organisation may read the blob).
    pub fn verify(
        &self,
        hex: &str,
        media_type: Option<&str>,
        expires: Option<&str>,
        org: Option<&str>,
        signature: Option<&str>,
    ) -> Result<Granted, Refused> {
        let (Some(media_type), Some(expires), Some(org), Some(signature)) =
            (media_type, expires, org, signature)
        else {
            return Err(Refused::Unsigned);
        };
        let expires: u64 = expires.parse().map_err(|_| Refused::BadSignature)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| Refused::BadSignature)?;
        // Checked before the expiry: an altered expiry is a forgery, not an old link.
        self.mac(hex, media_type, expires, org)
            .verify_slice(&signature)
            .map_err(|_| Refused::BadSignature)?;
        if expires < unix_now() {
            return Err(Refused::Expired);
        }
        Ok(Granted {
            org: org.to_owned(),
        })
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
        let org = "did:web:node.test%3A8080:org:a";
        let link = links.sign(&hex, "application/pdf", org, Duration::from_secs(60));
        assert!(link.starts_with(&format!(
            "http://node.test{PATH}/{hex}?type=application%2Fpdf&expires="
        )));
        let p = params(&link);
        let (t, e, o, s) = (
            get(&p, "type"),
            get(&p, "expires"),
            get(&p, "org"),
            get(&p, "signature"),
        );
        assert_eq!(o, Some(org), "the organisation comes back as signed");
        assert_eq!(
            links.verify(&hex, t, e, o, s),
            Ok(Granted { org: org.into() })
        );
        let bad = Err(Refused::BadSignature);
        assert_eq!(links.verify(&"cd".repeat(32), t, e, o, s), bad);
        assert_eq!(links.verify(&hex, Some("text/html"), e, o, s), bad);
        let later = (e.unwrap().parse::<u64>().unwrap() + 1).to_string();
        assert_eq!(links.verify(&hex, t, Some(&later), o, s), bad);
        // Handed on to another organisation, the link is not that organisation's.
        assert_eq!(
            links.verify(&hex, t, e, Some("did:web:node.test:org:b"), s),
            bad
        );
        // Fields shifted across a separator do not make another valid link.
        let odd = links.sign(&hex, "text/plain\nx", org, Duration::from_secs(60));
        let p = params(&odd);
        let (odd_e, odd_s) = (get(&p, "expires"), get(&p, "signature"));
        let shifted = format!("{org}\ntext/plain");
        assert!(links
            .verify(&hex, Some("text/plain\nx"), odd_e, Some(org), odd_s)
            .is_ok());
        assert_eq!(
            links.verify(&hex, Some("x"), odd_e, Some(&shifted), odd_s),
            bad
        );
        assert_eq!(links.verify(&hex, t, e, o, None), Err(Refused::Unsigned));
        assert_eq!(links.verify(&hex, t, e, None, s), Err(Refused::Unsigned));
        assert_eq!(
            Links::new(b"other", "http://node.test").verify(&hex, t, e, o, s),
            bad
        );
        let old = links.sign(&hex, "application/pdf", org, Duration::ZERO);
        let p = params(&old);
        let expired_at = get(&p, "expires").unwrap().parse::<u64>().unwrap() - 1;
        let sig = URL_SAFE_NO_PAD.encode(
            links
                .mac(&hex, "application/pdf", expired_at, org)
                .finalize()
                .into_bytes(),
        );
        assert_eq!(
            links.verify(
                &hex,
                Some("application/pdf"),
                Some(&expired_at.to_string()),
                Some(org),
                Some(&sig)
            ),
            Err(Refused::Expired)
        );
    }
}
